// Package cli is statuscheck's command line: cobra commands that parse flags,
// call the pkg/ packages and pick a writer. It returns exit codes; only
// cmd/statuscheck's main calls os.Exit.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/statuscheck/statuscheck/pkg/result"
)

// Main runs statuscheck with args (without the program name) and returns
// the process exit code: 0 clean, 1 findings at or above --fail-on, 2 the
// tool could not do its job.
func Main(args []string, stdout, stderr io.Writer) int {
	app := &app{stdout: stdout, stderr: stderr}
	root := app.rootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if cmd, err := root.ExecuteC(); err != nil {
		fmt.Fprintf(stderr, "statuscheck: %v\n", err)
		var u usageError
		if errors.As(err, &u) || isCobraUsage(err) {
			// The help of the command that was run, not the root's.
			fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		}
		return result.ExitFailure
	}
	return app.code
}

type app struct {
	stdout, stderr io.Writer
	// code is the exit code a command decided on.
	code int
	// progressShown is set while a progress line is on stderr.
	progressShown bool
}

// isTerminal reports whether w is a terminal (progress is shown only there).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// usageError marks errors in how statuscheck was called.
type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

func usagef(format string, args ...interface{}) error {
	return usageError{fmt.Errorf(format, args...)}
}

func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, s := range []string{"unknown flag", "unknown shorthand", "unknown command", "invalid argument", "flag needs an argument", "accepts ", "requires at least", "if any flags in the group", "none of the others can be"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "statuscheck",
		Short: "Check, write and simulate an operator's status-source contract for OLM upgrades",
		Long: `statuscheck makes the status-source contract safe to adopt: OLM reads the
Upgradeable condition from the operator's own custom resource, and
metadata.generation against observedGeneration keeps an outdated
"Upgradeable=True" from being acted on.

Exit codes: 0 nothing at or above --fail-on, 1 findings, 2 could not run.`,
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(a.validateCommand(), a.generateCommand(), a.simulateCommand(), a.recordCommand(), a.rulesCommand())
	return root
}

// enumFlag is a string flag limited to a set of values; a wrong value is a
// usage error at parse time.
type enumFlag struct {
	value   string
	allowed []string
}

func newEnum(def string, allowed ...string) *enumFlag {
	return &enumFlag{value: def, allowed: allowed}
}

func (e *enumFlag) String() string { return e.value }
func (e *enumFlag) Type() string   { return strings.Join(e.allowed, "|") }
func (e *enumFlag) Set(v string) error {
	for _, a := range e.allowed {
		if v == a {
			e.value = v
			return nil
		}
	}
	return fmt.Errorf("%q is not one of %s", v, strings.Join(e.allowed, ", "))
}
