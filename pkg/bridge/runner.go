package bridge

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/jsonobj"
	"github.com/statuscheck/statuscheck/pkg/contract"
)

// EnvOperatorConditionName is the variable OLM sets in every container of
// a CSV's deployments to the name of its OperatorCondition, the CSV's
// name (operator-lifecycle-manager v0.46.0: pkg/controller/install/
// deployment.go, the install strategy's InjectEnvIntoDeployment, and
// pkg/controller/operators/operatorcondition_controller.go,
// ensureDeploymentEnvVars). OLM's Role for it
// (ensureOperatorConditionRole) grants get, update and patch on that one
// OperatorCondition and nothing else: the runner reads it by name,
// uncached, and never lists or watches it.
const EnvOperatorConditionName = "OPERATOR_CONDITION_NAME"

// syncTimeout bounds one sync's reads and writes.
const syncTimeout = 30 * time.Second

// Options configure a Runner.
type Options struct {
	// Source is the status source and Tokens its token types; Resource
	// the CR's resource and Namespaced its scope (source.Context has all
	// four).
	Source     *v1alpha1.StatusSource
	Tokens     contract.Tokens
	Resource   schema.GroupVersionResource
	Namespaced bool
	// Namespace is the operator's (the OperatorCondition's and, for a
	// namespaced kind without one of its own, the CR's).
	Namespace string
	// ConditionName is the OperatorCondition's name, OLM's
	// OPERATOR_CONDITION_NAME; "" means there is none (no OLM, OLM v1):
	// the runner says so once and stays idle.
	ConditionName string
	// Resync is how often the bridge decides without an event (default
	// 30s); a failed read or write is retried sooner.
	Resync time.Duration
	// Log is where the runner logs (logr; default: discard).
	Log logr.Logger
	// Registerer takes the metrics (default: controller-runtime's
	// registry, which a manager serves at /metrics).
	Registerer prometheus.Registerer
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Runner keeps the OperatorCondition's Upgradeable entry equal to the
// bridge's decision on the CR. It is a controller-runtime Runnable
// (manager.Add, or SetupWithManager), and statuscheck bridge runs it.
type Runner struct {
	opts    Options
	client  dynamic.Interface
	metrics *metrics
	ready   atomic.Bool
	mu      sync.Mutex
	request contract.Request
	kick    chan time.Time
}

var _ manager.Runnable = (*Runner)(nil)
var _ manager.LeaderElectionRunnable = (*Runner)(nil)

// New makes a Runner on a cluster.
func New(cfg *rest.Config, opts Options) (*Runner, error) {
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("bridge: %w", err)
	}
	return NewWithClient(c, opts)
}

// NewWithClient makes a Runner on a dynamic client.
func NewWithClient(c dynamic.Interface, opts Options) (*Runner, error) {
	if opts.Source == nil {
		return nil, errors.New("bridge: no status source")
	}
	if opts.Resync <= 0 {
		opts.Resync = 30 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Registerer == nil {
		opts.Registerer = ctrlmetrics.Registry
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	return &Runner{opts: opts, client: c, metrics: m, kick: make(chan time.Time, 1)}, nil
}

// SetupWithManager adds a bridge to an operator's own manager, on the
// manager's rest config; the manager's logger and metrics registry are
// used unless opts gives others.
func SetupWithManager(mgr manager.Manager, opts Options) (*Runner, error) {
	if opts.Log.GetSink() == nil {
		opts.Log = mgr.GetLogger().WithName("statuscheck-bridge")
	}
	r, err := New(mgr.GetConfig(), opts)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(r); err != nil {
		return nil, err
	}
	return r, nil
}

// NeedLeaderElection is false: the bridge runs in every replica (it
// writes only what it decides from what it read, so two agree).
func (r *Runner) NeedLeaderElection() bool { return false }

// Ready reports whether the runner has written (or found) the
// OperatorCondition's entry once; a readiness check.
func (r *Runner) Ready() bool { return r.ready.Load() }

// Start runs until ctx is done. It returns nil then: a missing cluster
// feature (no OLM, the CR's kind not served, RBAC) is logged and retried,
// never an error that stops the manager.
func (r *Runner) Start(ctx context.Context) error {
	log := r.opts.Log
	if r.opts.ConditionName == "" {
		log.Info("no OperatorCondition to write: " + EnvOperatorConditionName + " is not set (no OLM v0 here); idle")
		r.ready.Store(true)
		<-ctx.Done()
		return nil
	}
	log.Info("bridging", "source", r.opts.Source.Marshal(), "operatorCondition", r.opts.Namespace+"/"+r.opts.ConditionName)
	go r.watch(ctx, r.crResource(), fields.OneTermEqualSelector("metadata.name", r.opts.Source.Name).String())
	if r.opts.Source.Mode() == v1alpha1.HandshakeRequestAck {
		go r.watch(ctx, r.client.Resource(contract.CSVResource).Namespace(r.opts.Namespace), "")
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	var seen time.Time
	for {
		select {
		case <-ctx.Done():
			log.Info("stopped")
			return nil
		case seen = <-r.kick:
		case <-timer.C:
		}
		wait := r.opts.Resync
		// A sync that hangs (a half-open connection) is given up and
		// tried again.
		sctx, cancel := context.WithTimeout(ctx, syncTimeout)
		err := r.Sync(sctx, seen)
		cancel()
		if err != nil && ctx.Err() == nil {
			log.Error(err, "sync failed; retrying")
			r.metrics.errors.Inc()
			wait = min(wait, 2*time.Second)
		}
		seen = time.Time{}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
	}
}

func (r *Runner) crResource() dynamic.ResourceInterface {
	res := r.client.Resource(r.opts.Resource)
	if !r.opts.Namespaced {
		return res
	}
	ns := r.opts.Source.Namespace
	if ns == "" {
		ns = r.opts.Namespace
	}
	return res.Namespace(ns)
}

// watch kicks the loop on every event of a resource; a failed or closed
// watch is opened again after a pause.
func (r *Runner) watch(ctx context.Context, res dynamic.ResourceInterface, fieldSelector string) {
	for ctx.Err() == nil {
		w, err := res.Watch(ctx, metav1.ListOptions{FieldSelector: fieldSelector})
		if err != nil {
			r.opts.Log.V(1).Info("watch failed; retrying", "error", err.Error())
			select {
			case <-ctx.Done():
				return
			case <-time.After(2 * time.Second):
			}
			continue
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				break
			}
			select {
			case r.kick <- r.opts.Now():
			default:
			}
		}
		w.Stop()
	}
}

// Sync reads the CR, the OperatorCondition and (RequestAck) the CSVs
// afresh, decides, writes the request and then the entry, retrying the
// entry's write on a conflict with what it read again. seen is when the
// event that caused it arrived (zero for a resync), for the lag metric.
func (r *Runner) Sync(ctx context.Context, seen time.Time) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		err := r.syncOnce(ctx, seen)
		if apierrors.IsConflict(err) {
			r.metrics.conflicts.Inc()
		}
		return err
	})
}

func (r *Runner) syncOnce(ctx context.Context, seen time.Time) error {
	ocs := r.client.Resource(contract.OperatorConditionResource).Namespace(r.opts.Namespace)
	u, err := ocs.Get(ctx, r.opts.ConditionName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading OperatorCondition %s/%s: %w", r.opts.Namespace, r.opts.ConditionName, err)
	}
	oc := &operatorsv2.OperatorCondition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, oc); err != nil {
		return fmt.Errorf("decoding OperatorCondition %s: %w", r.opts.ConditionName, err)
	}
	cr, err := r.crResource().Get(ctx, r.opts.Source.Name, metav1.GetOptions{})
	switch {
	case objectNotFound(err, r.opts.Source.Name):
		cr = nil
	case err != nil:
		return fmt.Errorf("reading %s %s: %w", r.opts.Source.Kind, r.opts.Source.Name, err)
	}
	in := Input{Source: r.opts.Source, Tokens: r.opts.Tokens, CR: cr, OC: oc, Running: r.opts.ConditionName, Now: r.opts.Now()}
	if r.opts.Source.Mode() == v1alpha1.HandshakeRequestAck {
		list, err := r.client.Resource(contract.CSVResource).Namespace(r.opts.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing ClusterServiceVersions in %s: %w", r.opts.Namespace, err)
		}
		for _, item := range list.Items {
			var c operatorsv1alpha1.ClusterServiceVersion
			if runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &c) == nil {
				in.CSVs = append(in.CSVs, c)
			}
		}
		in.Request = r.standing(cr, Replacing(r.opts.ConditionName, in.CSVs) != "")
	}
	d := Decide(in)
	if d.Request != nil && cr != nil {
		patched, err := r.crResource().Patch(ctx, cr.GetName(), types.MergePatchType, []byte(jsonobj.Compact(d.Request.Patch)), metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("writing upgrade request %d to %s %s: %w", d.Request.State.Token, r.opts.Source.Kind, cr.GetName(), err)
		}
		st := d.Request.State
		st.Generation = patched.GetGeneration()
		r.setRequest(st)
		r.opts.Log.Info("requested the operator's answer", "token", st.Value, "generation", st.Generation)
		r.metrics.requests.Inc()
	}
	r.metrics.decisions.WithLabelValues(string(d.Condition.Status)).Inc()
	if !d.WriteOC {
		r.ready.Store(true)
		return nil
	}
	list := make([]interface{}, 0, len(d.Conditions))
	for _, c := range d.Conditions {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&c)
		if err != nil {
			return err
		}
		list = append(list, m)
	}
	if err := unstructured.SetNestedSlice(u.Object, list, "spec", "conditions"); err != nil {
		return err
	}
	if _, err := ocs.Update(ctx, u, metav1.UpdateOptions{FieldManager: "statuscheck-bridge"}); err != nil {
		return err // a conflict is retried by Sync with what it reads then
	}
	r.metrics.writes.WithLabelValues(string(d.Condition.Status)).Inc()
	if !seen.IsZero() {
		r.metrics.lag.Observe(r.opts.Now().Sub(seen).Seconds())
	}
	r.opts.Log.Info("wrote Upgradeable", "status", d.Condition.Status, "reason", d.Condition.Reason, "message", d.Condition.Message)
	r.ready.Store(true)
	return nil
}

// objectNotFound tells an object that does not exist (the CR absent:
// whenAbsent decides) from a resource the server does not serve (its CRD
// not installed), which is a 404 too but says nothing about the CR.
func objectNotFound(err error, name string) bool {
	var se apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &se) {
		return false
	}
	d := se.Status().Details
	return d != nil && d.Name == name
}

// standing is the bridge's request as it stands: withdrawn when no CSV
// replaces the running one any more; after a restart, the count goes on
// from the token the CR holds.
func (r *Runner) standing(cr *unstructured.Unstructured, upgrading bool) contract.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !upgrading {
		r.request.Standing = false
	}
	if !r.request.Standing && cr != nil {
		if n := tokenOf(cr, r.opts.Source); n > r.request.Token {
			r.request.Token = n
		}
	}
	return r.request
}

func (r *Runner) setRequest(st contract.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.request = st
}

// tokenOf reads the count of the last request written to the CR (0 when
// none, or when it is no count).
func tokenOf(cr *unstructured.Unstructured, src *v1alpha1.StatusSource) int64 {
	req := src.Request()
	if req == nil {
		return 0
	}
	text := cr.GetAnnotations()[req.Annotation]
	if req.SpecPath != "" {
		text, _ = contract.TokenAt(cr.Object, v1alpha1.FieldPath(req.SpecPath))
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

type metrics struct {
	decisions *prometheus.CounterVec
	writes    *prometheus.CounterVec
	conflicts prometheus.Counter
	errors    prometheus.Counter
	requests  prometheus.Counter
	lag       prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "statuscheck_bridge_decisions_total", Help: "Decisions on the status source, by the Upgradeable status decided."}, []string{"status"}),
		writes:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "statuscheck_bridge_operatorcondition_writes_total", Help: "Writes of the OperatorCondition's Upgradeable entry, by status."}, []string{"status"}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{Name: "statuscheck_bridge_conflicts_total", Help: "OperatorCondition writes that met a conflict and were decided again."}),
		errors:    prometheus.NewCounter(prometheus.CounterOpts{Name: "statuscheck_bridge_sync_errors_total", Help: "Syncs that failed (a read or write the cluster refused or did not answer)."}),
		requests:  prometheus.NewCounter(prometheus.CounterOpts{Name: "statuscheck_bridge_upgrade_requests_total", Help: "RequestAck requests written to the status-source CR."}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "statuscheck_bridge_write_lag_seconds", Help: "From an event of the CR (or a CSV) to the OperatorCondition write it caused.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
	}
	var err error
	if m.decisions, err = register(reg, m.decisions); err != nil {
		return nil, err
	}
	if m.writes, err = register(reg, m.writes); err != nil {
		return nil, err
	}
	if m.conflicts, err = register(reg, m.conflicts); err != nil {
		return nil, err
	}
	if m.errors, err = register(reg, m.errors); err != nil {
		return nil, err
	}
	if m.requests, err = register(reg, m.requests); err != nil {
		return nil, err
	}
	if m.lag, err = register(reg, m.lag); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or returns the collector already registered under
// its name (a second runner in one process counts into the same metrics).
func register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	switch {
	case err == nil:
		return c, nil
	case errors.As(err, &are):
		if existing, ok := are.ExistingCollector.(T); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("bridge metrics: %w", err)
}
