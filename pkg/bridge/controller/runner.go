// Package controller is the bridge's runner: a controller-runtime
// Runnable that reads the CR and the OperatorCondition from the cluster,
// asks package bridge's pure decision (bridge.Decide) what the
// OperatorCondition's Upgradeable entry must say, and writes it, with
// conflict retries, events, metrics on controller-runtime's registry and
// a withdrawal on stop (docs/bridge.md). It is apart from the decision so
// that what only decides (validate, simulate's explorer) does not link
// controller-runtime and client-go's clients.
package controller

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
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
	"github.com/statuscheck/statuscheck/pkg/bridge"
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

// DefaultResync is how often the bridge decides without an event: it
// cannot watch the OperatorCondition (OLM's Role grants get, update and
// patch on it only), so this bounds how long an OperatorCondition OLM made
// again, empty (which allows), goes without the bridge's entry. A sync is
// two reads (three under RequestAck, the CSVs as a table).
const DefaultResync = 10 * time.Second

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
	// DefaultResync); a failed read or write is retried sooner.
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
// (manager.Add, or SetupWithManager), and statuscheck bridge runs it. It
// keeps no state that matters: every sync reads the CR, the
// OperatorCondition and (RequestAck) the CSVs afresh, and the request is
// on the CR.
type Runner struct {
	opts    Options
	client  dynamic.Interface
	table   rest.Interface // nil: CSVs are listed whole
	metrics *metrics
	ready   atomic.Bool
	yield   atomic.Pointer[string]
	ocGone  atomic.Bool
	// wrote is set once this runner has written an entry: only then can
	// a stop that cannot read the OperatorCondition leave a True of its
	// own behind.
	wrote atomic.Bool
	kick  chan time.Time
}

var _ manager.Runnable = (*Runner)(nil)
var _ manager.LeaderElectionRunnable = (*Runner)(nil)

// New makes a Runner on a cluster.
func New(cfg *rest.Config, opts Options) (*Runner, error) {
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("bridge: %w", err)
	}
	r, err := NewWithClient(c, opts)
	if err != nil {
		return nil, err
	}
	if r.table, err = tableClient(cfg); err != nil {
		return nil, fmt.Errorf("bridge: %w", err)
	}
	return r, nil
}

// NewWithClient makes a Runner on a dynamic client. Without the rest
// config New has, it lists CSVs (RequestAck) as whole objects instead of
// the server's table of their names and replaces.
func NewWithClient(c dynamic.Interface, opts Options) (*Runner, error) {
	if opts.Source == nil {
		return nil, errors.New("bridge: no status source")
	}
	if opts.Resync <= 0 {
		opts.Resync = DefaultResync
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

// NeedLeaderElection is false: the bridge runs in every replica. They
// agree, because each decides on what it reads and the request is on the
// CR, written under the CR's resourceVersion (one request per replacing
// CSV whatever the number of replicas).
func (r *Runner) NeedLeaderElection() bool { return false }

// Ready reports whether the runner has written (or found) the
// OperatorCondition's entry once and does not yield to another writer.
func (r *Runner) Ready() bool { return r.Readiness() == nil }

// Readiness is the readiness check: nil once the entry is written (or
// found right), else why not.
func (r *Runner) Readiness() error {
	if w := r.yield.Load(); w != nil && *w != "" {
		return fmt.Errorf("another writer (%s) keeps the OperatorCondition's conditions: the bridge does not write", *w)
	}
	if !r.ready.Load() {
		return errors.New("the OperatorCondition's Upgradeable entry is not written yet")
	}
	return nil
}

// Start runs until ctx is done, then withdraws a True it wrote (Stopped)
// and returns nil. A missing cluster feature (no OLM, the CR's kind not
// served, RBAC) is logged and retried, never an error that stops the
// manager.
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
	failures := 0
	for {
		select {
		case <-ctx.Done():
			r.stop()
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
			failures++
			log.Error(err, "sync failed; retrying")
			r.metrics.errors.Inc()
			wait = min(wait, backoff(failures))
		} else {
			failures = 0
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

// backoff is the wait after n failures in a row: 1 s doubling to 30 s.
func backoff(n int) time.Duration {
	d := time.Second
	for i := 1; i < n && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}

// stopTimeout bounds the withdrawal on a graceful stop: well within the
// pod's default grace period (30 s), which controller-runtime's
// GracefulShutdownTimeout matches.
const stopTimeout = 5 * time.Second

// stop withdraws a True the bridge wrote: with nothing keeping the entry
// equal to the CR, the upgrade waits. Under RequestAck it is left alone
// while a CSV replaces the running one (the stop is then most likely OLM
// replacing this pod, past the gate: a False would hold a retried
// replacement that no bridge is left to release).
func (r *Runner) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	log := r.opts.Log
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, oc, err := r.readOC(ctx)
		if err != nil {
			return err
		}
		d, changed := bridge.Stopped(oc, r.opts.Now())
		if !changed {
			return nil
		}
		if r.opts.Source.Mode() == v1alpha1.HandshakeRequestAck {
			csvs, err := r.csvs(ctx)
			if err != nil {
				return err
			}
			if next := bridge.Replacing(r.opts.ConditionName, csvs); next != "" {
				log.Info("stopping while " + next + " replaces " + r.opts.ConditionName + ": the entry is left as it is")
				return nil
			}
		}
		if err := r.writeOC(ctx, u, d); err != nil {
			return err
		}
		r.metrics.upgradeable.Set(0)
		log.Info("withdrew Upgradeable=True on stopping", "reason", bridge.ReasonStopped)
		return nil
	})
	switch {
	case err == nil, apierrors.IsNotFound(err):
	case !r.wrote.Load():
		// Nothing this bridge wrote can stay behind.
		log.Info("stopping: this bridge wrote no entry, so it has nothing to withdraw (the OperatorCondition could not be read: " + err.Error() + ")")
	default:
		log.Error(err, "could not withdraw Upgradeable=True on stopping: it stays until the bridge runs again")
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
// watch is opened again after a pause that grows (1 s to 30 s) while
// watches keep failing.
func (r *Runner) watch(ctx context.Context, res dynamic.ResourceInterface, fieldSelector string) {
	failures := 0
	for ctx.Err() == nil {
		w, err := res.Watch(ctx, metav1.ListOptions{FieldSelector: fieldSelector})
		if err == nil {
			events := 0
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					break
				}
				events++
				select {
				case r.kick <- r.opts.Now():
				default:
				}
			}
			w.Stop()
			if events > 0 {
				failures = 0
			}
		} else {
			r.opts.Log.V(1).Info("watch failed; retrying", "error", err.Error())
		}
		failures++
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff(failures)):
		}
	}
}

// Sync reads the CR, the OperatorCondition and (RequestAck) the CSVs
// afresh, decides, writes the request and then the entry, retrying on a
// conflict with what it reads again. seen is when the event that caused
// it arrived (zero for a resync), for the lag metric.
func (r *Runner) Sync(ctx context.Context, seen time.Time) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		err := r.syncOnce(ctx, seen)
		if apierrors.IsConflict(err) {
			r.metrics.conflicts.Inc()
		}
		return err
	})
	if err == nil {
		r.metrics.lastSync.Set(float64(r.opts.Now().UnixNano()) / 1e9)
	}
	return err
}

func (r *Runner) readOC(ctx context.Context) (*unstructured.Unstructured, *operatorsv2.OperatorCondition, error) {
	u, err := r.client.Resource(contract.OperatorConditionResource).Namespace(r.opts.Namespace).Get(ctx, r.opts.ConditionName, metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("reading OperatorCondition %s/%s: %w", r.opts.Namespace, r.opts.ConditionName, err)
	}
	oc := &operatorsv2.OperatorCondition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, oc); err != nil {
		return nil, nil, fmt.Errorf("decoding OperatorCondition %s: %w", r.opts.ConditionName, err)
	}
	return u, oc, nil
}

// writeOC writes a decision's spec.conditions and the digest of its
// entry (AnnotationEntry) to the OperatorCondition u was read as.
func (r *Runner) writeOC(ctx context.Context, u *unstructured.Unstructured, d bridge.Decision) error {
	list := make([]interface{}, 0, len(d.Conditions))
	for i := range d.Conditions {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&d.Conditions[i])
		if err != nil {
			return err
		}
		list = append(list, m)
	}
	if err := unstructured.SetNestedSlice(u.Object, list, "spec", "conditions"); err != nil {
		return err
	}
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[bridge.AnnotationEntry] = d.Digest
	u.SetAnnotations(ann)
	_, err := r.client.Resource(contract.OperatorConditionResource).Namespace(r.opts.Namespace).Update(ctx, u, metav1.UpdateOptions{FieldManager: bridge.FieldManager})
	if err == nil {
		r.wrote.Store(true)
	}
	return err // a conflict is retried with what is read then
}

func (r *Runner) syncOnce(ctx context.Context, seen time.Time) error {
	log := r.opts.Log
	u, oc, err := r.readOC(ctx)
	switch {
	case apierrors.IsNotFound(err) && objectNotFound(errors.Unwrap(err), r.opts.ConditionName):
		// OLM deletes a replaced CSV's OperatorCondition with it (and its
		// generator makes a missing one again): said once, not an error.
		if !r.ocGone.Swap(true) {
			log.Info("the OperatorCondition is gone (its CSV replaced or deleted); waiting for it", "operatorCondition", r.opts.ConditionName)
		}
		return nil
	case err != nil:
		return err
	}
	r.ocGone.Store(false)
	cr, err := r.crResource().Get(ctx, r.opts.Source.Name, metav1.GetOptions{})
	switch {
	case objectNotFound(err, r.opts.Source.Name):
		cr = nil
	case err != nil:
		err = fmt.Errorf("reading %s %s: %w", r.opts.Source.Kind, r.opts.Source.Name, err)
		// Fail closed: no True stays that nothing can check.
		if d, changed := bridge.Unreadable(oc, err, r.opts.Now()); changed {
			if werr := r.writeOC(ctx, u, d); werr != nil {
				return errors.Join(err, werr)
			}
			r.metrics.upgradeable.Set(0)
			r.metrics.writes.WithLabelValues(string(d.Condition.Status)).Inc()
			log.Info("wrote Upgradeable", "status", d.Condition.Status, "reason", d.Condition.Reason, "message", d.Condition.Message)
		}
		return err
	}
	in := bridge.Input{Source: r.opts.Source, Tokens: r.opts.Tokens, CR: cr, OC: oc, Running: r.opts.ConditionName, Now: r.opts.Now()}
	if r.opts.Source.Mode() == v1alpha1.HandshakeRequestAck {
		if in.CSVs, err = r.csvs(ctx); err != nil {
			return err
		}
	}
	d := bridge.Decide(in)
	r.setYield(d.Yield, oc)
	if d.Yield != "" {
		r.metrics.upgradeable.Set(-1)
		return nil
	}
	r.metrics.decisions.WithLabelValues(string(d.Condition.Status)).Inc()
	if d.Condition.Status == metav1.ConditionTrue {
		r.metrics.upgradeable.Set(1)
	} else {
		r.metrics.upgradeable.Set(0)
	}
	// The entry first: with a request to write it is False, and a request
	// the cluster refuses (a webhook, RBAC) must not leave a True behind.
	if d.WriteOC {
		if err := r.writeOC(ctx, u, d); err != nil {
			return err
		}
	}
	if d.Request != nil && cr != nil {
		// Under the CR's resourceVersion: a conflict means another replica
		// or writer was first, and the sync decides again on what it reads.
		if _, err := r.crResource().Patch(ctx, cr.GetName(), types.MergePatchType, []byte(jsonobj.Compact(d.Request.Patch)), metav1.PatchOptions{FieldManager: bridge.FieldManager}); err != nil {
			return fmt.Errorf("writing upgrade request %d to %s %s: %w", d.Request.Record.Token, r.opts.Source.Kind, cr.GetName(), err)
		}
		if d.Request.Withdraw {
			log.Info("withdrew the upgrade request: no CSV replaces the running one", "token", d.Request.Record.Token)
		} else {
			log.Info("requested the operator's answer", "token", d.Request.Record.Token, "for", d.Request.Record.CSV, "generation", d.Request.Record.Generation)
			r.metrics.requests.Inc()
		}
	}
	if !d.WriteOC {
		r.ready.Store(true)
		return nil
	}
	r.metrics.writes.WithLabelValues(string(d.Condition.Status)).Inc()
	if !seen.IsZero() {
		r.metrics.lag.Observe(r.opts.Now().Sub(seen).Seconds())
	}
	log.Info("wrote Upgradeable", "status", d.Condition.Status, "reason", d.Condition.Reason, "message", d.Condition.Message)
	r.ready.Store(true)
	return nil
}

// setYield records another writer (or none), saying so once when it
// changes: a log line, an Event on the OperatorCondition (best effort:
// OLM's Role does not grant events), the other-writer gauge and /readyz.
func (r *Runner) setYield(w string, oc *operatorsv2.OperatorCondition) {
	old := r.yield.Swap(&w)
	if old != nil && *old == w {
		return
	}
	if w == "" {
		r.metrics.otherWriter.Set(0)
		if old != nil && *old != "" {
			r.opts.Log.Info("no other writer keeps the OperatorCondition's conditions any more: bridging again")
		}
		return
	}
	r.metrics.otherWriter.Set(1)
	msg := fmt.Sprintf("%s also writes OperatorCondition %s's spec.conditions (managedFields): the bridge does not write, the entry is %s's; remove the operator's own OperatorCondition writes, or the bridge", w, oc.Name, w)
	r.opts.Log.Info(msg, "otherWriter", w)
	r.event(oc, "OtherWriter", msg)
}

// event records a Warning Event on the OperatorCondition, best effort.
func (r *Runner) event(oc *operatorsv2.OperatorCondition, reason, msg string) {
	now := metav1.NewTime(r.opts.Now())
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: oc.Name + ".", Namespace: r.opts.Namespace},
		InvolvedObject: corev1.ObjectReference{APIVersion: operatorsv2.GroupVersion.String(), Kind: "OperatorCondition", Name: oc.Name, Namespace: oc.Namespace, UID: oc.UID},
		Reason:         reason, Message: msg, Type: corev1.EventTypeWarning, FirstTimestamp: now, LastTimestamp: now, Count: 1,
		Source: corev1.EventSource{Component: bridge.FieldManager},
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ev)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion("v1")
	u.SetKind("Event")
	if _, err := r.client.Resource(corev1.SchemeGroupVersion.WithResource("events")).Namespace(r.opts.Namespace).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		r.opts.Log.V(1).Info("could not record an Event", "error", err.Error())
	}
}

// csvs lists the namespace's CSVs as far as Replacing needs them. With the
// server's table (name and replaces, no bodies: an AllNamespaces install's
// namespace holds many large CSVs) only a candidate's object is read,
// for what IsCopied reads.
func (r *Runner) csvs(ctx context.Context) ([]operatorsv1alpha1.ClusterServiceVersion, error) {
	res := r.client.Resource(contract.CSVResource).Namespace(r.opts.Namespace)
	if r.table == nil {
		list, err := res.List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing ClusterServiceVersions in %s: %w", r.opts.Namespace, err)
		}
		return decodeCSVs(list.Items), nil
	}
	rows, err := replacesTable(ctx, r.table, r.opts.Namespace)
	if err != nil {
		return nil, fmt.Errorf("listing ClusterServiceVersions in %s: %w", r.opts.Namespace, err)
	}
	var out []operatorsv1alpha1.ClusterServiceVersion
	for name, replaces := range rows {
		if replaces != r.opts.ConditionName || name == replaces {
			continue
		}
		list, err := res.List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		if err != nil {
			return nil, fmt.Errorf("reading ClusterServiceVersion %s/%s: %w", r.opts.Namespace, name, err)
		}
		out = append(out, decodeCSVs(list.Items)...)
	}
	return out, nil
}

func decodeCSVs(items []unstructured.Unstructured) []operatorsv1alpha1.ClusterServiceVersion {
	var out []operatorsv1alpha1.ClusterServiceVersion
	for _, item := range items {
		var c operatorsv1alpha1.ClusterServiceVersion
		if runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &c) == nil {
			out = append(out, c)
		}
	}
	return out
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

type metrics struct {
	decisions *prometheus.CounterVec
	writes    *prometheus.CounterVec
	conflicts prometheus.Counter
	errors    prometheus.Counter
	requests  prometheus.Counter
	lag       prometheus.Histogram
	// upgradeable is the entry the bridge keeps: 1 True, 0 False, -1
	// another writer's; lastSync the time of the last good sync;
	// otherWriter 1 while another writer keeps the conditions.
	upgradeable prometheus.Gauge
	lastSync    prometheus.Gauge
	otherWriter prometheus.Gauge
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
		upgradeable: prometheus.NewGauge(prometheus.GaugeOpts{Name: "statuscheck_bridge_upgradeable", Help: "The OperatorCondition's Upgradeable entry the bridge keeps: 1 True, 0 False, -1 left to another writer."}),
		lastSync:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "statuscheck_bridge_last_sync_timestamp_seconds", Help: "When the bridge last read and decided without an error (Unix time)."}),
		otherWriter: prometheus.NewGauge(prometheus.GaugeOpts{Name: "statuscheck_bridge_other_writer", Help: "1 while another field manager keeps the OperatorCondition's spec.conditions and the bridge does not write."}),
	}
	var err error
	for _, g := range []*prometheus.Gauge{&m.upgradeable, &m.lastSync, &m.otherWriter} {
		if *g, err = register(reg, *g); err != nil {
			return nil, err
		}
	}
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
