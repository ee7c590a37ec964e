// Package cli is statuscheck's command line: cobra commands that parse flags,
// call the pkg/ packages and pick a writer. It returns exit codes; only
// the commands' mains (cmd/statuscheck, cmd/statuscheck-cluster) call
// os.Exit.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/statuscheck/statuscheck/pkg/apiserver"
	"github.com/statuscheck/statuscheck/pkg/result"
)

// Main runs statuscheck with args (without the program name) and returns
// the process exit code: 0 clean, 1 findings at or above --fail-on, 2 the
// tool could not do its job. Neither the cluster commands nor the reading
// of catalogs are linked: Main refuses them (Run runs them).
func Main(args []string, stdout, stderr io.Writer) int {
	return Run(args, stdout, stderr, Options{})
}

// Run is Main with the cluster commands where opts says they are:
// cmd/statuscheck forwards them to ClusterBinary, which links them.
func Run(args []string, stdout, stderr io.Writer, opts Options) int {
	app := &app{stdout: stdout, stderr: stderr, opts: opts, args: args}
	if opts.Cluster == nil && opts.Forward != nil && isClusterCompletion(args) {
		if err := app.forward(args); err != nil {
			fmt.Fprintf(stderr, "statuscheck: %v\n", err)
			return result.ExitFailure
		}
		return app.code
	}
	root := app.rootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if cmd, err := root.ExecuteC(); err != nil {
		// One line per error (errors.Join), each named as the tool's.
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(stderr, "statuscheck: %s\n", line)
		}
		var u usageError
		if errors.As(err, &u) || isCobraUsage(err) {
			// The help of the command that was run, not the root's.
			fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		}
		return result.ExitFailure
	}
	return app.code
}

// Process is a command's main but for os.Exit (cmd/statuscheck,
// cmd/statuscheck-cluster): the apiserver code's and client-go's klog
// silenced (what matters reaches the user as findings and errors),
// release called for the commands that run long or grow large (the
// collector, off since internal/gcfloor's initialisation, comes back;
// the others get it when they reach their floor), the commands run on
// the process's standard streams with opts, then ReportDebug. It returns
// the exit code.
func Process(args []string, opts Options, release func()) int {
	apiserver.SilenceLogs()
	if opts.Cluster != nil {
		// ClusterBinary never forwards: what its commands start is not
		// a forwarded statuscheck (ExecCluster).
		os.Unsetenv(ForwardedEnv)
	}
	if !ShortLived(args) {
		release()
	}
	code := Run(args, os.Stdout, os.Stderr, opts)
	ReportDebug(os.Stderr)
	return code
}

// Command is statuscheck's command tree, writing to stdout and stderr,
// with the cluster commands where opts says they are; nothing runs until
// it is executed. Tools that walk the tree (documentation, completion)
// start here.
func Command(stdout, stderr io.Writer, opts Options) *cobra.Command {
	return (&app{stdout: stdout, stderr: stderr, opts: opts}).rootCommand()
}

type app struct {
	stdout, stderr io.Writer
	// opts say where the cluster commands are.
	opts Options
	// args is the command line Run was given, which validate forwards
	// whole to ClusterBinary for a catalog.
	args []string
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

// Usagef is an error in how statuscheck was called: exit 2, with the
// command's usage hint.
func Usagef(format string, args ...interface{}) error {
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

// buildVersion is the version a release build stamps at link time (make
// image: -ldflags "-X github.com/statuscheck/statuscheck/internal/cli.buildVersion=..."),
// from git describe; empty in every other build, which reads the build
// info instead.
var buildVersion string

func version() string {
	if buildVersion != "" {
		return buildVersion
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	// A build without a module version: the commit it was built from,
	// when the build recorded one.
	var rev, dirty string
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision" && len(s.Value) >= 12:
			rev = s.Value[:12]
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "-dirty"
		}
	}
	if rev != "" {
		return "dev+" + rev + dirty
	}
	return "dev"
}

// versionLine is what `statuscheck version` prints: the module version
// from the build info (a tag, or the pseudo-version Go stamps from the
// checkout), the Go that built it and the platform.
func versionLine() string {
	return fmt.Sprintf("statuscheck %s (%s %s/%s)", version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print statuscheck's version (the module version from the build info)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintln(a.stdout, versionLine())
			return err
		},
	}
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "statuscheck",
		Short: "Check, write and simulate an operator's status-source contract for OLM upgrades",
		Long: `statuscheck makes the status-source contract safe to adopt: the operator
reports Upgradeable on its own custom resource, named by the CSV's
operatorframework.io/status-source annotation, and metadata.generation
against observedGeneration keeps an outdated "Upgradeable=True" from being
acted on.

OLM v0 (every release so far) does not read the annotation: it gates an
upgrade on the OperatorCondition only. statuscheck bridge, a sidecar, writes
the OperatorCondition from the CR (generate --bridge); or the operator writes
it itself (the OperatorCondition handshake). validate says, for OLM v0,
OLM v1 and no OLM, whether the bundle's upgrade is actually held.

Exit codes: 0 nothing at or above --fail-on, 1 findings, 2 could not run.`,
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetUsageTemplate(wrappedUsage(root.UsageTemplate()))
	root.AddCommand(a.validateCommand(), a.generateCommand(), a.simulateCommand(), a.rulesCommand(), a.versionCommand())
	root.AddCommand(a.clusterCommands()...)
	// cobra's own completion command: bash, zsh, fish and powershell. Its
	// scripts are written where the root writes (cobra takes the writer
	// when it makes the command).
	root.CompletionOptions.HiddenDefaultCmd = false
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			completionShells(c)
		}
	}
	return root
}

// helpWidth is the column the flags' descriptions in --help wrap at: a
// terminal of 100 columns shows each line whole.
const helpWidth = 100

func init() {
	cobra.AddTemplateFunc("wrappedFlagUsages", func(fs *pflag.FlagSet) string { return fs.FlagUsagesWrapped(helpWidth) })
}

// wrappedUsage is cobra's usage template with the flags' descriptions
// wrapped at helpWidth (pflag's FlagUsagesWrapped) instead of one line
// each, however long.
func wrappedUsage(tmpl string) string {
	return strings.NewReplacer("{{.LocalFlags.FlagUsages", "{{wrappedFlagUsages .LocalFlags",
		"{{.InheritedFlags.FlagUsages", "{{wrappedFlagUsages .InheritedFlags").Replace(tmpl)
}

// completionShells makes cobra's completion command refuse a shell it
// has no script for (exit 2, naming those it has) instead of printing its
// help and exiting 0; without a shell it prints its help.
func completionShells(c *cobra.Command) {
	c.Use = "completion SHELL"
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		var shells []string
		for _, sub := range cmd.Commands() {
			if sub.Name() != "help" {
				shells = append(shells, sub.Name())
			}
		}
		return Usagef("completion: unsupported shell %q: statuscheck has completion scripts for %s", args[0], orList(shells))
	}
}

// orList joins words as "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// enumFlag is a string flag limited to a set of values; a wrong value is a
// usage error at parse time.
type enumFlag struct {
	value   string
	allowed []string
	// name is what --help shows for the value when the values, joined,
	// would widen the flags' column past reading (named).
	name string
}

// named sets the value's name in --help: the values are listed in the
// flag's description.
func (e *enumFlag) named(name string) *enumFlag {
	e.name = name
	return e
}

func newEnum(def string, allowed ...string) *enumFlag {
	return &enumFlag{value: def, allowed: allowed}
}

func (e *enumFlag) String() string { return e.value }

// Type is what --help shows after the flag's name: its values (a|b|c),
// or its name when it has one.
func (e *enumFlag) Type() string {
	if e.name != "" {
		return e.name
	}
	return strings.Join(e.allowed, "|")
}
func (e *enumFlag) Set(v string) error {
	for _, a := range e.allowed {
		if v == a {
			e.value = v
			return nil
		}
	}
	return fmt.Errorf("%q is not one of %s", v, strings.Join(e.allowed, ", "))
}
