package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/report"
	"github.com/statuscheck/statuscheck/pkg/result"
	"github.com/statuscheck/statuscheck/pkg/simulate"
)

type simulateFlags struct {
	bundleDir, crdFile, source string
	policy, format, output     *enumFlag
	failOn                     *enumFlag
}

func (a *app) simulateCommand() *cobra.Command {
	f := simulateFlags{
		policy: newEnum("olm", "olm", "strict", "naive", "all"),
		format: newEnum("auto", "auto", "trace", "snapshots", "audit"),
		output: newEnum("text", "text", "json", "html"),
		failOn: newEnum("error", "error", "warning", "info"),
	}
	cmd := &cobra.Command{
		Use:   "simulate TRACE",
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

Policies (SPEC section 4): olm is OLM's isOperatorUpgradeable applied to
the CR; strict allows only a fresh True; naive ignores observedGeneration,
as OLM did before operator-lifecycle-manager PR 2160. --policy all shows
them side by side.`,
		Example: `  statuscheck simulate testdata/traces/seed.yaml --policy all
  statuscheck simulate --bundle bundle/ recorded.json
  statuscheck simulate --crd config/crd/bases/cool.yaml --source cool.operators.corp/v1beta1/CoolOperator/cool-operator audit.log
  statuscheck simulate -o html testdata/traces/seed.yaml > timeline.html`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			code, err := a.runSimulate(args[0], f)
			if err != nil {
				return err
			}
			a.code = code
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.bundleDir, "bundle", "", "take the status source and its CRD from this bundle")
	fl.StringVar(&f.crdFile, "crd", "", "the CRD file, for an operator deployed without OLM (with --source)")
	fl.StringVar(&f.source, "source", "", "the status source as GROUP/VERSION/KIND/NAME (with --crd)")
	fl.Var(f.policy, "policy", "gate policy: olm, strict, naive or all")
	fl.Var(f.format, "format", "trace format: auto, trace, snapshots or audit")
	fl.VarP(f.output, "output", "o", "output: text (a timeline), json or html")
	fl.Var(f.failOn, "fail-on", "lowest severity that makes the exit code 1: error, warning or info")
	cmd.MarkFlagsMutuallyExclusive("bundle", "crd")
	cmd.MarkFlagsMutuallyExclusive("bundle", "source")
	cmd.MarkFlagsRequiredTogether("crd", "source")
	return cmd
}

func policies(name string) ([]contract.Policy, contract.Policy) {
	if name == "all" {
		return contract.Policies(), contract.PolicyOLM
	}
	p := contract.Policy(name)
	return []contract.Policy{p}, p
}

func (a *app) runSimulate(path string, f simulateFlags) (int, error) {
	var ctx *simulate.Context
	var err error
	switch {
	case f.bundleDir != "":
		ctx, err = simulate.ContextFromBundle(f.bundleDir)
	case f.crdFile != "":
		ctx, err = simulate.ContextFromCRD(f.crdFile, f.source)
	}
	if err != nil {
		return 0, err
	}
	opts := simulate.OpenOptions{Format: simulate.Format(f.format.value), Limits: simulate.DefaultLimits}
	if ctx != nil {
		opts.Source, opts.Plural = ctx.Source, ctx.Plural
	}
	t, err := simulate.Open(path, opts)
	if err != nil {
		return 0, err
	}
	defer t.Close()
	pols, primary := policies(f.policy.value)
	cfg, notes, err := ctx.Config(t, pols, primary)
	if err != nil {
		return 0, err
	}
	failOn, _ := result.ParseSeverity(f.failOn.value)
	var sum *simulate.Summary
	switch f.output.value {
	case "json":
		sum, err = simulate.Replay(t, cfg, nil)
		if err == nil {
			sum.Notes = notes
			err = report.SimulationJSON(a.stdout, sum)
		}
	case "html":
		rows := &report.HTMLRows{}
		sum, err = simulate.Replay(t, cfg, rows.Add)
		if err == nil {
			sum.Notes = notes
			err = report.SimulationHTML(a.stdout, sum, rows)
		}
	default:
		head := simulate.NewSummary(t, cfg)
		head.Notes = notes
		tl := report.NewTimeline(a.stdout, head)
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
	return sum.ExitCode(failOn), nil
}
