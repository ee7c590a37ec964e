package cli

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/report"
	"github.com/statuscheck/statuscheck/pkg/result"
	"github.com/statuscheck/statuscheck/pkg/validate"
)

func (a *app) validateCommand() *cobra.Command {
	output := newEnum("text", "text", "json", "sarif", "junit", "manifest-result", "scorecard")
	failOn := newEnum("error", "error", "warning", "info")
	var opts validate.Options
	cmd := &cobra.Command{
		Use:   "validate PATH...",
		Short: "Check that bundles declare a status source that can work",
		Long: `Validate checks each bundle (a bundle root with manifests/ and metadata/,
or a manifests directory) against the rules of the status-source contract:
the annotation parses, its CRD is in the bundle and owned, the version is
served, the status subresource is on, conditions carry observedGeneration,
RBAC allows /status writes and the handshake is consistent. Bundle-format
problems operator-registry would reject are reported too.

Run 'statuscheck rules' for the list of rules.

Exit codes: 0 nothing at or above --fail-on, 1 findings at or above it, 2
statuscheck could not validate. Two formats differ on purpose: -o
manifest-result and scorecard exit 0 with findings, because operator-sdk
(an external validator) and scorecard (a custom test) read the verdict
from the output and take a non-zero exit for a crash; they exit 2 with no
output when a bundle could not be read.`,
		Example: `  statuscheck validate bundle/
  statuscheck validate -o json --fail-on warning bundle-a/ bundle-b/`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fail, _ := result.ParseSeverity(failOn.value)
			if output.value == "manifest-result" && len(args) != 1 {
				return usagef("-o manifest-result prints one ManifestResult: give one bundle, not %d", len(args))
			}
			var progress validate.Progress
			if isTerminal(a.stderr) {
				var mu sync.Mutex
				var last time.Time // the first call shows at once, then every 200ms
				progress = func(n int) {
					mu.Lock()
					defer mu.Unlock()
					if time.Since(last) > 200*time.Millisecond {
						last = time.Now()
						fmt.Fprintf(a.stderr, "\r\033[Kcatalog: %d bundles read", n)
						a.progressShown = true
					}
				}
			}
			rep := validate.Paths(args, opts, bundle.Options{}, progress)
			a.clearProgress()
			if rep.Failed() && output.value != "json" && output.value != "sarif" && output.value != "junit" {
				// Exit 2 prints no half result: what could not be read goes
				// to stderr, and stdout stays empty (operator-sdk and
				// scorecard take any JSON there for a verdict). JSON, SARIF
				// and JUnit are whole documents that record the failed run
				// as such (errors, executionSuccessful false, an error case).
				var errs []error
				for _, b := range rep.Bundles {
					for _, e := range b.Errors {
						errs = append(errs, errors.New(e))
					}
				}
				return errors.Join(errs...)
			}
			var err error
			switch output.value {
			case "json":
				err = report.JSON(a.stdout, rep)
			case "sarif":
				err = report.SARIF(a.stdout, rep, validate.Rules(), report.RepoRoot(), version())
			case "junit":
				err = report.JUnit(a.stdout, rep, validate.Rules(), fail)
			case "manifest-result":
				if len(rep.Bundles) != 1 {
					return fmt.Errorf("%s is a catalog of %d bundles; -o manifest-result validates one bundle", args[0], len(rep.Bundles))
				}
				err = report.ManifestResult(a.stdout, rep.Bundles[0])
			case "scorecard":
				err = report.Scorecard(a.stdout, rep, fail)
			default:
				err = report.Text(a.stdout, rep)
			}
			// What could not be read goes to stderr in every format (the
			// JSON report carries it too), so a CI log always shows it.
			for _, b := range rep.Bundles {
				for _, e := range b.Errors {
					fmt.Fprintf(a.stderr, "statuscheck: %s\n", e)
				}
			}
			if err != nil {
				return fmt.Errorf("writing the report: %w", err)
			}
			a.code = rep.ExitCode(fail)
			if (output.value == "manifest-result" || output.value == "scorecard") && a.code == result.ExitFindings {
				// operator-sdk and scorecard read the verdict from the
				// output; a non-zero exit would mean statuscheck failed.
				a.code = result.ExitOK
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.VarP(output, "output", "o", "output format: text, json, sarif (code scanning), junit, manifest-result (operator-sdk external validator) or scorecard (scorecard custom test)")
	f.Var(failOn, "fail-on", "lowest severity that makes the exit code 1: error, warning or info")
	f.BoolVar(&opts.RequireStatusSource, "require-status-source", false, "report a CSV without a status source as an error")
	return cmd
}

func (a *app) rulesCommand() *cobra.Command {
	output := newEnum("text", "text", "json", "markdown")
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "List the rules validate checks",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rules := validate.Rules()
			var err error
			switch output.value {
			case "json":
				err = report.RulesJSON(a.stdout, rules)
			case "markdown":
				err = report.RulesMarkdown(a.stdout, rules)
			default:
				err = report.RulesText(a.stdout, rules)
			}
			if err != nil {
				return fmt.Errorf("writing the rules: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().VarP(output, "output", "o", "output format: text, json or markdown")
	return cmd
}
