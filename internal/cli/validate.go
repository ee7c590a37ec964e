package cli

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/statuscheck/statuscheck/internal/warmstart"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/catalog"
	"github.com/statuscheck/statuscheck/pkg/report"
	"github.com/statuscheck/statuscheck/pkg/result"
	"github.com/statuscheck/statuscheck/pkg/validate"
)

// errForwarded is what the catalog reader of a statuscheck without one
// returns: the command line ran in ClusterBinary instead.
var errForwarded = errors.New("validated in " + ClusterBinary)

func (a *app) validateCommand() *cobra.Command {
	output := newEnum("text", "text", "json", "sarif", "junit", "manifest-result", "scorecard").named("FORMAT")
	failOn := newEnum("error", "error", "warning", "info")
	var opts validate.Options
	var guardFiles []string
	cmd := &cobra.Command{
		Use:   "validate PATH...",
		Short: "Check that bundles declare a status source that can work",
		Long: `Validate checks each bundle (a bundle root with manifests/ and metadata/,
a manifests directory, a directory of bundles, or a CSV file: that CSV
with the manifests beside it, as generate reads it) against the rules of
the status-source contract:
the annotation parses, its CRD is in the bundle and owned, the version is
served, the status subresource is on, conditions carry observedGeneration,
RBAC allows /status writes and the handshake is consistent. Bundle-format
problems operator-registry would reject are reported too.

Run 'statuscheck rules' for the list of rules.

Exit codes: 0 nothing at or above --fail-on, 1 findings at or above it
or a status source whose upgrade OLM v0 does not hold (the verdict's
"OLM v0: no", which counts as an error), 2 statuscheck could not
validate. A path that cannot be read does not hide
the others: every bundle that could be checked is reported, then each
path or file that could not be read is named on stderr (and in the json,
sarif, junit and scorecard documents), and the exit code is 2. Two
formats differ on purpose: -o manifest-result and scorecard exit 0 with
findings, because operator-sdk (an external validator) and scorecard (a
custom test) read the verdict from the output and take a non-zero exit
for a crash; manifest-result, one bundle's verdict, prints nothing when
that bundle could not be read.`,
		Example: `  statuscheck validate bundle/
  statuscheck validate -o json --fail-on warning bundle-a/ bundle-b/`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// What was parsed while the binary started is used; the rest
			// is parsed at the loader's pace.
			parsed := warmstart.Parsed()
			parsed.Stop()
			// Without a catalog reader linked, the first catalog among the
			// paths (validate.Paths sniffs each path once) runs the whole
			// command line in ClusterBinary instead: in its place (nothing
			// of this run is printed), or as a child whose exit code is
			// the command's.
			var forwarded bool
			var forwardErr error
			opts.Catalogs = a.opts.Catalogs
			if opts.Catalogs == nil {
				var once sync.Once
				opts.Catalogs = func(_ context.Context, path string, _ catalog.Visit, _ func(int)) (catalog.Stats, error) {
					once.Do(func() { forwarded, forwardErr = true, a.forwardCatalogs(path) })
					return catalog.Stats{}, errForwarded
				}
			}
			fail, _ := result.ParseSeverity(failOn.value)
			if output.value == "manifest-result" && len(args) != 1 {
				return Usagef("-o manifest-result prints one ManifestResult: give one bundle, not %d", len(args))
			}
			guards, err := readGuards(guardFiles)
			if err != nil {
				return err
			}
			opts.Guards = guards
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
			rep := validate.Paths(args, opts, bundle.Options{Parsed: parsed}, progress)
			a.clearProgress()
			if forwarded {
				return forwardErr
			}
			// What could not be read: every bundle that could be checked is
			// reported first, in every format (JSON, SARIF, JUnit and
			// scorecard record the failure in the document too), then each
			// failure goes to stderr and the exit code is 2: the run as a
			// whole could not do its job.
			var failures []error
			for _, b := range rep.Bundles {
				for _, e := range b.Errors {
					failures = append(failures, errors.New(e))
				}
			}
			for _, e := range rep.Errors {
				failures = append(failures, errors.New(e.Error))
			}
			if output.value == "manifest-result" && len(failures) > 0 {
				// One ManifestResult is about one bundle, and operator-sdk
				// takes any ManifestResult for a verdict: nothing on stdout.
				return errors.Join(failures...)
			}
			err = nil
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
				if len(rep.Bundles) > 0 {
					err = report.Text(a.stdout, rep)
				}
			}
			if err != nil {
				return fmt.Errorf("writing the report: %w", err)
			}
			if len(failures) > 0 {
				return errors.Join(failures...)
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
	f.StringArrayVar(&guardFiles, "guards", nil, "a manifest `FILE` applied beside the bundle without OLM (what generate --admission-policy or --upgrade-hook prints, or a rendered chart): its admission policy and pre-upgrade hook count in the verdict (repeatable)")
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
