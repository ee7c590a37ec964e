package cli

import (
	gocontext "context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/bridge"
	"github.com/statuscheck/statuscheck/pkg/contract"
)

// serviceAccountNamespace is where a pod finds its namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

type bridgeFlags struct {
	clusterFlags
	sourceFlags
	namespace, conditionName string
	metricsAddr, probeAddr   string
	resync                   time.Duration
	verbosity                int
}

func (a *app) bridgeCommand() *cobra.Command {
	var f bridgeFlags
	cmd := &cobra.Command{
		Use:   "bridge",
		Short: "Write the OperatorCondition's Upgradeable from the status-source CR, on today's OLM",
		Long: `Bridge makes the status-source contract work on OLM v0, which reads only
the OperatorCondition: the operator writes its own CR's conditions, and the
bridge keeps the Upgradeable entry of the OperatorCondition's
spec.conditions equal to its decision on them (a fresh True is True; the
CR's False or Unknown the same, with its reason; an outdated condition
False; an absent CR whenAbsent; with a RequestAck handshake, False until a
CSV replaces the running one, then the request is written to the CR and
True only on the operator's fresh answer). Other entries, overrides and
status are left alone.

It runs as a sidecar in the operator's pod: the OperatorCondition's name is
OLM's OPERATOR_CONDITION_NAME, the namespace POD_NAMESPACE (else the
service account's), the cluster the in-cluster config (else --kubeconfig).
The status source is --bundle or --crd with --source, else the annotation of
the running CSV (the one named like the OperatorCondition). Without
OPERATOR_CONDITION_NAME (no OLM, OLM v1) it says so once and stays idle; a
missing kind or a refused read is logged and retried, never a crash. It
stops gracefully on SIGINT or SIGTERM.`,
		Example: `  statuscheck bridge                      # in the operator's pod, with OLM's environment
  statuscheck bridge --kubeconfig ~/.kube/config -n cool --operator-condition-name cool.v1 --bundle bundle/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.resync < 0 {
				return usagef("--resync cannot be negative (%s)", f.resync)
			}
			return a.runBridge(f)
		},
	}
	fl := cmd.Flags()
	f.clusterFlags.register(fl)
	fl.StringVarP(&f.namespace, "namespace", "n", "", "the operator's namespace (default: $POD_NAMESPACE, else the service account's, else the context's)")
	fl.StringVar(&f.conditionName, "operator-condition-name", "", "the OperatorCondition (default: $"+bridge.EnvOperatorConditionName+", which OLM sets)")
	f.sourceFlags.register(cmd)
	cmd.MarkFlagsRequiredTogether("crd", "source")
	fl.StringVar(&f.metricsAddr, "metrics-bind-address", ":8383", `where controller-runtime serves /metrics ("0": off)`)
	fl.StringVar(&f.probeAddr, "health-probe-bind-address", ":8384", `where /healthz and /readyz are served ("0": off)`)
	fl.DurationVar(&f.resync, "resync", 30*time.Second, "decide again this often without an event")
	fl.IntVar(&f.verbosity, "verbosity", 0, "log verbosity (klog's -v)")
	return cmd
}

func (a *app) runBridge(f bridgeFlags) error {
	log := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(a.stderr), textlogger.Verbosity(f.verbosity)))
	ctrl.SetLogger(log)
	cfg, ctxNS, err := restConfig(f.clusterFlags)
	if err != nil {
		return err
	}
	ns := firstOf(f.namespace, os.Getenv("POD_NAMESPACE"), readTrimmed(serviceAccountNamespace), ctxNS)
	if ns == "" {
		return usagef("no namespace: give -n, or set POD_NAMESPACE (the downward API's metadata.namespace)")
	}
	name := firstOf(f.conditionName, os.Getenv(bridge.EnvOperatorConditionName))
	opts := bridge.Options{Namespace: ns, ConditionName: name, Resync: f.resync, Log: log.WithName("bridge")}
	sctx, err := f.resolve()
	if err != nil {
		return err
	}
	fromCSV := sctx == nil && name != ""
	switch {
	case sctx != nil:
		opts.Source, opts.Tokens, opts.Namespaced, opts.Resource = sctx.Source, sctx.Tokens, sctx.Namespaced, sctx.GVR()
	case name == "":
		// No OLM: no running CSV to read the source from either; the
		// runner says so and idles.
		opts.Source = &v1alpha1.StatusSource{}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress: f.probeAddr,
		Logger:                 log,
	})
	if err != nil {
		return fmt.Errorf("bridge: starting the manager: %w", err)
	}
	var runner atomic.Pointer[bridge.Runner]
	if fromCSV {
		// The status source is the running CSV's annotation, read once the
		// cluster lets it be read: a sidecar never crash-loops over RBAC
		// not granted yet, an annotation or a CRD not there yet.
		err = mgr.Add(manager.RunnableFunc(func(ctx gocontext.Context) error {
			return runFromCSV(ctx, cfg, opts, &runner)
		}))
	} else {
		var r *bridge.Runner
		if r, err = bridge.SetupWithManager(mgr, opts); err == nil {
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

// runFromCSV reads the status source from the running CSV (retrying with
// a backoff from 1 s to 30 s, logging why, until ctx is done), then runs
// the bridge on it.
func runFromCSV(ctx gocontext.Context, cfg *rest.Config, opts bridge.Options, runner *atomic.Pointer[bridge.Runner]) error {
	wait := time.Second
	for {
		err := runningCSVSource(ctx, cfg, &opts)
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
	r, err := bridge.New(cfg, opts)
	if err != nil {
		return err
	}
	runner.Store(r)
	return r.Start(ctx)
}

// runningCSVSource reads the status source from the running CSV's
// annotation, with the kind's resource from discovery (the token types are
// then strings: the CRD is not read).
func runningCSVSource(ctx gocontext.Context, cfg *rest.Config, opts *bridge.Options) error {
	if opts.ConditionName == "" {
		return fmt.Errorf("no status source: give --bundle or --crd with --source, or run where OLM sets %s", bridge.EnvOperatorConditionName)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	csv, err := dyn.Resource(contract.CSVResource).Namespace(opts.Namespace).Get(ctx, opts.ConditionName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the running CSV %s/%s for its status-source annotation: %w", opts.Namespace, opts.ConditionName, err)
	}
	raw, ok := csv.GetAnnotations()[v1alpha1.AnnotationKey]
	if !ok {
		return fmt.Errorf("the running CSV %s declares no status source (%s)", opts.ConditionName, v1alpha1.AnnotationKey)
	}
	src, problems := contract.Parse(raw)
	if len(problems) > 0 {
		return fmt.Errorf("the running CSV %s: the status-source annotation is invalid: %s", opts.ConditionName, problems[0])
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	gv := src.GroupVersion()
	m, err := mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: src.Kind}, gv.Version)
	if err != nil {
		return fmt.Errorf("the cluster does not serve %s %s (is its CRD installed?): %w", src.Kind, src.APIVersion, err)
	}
	opts.Source, opts.Resource, opts.Namespaced = src, m.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace
	return nil
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
