package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/report"
	"github.com/statuscheck/statuscheck/pkg/result"
	"github.com/statuscheck/statuscheck/pkg/validate"
)

func (a *app) validateCommand() *cobra.Command {
	output := newEnum("text", "text", "json")
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

Run 'statuscheck rules' for the list of rules.`,
		Example: `  statuscheck validate bundle/
  statuscheck validate -o json --fail-on warning bundle-a/ bundle-b/`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fail, _ := result.ParseSeverity(failOn.value)
			rep := validate.Paths(args, opts, bundle.Options{})
			var err error
			switch output.value {
			case "json":
				err = report.JSON(a.stdout, rep)
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
			return nil
		},
	}
	f := cmd.Flags()
	f.VarP(output, "output", "o", "output format: text or json")
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
