package cli

import (
	"bytes"
	gocontext "context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/bridge/sidecar"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/explore"
	"github.com/statuscheck/statuscheck/pkg/report"
	"github.com/statuscheck/statuscheck/pkg/result"
	"github.com/statuscheck/statuscheck/pkg/simulate"
	"github.com/statuscheck/statuscheck/pkg/source"
	"github.com/statuscheck/statuscheck/pkg/trace"
)

type simulateFlags struct {
	SourceFlags
	policy, format, output *enumFlag
	failOn                 *enumFlag
	explore                bool
	bridge                 bool
	faults                 string
	startUp                bool
	depth                  int
	timeout                time.Duration
	counterexamples        string
}

func (a *app) simulateCommand() *cobra.Command {
	f := simulateFlags{
		policy: newEnum("olm", "olm", "strict", "naive", "all"),
		format: newEnum("auto", "auto", "trace", "snapshots", "audit").named("FORMAT"),
		output: newEnum("text", "text", "json", "html"),
		failOn: newEnum("error", "error", "warning", "info"),
	}
	cmd := &cobra.Command{
		Use:   "simulate TRACE | simulate --explore",
		Short: "Replay a recorded generation/condition sequence under OLM's gate",
		Long: `Simulate replays a trace of the status-source CR and reports every moment
an upgrade would have been approved on outdated or wrong information.

TRACE is a native StatusTrace (YAML), a stream of snapshots of the CR
(kubectl get -w -o json or -o yaml, with or without --output-watch-events),
or a Kubernetes audit log (audit.k8s.io/v1 Event JSON lines at
RequestResponse level). Snapshots and audit events are diffed into steps;
having no OLM steps, they are judged as if OLM checked after every change.

The status source and the CRD's generation rules come from --bundle, or from
--crd and --source for operators deployed without OLM, or from the trace.

Policies (docs/contract.md, "Gate policies"): olm is the check OLM makes
on the OperatorCondition, applied to the CR; strict allows only a fresh
True; naive ignores observedGeneration, as old OLM releases did. A replay with
--policy all shows them side by side, and its exit code comes from the
gates that ship, olm and strict (the contract's own): naive is the
historical gate, its violations are shown, marked so, and do not set the
exit code. --policy naive alone exits 1 on its violations.

Every verdict in the timeline says why (text: the WHY column; html: under
the verdict; json: "timeline", each step's verdicts with policy and
reason), and each violation comes with its rule's remediation.

With --explore there is no TRACE: simulate builds a model of three actors
from the status source and its handshake (a user changing the spec, an
operator that migrates on some changes and defers once it has answered a
request, OLM requesting, checking and replacing in separate steps) and
searches every interleaving breadth-first up to --depth, reporting each
violation once with its shortest trace. --write-counterexamples writes
those as StatusTraces that simulate replays to the same violation. With
--bridge, or a --bundle whose CSV declares the bridge (annotation
statuscheck.operatorframework.io/bridge), statuscheck bridge writes the
OperatorCondition and OLM reads it; --faults adds what can go wrong
around the bridge: the operator reporting Unknown on start-up (unknown), a
second bridge replica (replica), a bridge restart (restart), GitOps putting
the CR back (revert), the CR deleted and made again (recreate), the
operator writing its own OperatorCondition (other-writer), a duplicate
Upgradeable entry (duplicate), the bridge stopping (stop), or all.`,
		Example: `  statuscheck simulate testdata/traces/seed.yaml --policy all
  statuscheck simulate --bundle bundle/ recorded.json
  statuscheck simulate --crd config/crd/bases/cool.yaml --source cool.operators.corp/v1beta1/CoolOperator/cool-operator audit.log
  statuscheck simulate -o html testdata/traces/seed.yaml > timeline.html
  statuscheck simulate --explore --bundle testdata/bundles/handshake/request-spec --policy all
  statuscheck simulate --explore --bridge --faults all --bundle testdata/bundles/handshake/request-spec`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.explore {
				if f.depth < 1 {
					return Usagef("--depth must be at least 1, not %d", f.depth)
				}
				if f.timeout < 0 {
					return Usagef("--timeout cannot be negative (%s); 0 means no limit", f.timeout)
				}
				if len(args) != 0 {
					return Usagef("--explore takes no TRACE: it builds the traces itself")
				}
				if f.BundleDir == "" && (f.CRDFile == "" || f.Source == "") {
					return Usagef("--explore needs the status source: --bundle, or --crd with --source")
				}
				if f.output.value == "html" {
					return Usagef("--explore writes text or json")
				}
				faults, err := explore.ParseFaults(f.faults)
				if err != nil {
					return Usagef("--faults: %v", err)
				}
				if faults != 0 && !f.bridge && f.BundleDir == "" {
					return Usagef("--faults are the bridge's: they go with --bridge")
				}
				code, err := a.runExplore(f, faults)
				if err != nil {
					return err
				}
				a.code = code
				return nil
			}
			if len(args) != 1 {
				return Usagef("simulate needs a TRACE (or --explore)")
			}
			if f.Source != "" && f.CRDFile == "" {
				return Usagef("--source needs --crd: the CRD of the object it names")
			}
			if cmd.Flags().Changed("depth") || f.counterexamples != "" || cmd.Flags().Changed("timeout") || cmd.Flags().Changed("faults") || f.startUp {
				return Usagef("--depth, --timeout, --faults, --start-up and --write-counterexamples go with --explore")
			}
			code, err := a.runSimulate(args[0], f)
			if err != nil {
				return err
			}
			a.code = code
			return nil
		},
	}
	fl := cmd.Flags()
	f.SourceFlags.Register(cmd)
	fl.Var(f.policy, "policy", "gate policy: olm, strict, naive (the historical gate) or all (side by side; the exit code from olm and strict)")
	fl.Var(f.format, "format", "trace format: auto, trace, snapshots or audit")
	fl.VarP(f.output, "output", "o", "output: text (a timeline), json or html (html for a replay; --explore writes text or json)")
	fl.Var(f.failOn, "fail-on", "lowest severity that makes the exit code 1: error, warning or info")
	fl.BoolVar(&f.explore, "explore", false, "search every interleaving of the lock protocol instead of replaying a trace")
	fl.BoolVar(&f.bridge, "bridge", false, "statuscheck bridge writes the OperatorCondition and OLM reads it (today's OLM; a trace can say so itself with bridge: true)")
	fl.StringVar(&f.faults, "faults", "", "--explore --bridge: `FAULTS`, what can go wrong around the bridge, comma-separated: "+strings.Join(explore.FaultNames(), ", ")+", or all")
	fl.BoolVar(&f.startUp, "start-up", false, "--explore --bridge: start in the start-up window, where OLM has made the running version's OperatorCondition empty and its bridge has not written yet")
	fl.IntVar(&f.depth, "depth", explore.DefaultDepth, "--explore: `N`, the most steps a trace may take")
	fl.DurationVar(&f.timeout, "timeout", 0, "--explore: stop after this `DURATION` (0: no limit), reporting what was found")
	fl.StringVar(&f.counterexamples, "write-counterexamples", "", "--explore: write each violation's shortest trace into the directory `DIR`")
	return cmd
}

func policies(name string) ([]contract.Policy, contract.Policy) {
	if name == "all" {
		return contract.Policies(), contract.PolicyOLM
	}
	p := contract.Policy(name)
	return []contract.Policy{p}, p
}

// replayHint is the "Replay with --crd PATH" a trace's header comment
// asks for (the example traces whose steps depend on the apiserver's
// pruning and defaulting), "" when it asks for nothing.
func replayHint(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, 4096)
	n, _ := io.ReadFull(f, head)
	var text []string
	for _, line := range strings.Split(string(head[:n]), "\n") {
		c, ok := strings.CutPrefix(line, "#")
		if !ok {
			break // the header ends with the first line that is not a comment
		}
		text = append(text, strings.TrimSpace(c))
	}
	_, after, ok := strings.Cut(strings.Join(text, " "), "Replay with --crd ")
	if !ok {
		return ""
	}
	return strings.TrimSuffix(strings.Fields(after)[0], ".")
}

func (a *app) runSimulate(path string, f simulateFlags) (int, error) {
	var ctx *source.Context
	var err error
	if crd := replayHint(path); crd != "" && f.CRDFile == "" && f.BundleDir == "" {
		// Without the CRD the apiserver's pruning and defaulting, which
		// the trace's steps depend on, are not applied: the replay would
		// report violations the trace does not have.
		return 0, Usagef("%s needs --crd %s (its header says so: the apiserver's pruning and defaulting decide its steps)", path, crd)
	}
	if f.CRDFile != "" && f.Source == "" {
		// --crd alone: the trace's own statusSource names the object.
		if ctx, err = declaredContext(path, f); err != nil {
			return 0, err
		}
	} else if ctx, err = f.Resolve(); err != nil {
		return 0, err
	}
	opts := trace.OpenOptions{Format: trace.Format(f.format.value), Limits: trace.DefaultLimits}
	if ctx != nil {
		opts.Source, opts.Plural, opts.StatusSubresource = ctx.Source, ctx.Plural, ctx.StatusSubresource
	}
	t, err := trace.Open(path, opts)
	if err != nil {
		return 0, err
	}
	defer t.Close()
	// A live stream (kubectl get -w ... | statuscheck simulate -) ends
	// with SIGINT or SIGTERM: stop reading, and judge what was read.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-sigs:
			t.Stop()
		case <-done:
		}
	}()
	pols, primary := policies(f.policy.value)
	cfg, notes, err := simulate.NewConfig(ctx, t, pols, primary)
	if err != nil {
		return 0, err
	}
	cfg.Bridge = cfg.Bridge || f.bridge
	failOn, _ := result.ParseSeverity(f.failOn.value)
	var sum *simulate.Summary
	switch f.output.value {
	case "json":
		// The per-step verdicts are spooled to a temporary file and
		// written into the document once the replay is whole.
		spool, err := os.CreateTemp("", "statuscheck-verdicts-*")
		if err != nil {
			return 0, fmt.Errorf("spooling the verdicts: %w", err)
		}
		defer os.Remove(spool.Name())
		defer spool.Close()
		steps := report.NewJSONSteps(spool, cfg.Policies)
		sum, err = simulate.Replay(t, cfg, steps.Row)
		if err == nil {
			sum.Notes = notes
			err = report.SimulationJSON(a.stdout, sum, steps)
		}
		if err != nil {
			return 0, err
		}
	case "html":
		rows := &report.HTMLRows{}
		sum, err = simulate.Replay(t, cfg, rows.Add)
		if err == nil {
			sum.Notes = notes
			err = report.SimulationHTML(a.stdout, sum, rows)
		}
	default:
		// A file's timeline is spooled to a temporary file and shown once
		// the replay is whole, so an exit 2 leaves stdout empty and the
		// columns fit; a live stream (-) shows each row as it comes.
		var spool io.ReadWriteSeeker
		if path != "-" {
			f, err := os.CreateTemp("", "statuscheck-timeline-*")
			if err != nil {
				return 0, fmt.Errorf("spooling the timeline: %w", err)
			}
			defer os.Remove(f.Name())
			defer f.Close()
			spool = f
		}
		head := simulate.NewSummary(t, cfg)
		head.Notes = notes
		tl := report.NewTimeline(a.stdout, head, spool)
		sum, err = simulate.Replay(t, cfg, tl.Row)
		if err == nil {
			err = tl.Close(sum)
		}
	}
	if err != nil {
		return 0, err
	}
	for _, n := range notes {
		if f.output.value != "text" {
			fmt.Fprintf(a.stderr, "statuscheck: note: %s\n", n)
		}
	}
	if t.Stopped() {
		fmt.Fprintf(a.stderr, "statuscheck: stopped by a signal after %s; the verdicts above are for those\n", report.Plural(sum.Steps, "step", "steps"))
	}
	return sum.ExitCode(failOn), nil
}

// declaredContext resolves --crd without --source from the status source
// a StatusTrace declares (its statusSource:), reading the trace's header
// once; the trace is then opened again with that context.
func declaredContext(path string, f simulateFlags) (*source.Context, error) {
	const need = "--crd needs --source GROUP/VERSION/KIND/NAME"
	if path == "-" {
		return nil, Usagef("%s when the trace is read from stdin", need)
	}
	t, err := trace.Open(path, trace.OpenOptions{Format: trace.Format(f.format.value), Limits: trace.DefaultLimits})
	if err != nil {
		return nil, err
	}
	declared := t.Declared
	t.Close()
	if declared == nil {
		return nil, Usagef("%s: %s declares no statusSource", need, path)
	}
	return source.FromCRDFor(f.CRDFile, declared, "the trace's statusSource")
}

type exploreJSON struct {
	Source            string `json:"source"`
	StatusSubresource bool   `json:"statusSubresource"`
	Bridge            bool   `json:"bridge,omitempty"`
	// BridgeFrom says who put the bridge in the model: "bundle" (the
	// CSV declares it, sidecar.AnnotationKey) or "--bridge".
	BridgeFrom string   `json:"bridgeFrom,omitempty"`
	Faults     []string `json:"faults,omitempty"`
	// StartUp: the traces start in the start-up window (--start-up).
	StartUp bool                `json:"startUp,omitempty"`
	Results []exploreResultJSON `json:"results"`
}

type exploreResultJSON struct {
	Policy          string                       `json:"policy"`
	SpecChange      explore.SpecChange           `json:"specChange"`
	States          int                          `json:"states"`
	Depth           int                          `json:"depth"`
	Exhausted       bool                         `json:"exhausted"`
	Stopped         bool                         `json:"stopped,omitempty"`
	ElapsedMillis   int64                        `json:"elapsedMillis"`
	Counterexamples []explore.CounterexampleJSON `json:"counterexamples"`
}

// The bridge's origins in --explore's output (exploreJSON.BridgeFrom).
const (
	bridgeFromBundle = "bundle"
	bridgeFromFlag   = "--bridge"
)

// runExplore runs the search under each policy and prints the whole
// output once every search has succeeded: a run that ends in an error
// (exit 2) leaves stdout empty, never half a result (issue 27, item 7).
func (a *app) runExplore(f simulateFlags, faults explore.Faults) (int, error) {
	sctx, err := f.Resolve()
	if err != nil {
		return 0, err
	}
	failOn, _ := result.ParseSeverity(f.failOn.value)
	pols, primary := policies(f.policy.value)
	out := exploreJSON{Source: sctx.Source.Marshal(), StatusSubresource: *sctx.StatusSubresource}
	// The bridge the bundle declares is modelled without the flag
	// (simulate.ContextConfig); --bridge adds it where the bundle has none.
	switch {
	case sctx.Bridge != nil:
		out.Bridge, out.BridgeFrom = true, bridgeFromBundle
	case f.bridge:
		out.Bridge, out.BridgeFrom = true, bridgeFromFlag
	}
	if faults != 0 && !out.Bridge {
		return 0, Usagef("--faults are the bridge's: they go with --bridge (%s declares none)", sctx.From)
	}
	if faults != 0 {
		out.Faults = faults.List()
	}
	if f.startUp && !out.Bridge {
		return 0, Usagef("--start-up is the bridge's start-up window: it goes with --bridge (%s declares none)", sctx.From)
	}
	out.StartUp = f.startUp
	var text bytes.Buffer
	if f.output.value == "text" {
		fmt.Fprintf(&text, "explore: %s\nstatus subresource: %s; depth limit %d\n", out.Source,
			map[bool]string{true: "on", false: "off"}[out.StatusSubresource], f.depth)
		switch out.BridgeFrom {
		case bridgeFromBundle:
			fmt.Fprintf(&text, "bridge: declared by the bundle (%s: %s); statuscheck bridge writes the OperatorCondition and OLM reads it\n", sidecar.AnnotationKey, sctx.Bridge)
		case bridgeFromFlag:
			fmt.Fprintf(&text, "bridge: --bridge; statuscheck bridge writes the OperatorCondition and OLM reads it\n")
		}
		if faults != 0 {
			fmt.Fprintf(&text, "bridge faults: %s\n", strings.ReplaceAll(faults.String(), ",", ", "))
		}
		if f.startUp {
			fmt.Fprintf(&text, "start-up window: the traces start before the bridge's first entry, on the empty OperatorCondition OLM made\n")
		}
	}
	code := result.ExitOK
	for _, p := range pols {
		cfg := simulate.ContextConfig(sctx, []contract.Policy{p}, p)
		cfg.Bridge = out.Bridge
		ctx := gocontext.Background()
		if f.timeout > 0 {
			var cancel gocontext.CancelFunc
			ctx, cancel = gocontext.WithTimeout(ctx, f.timeout)
			defer cancel()
		}
		res, err := explore.Run(ctx, cfg, explore.Options{Depth: f.depth, Progress: a.progress(string(p)), Example: sctx.Example, Faults: faults, StartUp: f.startUp})
		a.clearProgress()
		if err != nil {
			switch out.BridgeFrom {
			case bridgeFromBundle:
				return 0, fmt.Errorf("%s, whose CSV declares the bridge (%s: %s): %w", sctx.From, sidecar.AnnotationKey, sctx.Bridge, err)
			case bridgeFromFlag:
				return 0, fmt.Errorf("%s with --bridge: %w", sctx.From, err)
			}
			return 0, fmt.Errorf("%s: %w", sctx.From, err)
		}
		var files []string
		if f.counterexamples != "" {
			if files, err = explore.WriteCounterexamples(f.counterexamples, cfg, res); err != nil {
				return 0, err
			}
		}
		rj := exploreResultJSON{Policy: string(p), SpecChange: res.Change, States: res.States, Depth: res.Depth, Exhausted: res.Exhausted, Stopped: res.Stopped,
			ElapsedMillis: res.Elapsed.Milliseconds(), Counterexamples: []explore.CounterexampleJSON{}}
		for i, c := range res.Counterexamples {
			cj := explore.CounterexampleJSON{Violation: c.Violation}
			for _, st := range c.Steps {
				cj.Steps = append(cj.Steps, trace.StepJSON(st))
			}
			if i < len(files) {
				cj.File = files[i]
			}
			// As in a replay (issue 27, item 6): under --policy all the
			// historical gate's violations are shown, not in the exit code.
			if simulate.Historical(p, primary) {
				cj.Violation.Historical = true
			}
			rj.Counterexamples = append(rj.Counterexamples, cj)
			if c.Violation.Severity >= failOn && !cj.Violation.Historical {
				code = result.ExitFindings
			}
		}
		out.Results = append(out.Results, rj)
		if f.output.value == "text" {
			exploreText(&text, res, files, simulate.Historical(p, primary))
		}
	}
	if f.output.value == "json" {
		enc := json.NewEncoder(&text)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			return 0, err
		}
	}
	if _, err := a.stdout.Write(text.Bytes()); err != nil {
		return 0, err
	}
	return code, nil
}

// exploreText writes one policy's result as text.
func exploreText(w io.Writer, res *explore.Result, files []string, historical bool) {
	how := "depth limit reached"
	switch {
	case res.Exhausted:
		how = "every reachable state explored"
	case res.Stopped:
		how = "stopped early"
	}
	name := string(res.Policy)
	if historical {
		name += " (the historical gate: shown, not in the exit code)"
	}
	fmt.Fprintf(w, "\npolicy %s: %d states, depth %d (%s), %s\n", name, res.States, res.Depth, how, res.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "  the user changes %s\n", res.Change)
	if len(res.Counterexamples) == 0 {
		fmt.Fprintf(w, "  no violation\n")
	}
	for i, c := range res.Counterexamples {
		v := c.Violation
		tag := ""
		if v.Policy != "" {
			tag = " [" + string(v.Policy) + "]"
		}
		fmt.Fprintf(w, "  %s %s%s in %s: %s\n", v.Severity, v.Rule, tag, report.Plural(len(c.Steps), "step", "steps"), v.Message)
		for j, st := range c.Steps {
			fmt.Fprintf(w, "    %2d. %s\n", j+1, describeStep(st))
		}
		if i < len(files) {
			fmt.Fprintf(w, "    written to %s\n", files[i])
		}
	}
}

func describeStep(st trace.Step) string {
	s := fmt.Sprintf("%-8s %s", st.Actor, st.Action())
	switch st.Verb {
	case v1alpha1.VerbUpdate, v1alpha1.VerbUpdateStatus, v1alpha1.VerbCreate:
		if st.Value != nil {
			data, _ := json.Marshal(st.Value)
			s += " " + string(data)
		}
	}
	return s
}

// progress shows a long search on stderr when stderr is a terminal, and
// stays quiet otherwise (CI logs).
func (a *app) progress(label string) func(explore.Progress) {
	if !isTerminal(a.stderr) {
		return nil
	}
	return func(p explore.Progress) {
		fmt.Fprintf(a.stderr, "\r\033[Kexplore %s: depth %d, %d states", label, p.Depth, p.States)
		a.progressShown = true
	}
}

func (a *app) clearProgress() {
	if a.progressShown {
		fmt.Fprint(a.stderr, "\r\033[K")
		a.progressShown = false
	}
}
