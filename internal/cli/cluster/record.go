package cluster

import (
	gocontext "context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/statuscheck/statuscheck/internal/cli"
	"github.com/statuscheck/statuscheck/pkg/record"
	"github.com/statuscheck/statuscheck/pkg/report"
)

type recordFlags struct {
	clusterFlags
	cli.SourceFlags
	namespace string
	out       string
	duration  time.Duration
}

func (a *app) recordCommand() *cobra.Command {
	var f recordFlags
	cmd := &cobra.Command{
		Use:   cli.ClusterCommand("record").Use,
		Short: cli.ClusterCommand("record").Short,
		Long: `Record lists, then watches, the status-source CR on a cluster, the
OperatorCondition of the operator's running CSV and the namespace's
ClusterServiceVersions, and writes each change as a step of a StatusTrace,
flushed as it arrives: the real generation, resourceVersion and time, and
who wrote it (spec: the user, /status: the operator, a request path: OLM;
managedFields managers where they tell more).

OLM's own steps are inferred from the ClusterServiceVersions, where OLM's
gate sits: each change of a CSV whose spec.replaces names the running one
while it is Pending is a check; that CSV leaving Pending is the upgrade.
The running CSV entering Replacing is not an upgrade: OLM sets it as soon
as a replacement exists, before its gate has allowed anything.

It records until --duration has passed, or until SIGINT or SIGTERM, then
flushes and exits 0. A recording cut short (even by SIGKILL) replays up to
its last whole step.`,
		Example: `  statuscheck record --bundle bundle/ -n kubevirt-hyperconverged -o upgrade.trace.yaml
  statuscheck record --crd config/crd/bases/cool.yaml --source cool.operators.corp/v1beta1/CoolOperator/cool-operator --duration 10m
  statuscheck simulate --policy all upgrade.trace.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.BundleDir == "" && f.CRDFile == "" {
				return cli.Usagef("record needs the status source: --bundle, or --crd with --source")
			}
			if f.duration < 0 {
				return cli.Usagef("--duration cannot be negative (%s); 0 means until SIGINT or SIGTERM", f.duration)
			}
			return a.runRecord(f)
		},
	}
	fl := cmd.Flags()
	f.clusterFlags.register(fl)
	fl.StringVarP(&f.namespace, "namespace", "n", "", "the operator's `NAMESPACE`: its CSVs, OperatorCondition and (for a namespaced kind) the CR (default: the source's, else the context's)")
	f.SourceFlags.Register(cmd)
	fl.StringVarP(&f.out, "output", "o", "", "write the trace to `FILE` (default: stdout)")
	fl.DurationVar(&f.duration, "duration", 0, "stop after this `DURATION` (0: until SIGINT or SIGTERM)")
	cmd.MarkFlagsRequiredTogether("crd", "source")
	return cmd
}

// restConfig loads the kubeconfig as kubectl does: --kubeconfig, else
// $KUBECONFIG, else ~/.kube/config; --context and -n override it. It
// returns the context's namespace too.
func restConfig(f clusterFlags) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: f.kubeContext}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		if p := kubeconfigProblem(rules, f); p != nil {
			return nil, "", p
		}
		return nil, "", fmt.Errorf("loading the kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("loading the kubeconfig: %w", err)
	}
	return cfg, ns, nil
}

// kubeconfigProblem says what is wrong with the kubeconfig a run would
// use, naming the file and where it was named (--kubeconfig, KUBECONFIG,
// the default path): none exists, it is empty, it has no current context,
// or --context is not in it. nil when none of these is the trouble.
func kubeconfigProblem(rules *clientcmd.ClientConfigLoadingRules, f clusterFlags) error {
	// The files the loading rules read, as kubectl reads them.
	files, from := rules.GetLoadingPrecedence(), "the default path"
	switch {
	case f.kubeconfig != "":
		files, from = []string{f.kubeconfig}, "--kubeconfig"
	case os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != "":
		from = "KUBECONFIG"
	}
	var present []string
	for _, p := range files {
		if _, err := os.Stat(p); err == nil {
			present = append(present, p)
		}
	}
	names := strings.Join(files, string(filepath.ListSeparator))
	if len(present) == 0 {
		return fmt.Errorf("no kubeconfig: %s %s does not exist (pass --kubeconfig FILE, set KUBECONFIG, or create ~/.kube/config)", from, names)
	}
	loaded, err := rules.Load()
	if err != nil {
		return fmt.Errorf("reading the kubeconfig %s (from %s): %w", names, from, err)
	}
	var contexts []string
	for name := range loaded.Contexts {
		contexts = append(contexts, name)
	}
	sort.Strings(contexts)
	has := "it has no contexts"
	if len(contexts) > 0 {
		has = "it has " + strings.Join(contexts, ", ")
	}
	switch {
	case len(loaded.Contexts) == 0 && len(loaded.Clusters) == 0 && len(loaded.AuthInfos) == 0:
		return fmt.Errorf("the kubeconfig %s (from %s) is empty: no clusters, users or contexts", names, from)
	case f.kubeContext != "" && loaded.Contexts[f.kubeContext] == nil:
		return fmt.Errorf("--context %s is not in the kubeconfig %s (%s)", f.kubeContext, names, has)
	case f.kubeContext == "" && loaded.CurrentContext == "":
		return fmt.Errorf("the kubeconfig %s (from %s) has no current-context: pass --context NAME (%s)", names, from, has)
	case f.kubeContext == "" && loaded.Contexts[loaded.CurrentContext] == nil:
		return fmt.Errorf("the kubeconfig %s (from %s) names current-context %s, which it does not define (%s)", names, from, loaded.CurrentContext, has)
	}
	return nil
}

// outputDir checks at the start that -o can be written where it points:
// its directory exists and is a directory.
func outputDir(out string) error {
	if out == "" || out == "-" {
		return nil
	}
	dir := filepath.Dir(out)
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("-o %s: the directory %s does not exist", out, dir)
	case !st.IsDir():
		return fmt.Errorf("-o %s: %s is not a directory", out, dir)
	}
	return nil
}

func (a *app) runRecord(f recordFlags) error {
	if err := outputDir(f.out); err != nil {
		return err
	}
	sctx, err := f.Resolve()
	if err != nil {
		return err
	}
	src := *sctx.Source
	cfg, ctxNS, err := restConfig(f.clusterFlags)
	if err != nil {
		return err
	}
	// Warnings the server sends (deprecated versions, say) go to stderr
	// once each, not through klog.
	cfg.WarningHandler = rest.NewWarningWriter(a.Stderr, rest.WarningWriterOptions{Deduplicate: true})
	ns := f.namespace
	switch {
	case sctx.Namespaced && src.Namespace != "" && ns != "" && ns != src.Namespace:
		return cli.Usagef("-n %s contradicts the status source's namespace %s", ns, src.Namespace)
	case ns == "" && sctx.Namespaced && src.Namespace != "":
		ns = src.Namespace
	case ns == "":
		ns = ctxNS
	}
	if ns == "" {
		ns = "default"
	}
	if sctx.Namespaced {
		src.Namespace = ns
	}
	var out io.Writer = a.Stdout
	where := "stdout"
	if f.out != "" && f.out != "-" {
		lf := &lazyFile{path: f.out}
		defer lf.Close()
		out, where = lf, f.out
	}
	rec := record.New(record.Options{Source: &src, StatusSubresource: *sctx.StatusSubresource, Out: out, Server: cfg.Host})
	// SIGTERM or SIGINT stops the recording; the trace is flushed.
	ctx, stop := signal.NotifyContext(gocontext.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.duration > 0 {
		var cancel gocontext.CancelFunc
		ctx, cancel = gocontext.WithTimeout(ctx, f.duration)
		defer cancel()
	}
	tg := record.Target{Resource: sctx.GVR(),
		Namespaced: sctx.Namespaced, Namespace: ns}
	err = record.Run(ctx, cfg, tg, rec, func(format string, args ...interface{}) {
		fmt.Fprintf(a.Stderr, "statuscheck: note: "+format+"\n", args...)
	})
	var notServed *record.NotServedError
	if errors.As(err, &notServed) {
		// A 404: the CRD not installed, or no apiserver at all.
		if p := notAnAPIServer(gocontext.Background(), cfg); p != nil {
			err = p
		}
	}
	if err != nil {
		if rec.Steps > 0 {
			return fmt.Errorf("%w (the trace in %s holds the %s recorded before)", err, where, report.Plural(rec.Steps, "step", "steps"))
		}
		return err
	}
	fmt.Fprintf(a.Stderr, "statuscheck: recorded %s of %s %s to %s\n", report.Plural(rec.Steps, "step", "steps"), src.Kind, src.Name, where)
	return nil
}

// lazyFile is -o FILE, created by the first write: a recording that
// cannot start (the cluster unreachable, the watch forbidden) leaves no
// empty file behind, and does not truncate an older recording. Each
// Write goes to the file at once (no buffer), so a killed recorder
// leaves every step it wrote.
type lazyFile struct {
	path string
	f    *os.File
}

func (l *lazyFile) Write(p []byte) (int, error) {
	if l.f == nil {
		f, err := os.OpenFile(l.path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
		if err != nil {
			return 0, fmt.Errorf("opening -o %s: %w", l.path, err)
		}
		l.f = f
	}
	return l.f.Write(p)
}

func (l *lazyFile) Close() error {
	if l.f == nil {
		return nil
	}
	return l.f.Close()
}
