package cluster

import (
	gocontext "context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/cli"
	"github.com/statuscheck/statuscheck/pkg/bridge/controller"
	"github.com/statuscheck/statuscheck/pkg/bridge/sidecar"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/source"
	"github.com/statuscheck/statuscheck/pkg/source/served"
)

// bridgeQPS and bridgeBurst are the bridge's client-side request limit.
const (
	bridgeQPS   = 50
	bridgeBurst = 100
)

// serviceAccountNamespace is where a pod finds its namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

type bridgeFlags struct {
	clusterFlags
	cli.SourceFlags
	namespace, conditionName string
	metricsAddr, probeAddr   string
	metricsSecure            bool
	resync                   time.Duration
	verbosity                int
}

func (a *app) bridgeCommand() *cobra.Command {
	var f bridgeFlags
	cmd := &cobra.Command{
		Use:   cli.ClusterCommand("bridge").Use,
		Short: cli.ClusterCommand("bridge").Short,
		Long: `Bridge makes the status-source contract work on OLM v0, which reads only
the OperatorCondition: the operator writes its own CR's conditions, and the
bridge keeps the Upgradeable entry of the OperatorCondition's
spec.conditions equal to its decision on them. It fails closed: True only
where the contract's gate allows on what it just read (every gated
condition a fresh True; an absent CR with whenAbsent Allow; under
RequestAck the operator's fresh True answer to the request, which the
bridge writes to the CR and reads back from it on every sync), False with
the CR's reason everywhere else (Unknown too, which OLM would let
through). Other entries, overrides and status are left alone; duplicate
Upgradeable entries are folded into one. Where another field manager
writes the OperatorCondition's conditions it writes nothing and says so
(log, Event, metric, /readyz). On SIGTERM it withdraws a True it wrote.

It runs as a sidecar in the operator's pod: the OperatorCondition's name is
OLM's OPERATOR_CONDITION_NAME, the namespace POD_NAMESPACE (else the
service account's), the cluster the in-cluster config (else --kubeconfig).
The status source is --bundle or --crd with --source, else
$` + sidecar.EnvStatusSource + ` (the pod's copy of the CSV's annotation, from the
downward API), else the annotation of the running CSV (the one named like
the OperatorCondition); without a CRD, the handshake token's type comes
from the schema the cluster serves (OpenAPI v3 discovery). Without
OPERATOR_CONDITION_NAME (no OLM, OLM v1) it says so once and stays idle; a
missing kind or a refused read is logged and retried, never a crash. It
stops gracefully on SIGINT or SIGTERM.`,
		Example: `  statuscheck bridge                      # in the operator's pod, with OLM's environment
  statuscheck bridge --kubeconfig ~/.kube/config -n cool --operator-condition-name cool.v1 --bundle bundle/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.resync < 0 {
				return cli.Usagef("--resync cannot be negative (%s)", f.resync)
			}
			return a.runBridge(f)
		},
	}
	fl := cmd.Flags()
	f.clusterFlags.register(fl)
	fl.StringVarP(&f.namespace, "namespace", "n", "", "the operator's `NAMESPACE` (default: $POD_NAMESPACE, else the service account's, else the context's)")
	fl.StringVar(&f.conditionName, "operator-condition-name", "", "the OperatorCondition's `NAME` (default: $"+controller.EnvOperatorConditionName+", which OLM sets)")
	f.SourceFlags.Register(cmd)
	cmd.MarkFlagsRequiredTogether("crd", "source")
	fl.StringVar(&f.metricsAddr, "metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", sidecar.MetricsPort), "the `ADDR` where controller-runtime serves /metrics (\"0\": off); localhost unless asked")
	fl.BoolVar(&f.metricsSecure, sidecar.FlagMetricsSecure, false, "serve /metrics over HTTPS, only to clients the apiserver authenticates and authorizes for it (controller-runtime's filter: needs create on tokenreviews and subjectaccessreviews)")
	fl.StringVar(&f.probeAddr, "health-probe-bind-address", fmt.Sprintf(":%d", sidecar.ProbePort), "the `ADDR` where /healthz and /readyz are served (\"0\": off)")
	fl.DurationVar(&f.resync, "resync", controller.DefaultResync, "decide again after this `DURATION` without an event (it bounds how long an OperatorCondition OLM made again goes without the entry)")
	fl.IntVar(&f.verbosity, "verbosity", 0, "log verbosity `N` (klog's -v)")
	return cmd
}

func (a *app) runBridge(f bridgeFlags) error {
	log := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(a.Stderr), textlogger.Verbosity(f.verbosity)))
	ctrl.SetLogger(log)
	cfg, ctxNS, err := restConfig(f.clusterFlags)
	if err != nil {
		return err
	}
	// client-go's default client-side limit (5 requests a second, bursts
	// of 10) delays a decision (a sync is two reads and a write) by 600 ms
	// once a few CR events come in a row: measured on real OLM with the
	// sidecar as a container (TestBridgeContainerAsOLMDeploysIt). The
	// bridge's requests are bounded by the CR's events and the resync.
	if cfg.QPS == 0 && cfg.Burst == 0 {
		cfg.QPS, cfg.Burst = bridgeQPS, bridgeBurst
	}
	ns := firstOf(f.namespace, os.Getenv("POD_NAMESPACE"), readTrimmed(serviceAccountNamespace), ctxNS)
	if ns == "" {
		return cli.Usagef("no namespace: give -n, or set POD_NAMESPACE (the downward API's metadata.namespace)")
	}
	name := firstOf(f.conditionName, os.Getenv(controller.EnvOperatorConditionName))
	opts := controller.Options{Namespace: ns, ConditionName: name, Resync: f.resync, Log: log.WithName("bridge")}
	sctx, err := f.Resolve()
	if err != nil {
		return err
	}
	fromCluster := sctx == nil && name != ""
	switch {
	case sctx != nil:
		sourceOptions(&opts, sctx)
	case name == "":
		// No OLM: no running CSV to read the source from either; the
		// runner says so and idles.
		opts.Source = &v1alpha1.StatusSource{}
	}
	metrics := metricsserver.Options{BindAddress: f.metricsAddr}
	if f.metricsSecure {
		metrics.SecureServing, metrics.FilterProvider = true, filters.WithAuthenticationAndAuthorization
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Metrics:                metrics,
		HealthProbeBindAddress: f.probeAddr,
		Logger:                 log,
	})
	if err != nil {
		return fmt.Errorf("bridge: starting the manager: %w", err)
	}
	var runner atomic.Pointer[controller.Runner]
	if fromCluster {
		// The status source is the pod's copy of the CSV's annotation, or
		// the running CSV's, resolved once the cluster lets it be: a
		// sidecar never crash-loops over RBAC not granted yet, an
		// annotation, a CRD or its schema not there yet.
		annotation := os.Getenv(sidecar.EnvStatusSource)
		err = mgr.Add(manager.RunnableFunc(func(ctx gocontext.Context) error {
			return runFromCluster(ctx, cfg, annotation, opts, &runner)
		}))
	} else {
		var r *controller.Runner
		if r, err = controller.SetupWithManager(mgr, opts); err == nil {
			runner.Store(r)
		}
	}
	if err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("bridge", func(*http.Request) error {
		if r := runner.Load(); r == nil || !r.Ready() {
			return fmt.Errorf("the OperatorCondition's Upgradeable entry is not written yet")
		}
		return nil
	}); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}

// runFromCluster resolves the status source from the cluster (retrying
// with a backoff from 1 s to 30 s, logging why, until ctx is done), then
// runs the bridge on it. Nothing is written before it is resolved.
func runFromCluster(ctx gocontext.Context, cfg *rest.Config, annotation string, opts controller.Options, runner *atomic.Pointer[controller.Runner]) error {
	wait := time.Second
	for {
		err := clusterSource(ctx, cfg, annotation, &opts)
		if err == nil {
			break
		}
		opts.Log.Error(err, "cannot read the status source yet; retrying", "in", wait.String())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, 30*time.Second)
	}
	r, err := controller.New(cfg, opts)
	if err != nil {
		return err
	}
	runner.Store(r)
	return r.Start(ctx)
}

// clusterSource resolves the status source without a CRD: the annotation
// (the pod's copy, else the running CSV's), its kind's resource and scope
// from discovery, and its token types from the schema the cluster serves
// (served.Tokens: never a guess).
func clusterSource(ctx gocontext.Context, cfg *rest.Config, annotation string, opts *controller.Options) (err error) {
	defer func() {
		// A 404 (the running CSV, the kind's discovery): the CRD not
		// installed, or no apiserver at all.
		if apierrors.IsNotFound(err) {
			if p := notAnAPIServer(ctx, cfg); p != nil {
				err = p
			}
		}
	}()
	from := "$" + sidecar.EnvStatusSource
	if annotation == "" {
		var err error
		if annotation, err = runningCSVAnnotation(ctx, cfg, opts); err != nil {
			return err
		}
		from = "the running CSV " + opts.ConditionName
	}
	src, problems := contract.Parse(annotation)
	if len(problems) > 0 {
		return fmt.Errorf("%s: the status-source annotation is invalid: %s", from, problems[0])
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating a discovery client: %w", err)
	}
	sctx, err := served.Resolve(dc, src, from)
	if err != nil {
		return err
	}
	sourceOptions(opts, sctx)
	opts.Log.Info("read the status source", "from", from, "statusSource", annotation)
	return nil
}

// runningCSVAnnotation reads the status-source annotation of the running
// CSV, for a bridge run without $STATUSCHECK_STATUS_SOURCE.
func runningCSVAnnotation(ctx gocontext.Context, cfg *rest.Config, opts *controller.Options) (string, error) {
	if opts.ConditionName == "" {
		return "", fmt.Errorf("no status source: give --bundle or --crd with --source, or run where OLM sets %s", controller.EnvOperatorConditionName)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return "", fmt.Errorf("creating a client: %w", err)
	}
	csv, err := dyn.Resource(contract.CSVResource).Namespace(opts.Namespace).Get(ctx, opts.ConditionName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading the running CSV %s/%s for its status-source annotation ($%s is not set): %w", opts.Namespace, opts.ConditionName, sidecar.EnvStatusSource, err)
	}
	raw, ok := csv.GetAnnotations()[v1alpha1.AnnotationKey]
	if !ok {
		return "", fmt.Errorf("the running CSV %s declares no status source (%s)", opts.ConditionName, v1alpha1.AnnotationKey)
	}
	return raw, nil
}

// sourceOptions gives the runner a resolved status source.
func sourceOptions(opts *controller.Options, sctx *source.Context) {
	opts.Source, opts.Tokens, opts.Namespaced, opts.Resource = sctx.Source, sctx.Tokens, sctx.Namespaced, sctx.GVR()
}

func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

func readTrimmed(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}
