package cluster

import (
	gocontext "context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/statuscheck/statuscheck/internal/cli"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/guard"
	"github.com/statuscheck/statuscheck/pkg/result"
	"github.com/statuscheck/statuscheck/pkg/source"
	"github.com/statuscheck/statuscheck/pkg/source/served"
)

type gateFlags struct {
	clusterFlags
	cli.SourceFlags
	namespace string
	timeout   time.Duration
	interval  time.Duration
	// operatorDeployment is NAMESPACE/NAME of the operator's Deployment.
	operatorDeployment string
}

func (a *app) gateCommand() *cobra.Command {
	var f gateFlags
	cmd := &cobra.Command{
		Use:   cli.ClusterCommand("gate").Use,
		Short: cli.ClusterCommand("gate").Short,
		Long: `Gate reads the operator's status-source CR on the cluster and decides, as
the contract's strict gate does, whether its upgrade may proceed: every
condition type of the status source True with an observedGeneration equal
to the CR's metadata.generation. It is the pre-upgrade check for an
operator deployed without OLM: a CI step before kubectl apply, or the
Helm pre-upgrade / Argo CD PreSync hook that generate --upgrade-hook writes.

The status source comes from a bundle directory or a CSV file (its
status-source annotation and its CRD), from --crd with --source, or from
--source alone (the kind's resource and scope are then discovered on the
cluster). With no kubeconfig (--kubeconfig, KUBECONFIG, ~/.kube/config)
it uses the pod's in-cluster credentials; it needs get on the CR (and on
the Deployment --operator-deployment names); discovery is open to every
authenticated user.

An admin forces the answer with the CR's annotation
statuscheck.operatorframework.io/upgradeable-override: "True" allows,
any other value holds. A CR that does not exist is judged by the status
source's whenAbsent (Allow by default).

--operator-deployment NAMESPACE/NAME tells a first install from an
upgrade: when the cluster answers that the status source's kind is not
served and that Deployment does not exist, nothing is installed yet and
the gate exits 0 (Argo CD runs PreSync hooks at the first sync, before
the CRD exists); it then needs get on that Deployment too. Without it,
with the Deployment there, or when discovery itself fails (a timeout, a
5xx), a kind that is not served is exit 2. The answer depends on the
name: a Deployment renamed by the new version reads as absent.

--timeout waits, as kubectl wait does, reading the CR every --interval
until it allows. It fails closed: only a fresh True, the override, a
missing CR under whenAbsent: Allow, or a first install as above exits 0.

Exit codes: 0 the upgrade may proceed; 1 it is held (the CR was read and
does not allow; its reason and message are printed); 2 the gate could not
decide (bad flags, no credentials, the CRD not served, the CR unreadable,
for example forbidden), the last attempt's error when --timeout ran out.`,
		Example: `  statuscheck gate bundle/ -n cool-system
  statuscheck gate --source cool.operators.corp/v1beta1/CoolOperator/cool-system/cool-operator --timeout 5m
  statuscheck gate --crd config/crd/bases --source cool.operators.corp/v1beta1/CoolOperator/cool-operator -n cool-system`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case f.CRDFile != "" && f.Source == "":
				return cli.Usagef("--crd goes with --source")
			case len(args) == 1 && (f.BundleDir != "" || f.CRDFile != "" || f.Source != ""):
				return cli.Usagef("gate takes the status source once: a bundle or CSV, or --bundle, or --source (with --crd)")
			case len(args) == 1:
				f.BundleDir = args[0]
			case f.BundleDir == "" && f.Source == "":
				return cli.Usagef("gate needs the status source: a bundle or CSV, or --source GROUP/VERSION/KIND[/NAMESPACE]/NAME (with --crd, or discovered on the cluster)")
			}
			if f.operatorDeployment != "" {
				ns, name, ok := strings.Cut(f.operatorDeployment, "/")
				if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
					return cli.Usagef("--operator-deployment takes NAMESPACE/NAME, not %q", f.operatorDeployment)
				}
				if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
					return cli.Usagef("--operator-deployment: namespace %q: %s", ns, strings.Join(errs, "; "))
				}
				if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
					return cli.Usagef("--operator-deployment: Deployment name %q: %s", name, strings.Join(errs, "; "))
				}
			}
			if f.timeout < 0 || f.interval <= 0 {
				return cli.Usagef("--timeout cannot be negative and --interval must be positive")
			}
			return a.runGate(f)
		},
	}
	fl := cmd.Flags()
	f.clusterFlags.register(fl)
	fl.StringVarP(&f.namespace, "namespace", "n", "", "the `NAMESPACE` of a namespaced CR (default: the status source's, else the context's, else the pod's)")
	f.SourceFlags.Register(cmd)
	fl.DurationVar(&f.timeout, "timeout", 0, "wait up to this `DURATION` for a fresh True (0: read once)")
	fl.DurationVar(&f.interval, "interval", 2*time.Second, "how often to read the CR while waiting (`DURATION`)")
	fl.StringVar(&f.operatorDeployment, "operator-deployment", "", "the operator's Deployment, `NAMESPACE/NAME`: while it does not exist and the status source's kind is not served, this is a first install and the gate allows")
	return cmd
}

// gateTarget is what the gate reads: the resolved source and its resource.
type gateTarget struct {
	sctx *source.Context
	res  dynamic.ResourceInterface
	desc string
}

func (a *app) runGate(f gateFlags) error {
	cfg, ctxNS, err := restConfig(f.clusterFlags)
	if err != nil {
		return err
	}
	cfg.WarningHandler = rest.NewWarningWriter(a.Stderr, rest.WarningWriterOptions{Deduplicate: true})
	cfg.Timeout = 30 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("connecting to the cluster: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("connecting to the cluster: %w", err)
	}
	var sctx *source.Context
	if f.BundleDir == "" && f.CRDFile == "" {
		src, err := source.ParseRef(f.Source)
		if err != nil {
			return err
		}
		// No CRD at hand: the kind's resource and scope come from the
		// cluster, when it is reachable (below, with the retries).
		sctx = &source.Context{Source: src, From: "--source " + f.Source}
	} else if sctx, err = f.Resolve(); err != nil {
		return err
	}
	src := *sctx.Source
	ns := f.namespace
	if src.Namespace != "" && ns != "" && ns != src.Namespace {
		return cli.Usagef("-n %s contradicts the status source's namespace %s", ns, src.Namespace)
	}
	if ns == "" {
		ns = src.Namespace
	}
	if ns == "" {
		ns = ctxNS
	}
	if ns == "" {
		ns = "default"
	}

	ctx, stop := signal.NotifyContext(gocontext.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	deadline := time.Now().Add(f.timeout)

	var tg *gateTarget
	attempt := func() (contract.Decision, string, error) {
		if tg == nil {
			c := sctx
			var err error
			if c.CRD == nil && c.Plural == "" {
				c, err = served.Resolve(dc, &src, sctx.From)
			} else {
				err = served.Check(dc, c)
			}
			// Only the cluster's own "not served" may make this a first
			// install; a discovery call that failed (a timeout, 429, 5xx)
			// is retried, and fails closed at the deadline.
			var notServed *served.NotServedError
			if errors.As(err, &notServed) {
				return firstInstall(ctx, a.Stderr, dyn, src.Kind+" "+src.Name, f.operatorDeployment, err)
			}
			if err != nil {
				return contract.Decision{}, src.Kind + " " + src.Name, err
			}
			s := *c.Source
			desc := s.Kind + " " + s.Name
			r := dynamic.NamespaceableResourceInterface(dyn.Resource(c.GVR()))
			var res dynamic.ResourceInterface = r
			if c.Namespaced {
				s.Namespace = ns
				res = r.Namespace(ns)
				desc = s.Kind + " " + ns + "/" + s.Name
			} else if src.Namespace != "" {
				return contract.Decision{}, "", fmt.Errorf("%s: %s is cluster-scoped, but the status source names namespace %s", sctx.From, s.Kind, src.Namespace)
			}
			cc := *c
			cc.Source = &s
			tg = &gateTarget{sctx: &cc, res: res, desc: desc}
		}
		u, err := tg.res.Get(ctx, tg.sctx.Source.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) && notFoundObject(err, tg.sctx.Source.Name):
			u = nil
		case err != nil:
			return contract.Decision{}, tg.desc, fmt.Errorf("reading %s: %w", tg.desc, err)
		}
		return guard.Decide(u, tg.sctx.Source), tg.desc, nil
	}
	for {
		d, desc, err := attempt()
		if err == nil && d.Verdict == contract.Allow {
			fmt.Fprintf(a.Stdout, "%s allows the upgrade: %s\n", desc, d.Reason)
			return nil
		}
		if ctx.Err() != nil || !time.Now().Add(f.interval).Before(deadline) {
			if err != nil {
				if f.timeout > 0 {
					return fmt.Errorf("gave up after --timeout %s: %w", f.timeout, err)
				}
				return err
			}
			waited := ""
			if f.timeout > 0 {
				waited = fmt.Sprintf(" (still, after --timeout %s)", f.timeout)
			}
			fmt.Fprintf(a.Stderr, "statuscheck: the upgrade is held%s: %s: %s\n", waited, desc, d.Reason)
			a.Exit(result.ExitFindings)
			return nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(f.interval):
		}
	}
}

// firstInstall decides when the status source's kind is not served
// (notServed says why): an install, not an upgrade, when the operator's
// Deployment ("NAMESPACE/NAME") is not there either, so nothing runs that
// could be held; otherwise, or when that cannot be read, notServed stands
// and the gate fails closed.
func firstInstall(ctx gocontext.Context, stderr io.Writer, dyn dynamic.Interface, cr, deployment string, notServed error) (contract.Decision, string, error) {
	if deployment == "" {
		return contract.Decision{}, "", notServed
	}
	ns, name, _ := strings.Cut(deployment, "/")
	desc := "Deployment " + deployment
	_, err := dyn.Resource(appsv1.SchemeGroupVersion.WithResource("deployments")).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		return contract.Decision{}, cr, fmt.Errorf("%w; %s exists, so this is an upgrade", notServed, desc)
	case apierrors.IsNotFound(err) && notFoundObject(err, name):
		fmt.Fprintf(stderr, "statuscheck: note: read as a first install because %s does not exist; if the operator's Deployment has another name, fix --operator-deployment: this gate holds nothing for it\n", desc)
		return contract.Decision{Verdict: contract.Allow, Reason: fmt.Sprintf("a first install: %s does not exist and %v", desc, notServed)}, cr, nil
	default:
		return contract.Decision{}, cr, fmt.Errorf("%w; reading %s: %w", notServed, desc, err)
	}
}

// notFoundObject tells a 404 for the object from one for its resource.
func notFoundObject(err error, name string) bool {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		return false
	}
	d := se.Status().Details
	return d != nil && d.Name == name
}
