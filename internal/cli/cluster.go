package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/statuscheck/statuscheck/pkg/catalog"
	"github.com/statuscheck/statuscheck/pkg/result"
)

// ClusterBinary is the binary the cluster commands and the reading of
// file-based catalogs are linked into (cmd/statuscheck-cluster). They
// need controller-runtime's manager, client-go's dynamic client and
// operator-registry's declcfg, whose package initialisation every process
// of a binary pays; statuscheck, which pre-commit hooks and CI start once
// a bundle for validate, does not link them and runs them there, from
// its own directory.
const ClusterBinary = "statuscheck-cluster"

// CommandInfo is what statuscheck's tree says of a command before it
// is run: its name, its usage line and its one-line help.
type CommandInfo struct {
	Name, Use, Short string
}

// ClusterCommands are the commands that reach a cluster, in the order
// the help lists them: statuscheck lists them and runs them in
// ClusterBinary, which makes them (package cli/cluster) from these.
var ClusterCommands = []CommandInfo{
	{Name: "record", Use: "record", Short: "Record a live status source into a trace that simulate replays"},
	{Name: "bridge", Use: "bridge", Short: "Write the OperatorCondition's Upgradeable from the status-source CR, on today's OLM"},
	{Name: "gate", Use: "gate [BUNDLE|CSV]", Short: "Exit 0 only while the live status source reports a fresh Upgradeable=True"},
}

// clusterNames lists ClusterCommands' names, "record, bridge, gate".
func clusterNames() string {
	var names []string
	for _, c := range ClusterCommands {
		names = append(names, c.Name)
	}
	return strings.Join(names, ", ")
}

// ClusterCommand is the ClusterCommands entry of name.
func ClusterCommand(name string) CommandInfo {
	i := slices.IndexFunc(ClusterCommands, func(c CommandInfo) bool { return c.Name == name })
	if i < 0 {
		panic("cli: no cluster command " + name)
	}
	return ClusterCommands[i]
}

// Options say where the cluster commands are.
type Options struct {
	// Cluster makes the cluster commands, linked into this binary.
	Cluster func(Env) []*cobra.Command
	// Forward runs a cluster command (args begin with its name) in
	// ClusterBinary, without Cluster. It returns only when it could not
	// start it (ExecCluster) or when it ran it as a child (on Windows),
	// with the child's exit code. Without Catalogs, validate forwards its
	// whole command line too when a path is a file-based catalog.
	Forward func(args []string) (int, error)
	// Catalogs reads file-based catalogs for validate (fbc.Walk, which
	// links operator-registry's declcfg): set in ClusterBinary, nil in
	// statuscheck, which validates catalogs there.
	Catalogs catalog.Walker
}

// Env is what a command made by Options.Cluster writes to, and how it
// sets the exit code it decided on.
type Env struct {
	Stdout, Stderr io.Writer
	// Exit sets the process's exit code when the command returns no
	// error (0 unless set).
	Exit func(code int)
}

// clusterCommands are the cluster commands of the tree: the linked ones,
// else commands that forward their arguments, unparsed, to ClusterBinary,
// and their help (`statuscheck help record`) too.
func (a *app) clusterCommands() []*cobra.Command {
	if a.opts.Cluster != nil {
		return a.opts.Cluster(Env{Stdout: a.stdout, Stderr: a.stderr, Exit: func(code int) { a.code = code }})
	}
	var cmds []*cobra.Command
	for _, info := range ClusterCommands {
		cmd := &cobra.Command{
			Use:                info.Use,
			Short:              info.Short,
			DisableFlagParsing: true,
			RunE: func(cmd *cobra.Command, args []string) error {
				return a.forward(append([]string{info.Name}, args...))
			},
		}
		cmd.SetHelpFunc(func(*cobra.Command, []string) {
			if err := a.forward([]string{info.Name, "--help"}); err != nil {
				fmt.Fprintf(a.stderr, "statuscheck: %v\n", err)
				a.code = result.ExitFailure
			}
		})
		cmds = append(cmds, cmd)
	}
	return cmds
}

// forwardCatalogs runs the whole command line (validate's, one of whose
// paths is a file-based catalog) in ClusterBinary, which links
// Options.Catalogs.
func (a *app) forwardCatalogs(catalog string) error {
	if a.opts.Forward == nil {
		return fmt.Errorf("%s is a file-based catalog: this build of statuscheck validates catalogs in %s, which it cannot start", catalog, ClusterBinary)
	}
	if a.args == nil {
		// A tree made by Command, not run by Run: no command line to run.
		return fmt.Errorf("%s is a file-based catalog, validated in %s: run the command with cli.Run, which has its command line", catalog, ClusterBinary)
	}
	if err := a.forward(a.args); err != nil {
		return fmt.Errorf("%s is a file-based catalog: %w", catalog, err)
	}
	return nil
}

// forward runs args in ClusterBinary and takes its exit code.
func (a *app) forward(args []string) error {
	if a.opts.Forward == nil {
		return fmt.Errorf("%s: this build of statuscheck runs it in %s, which it cannot start", args[0], ClusterBinary)
	}
	code, err := a.opts.Forward(args)
	if err != nil {
		return err
	}
	a.code = code
	return nil
}

// isClusterCompletion reports whether args ask cobra's completion (the
// hidden __complete commands the shell scripts call) about a cluster
// command, which only ClusterBinary knows the flags of.
func isClusterCompletion(args []string) bool {
	if len(args) < 2 || (args[0] != cobra.ShellCompRequestCmd && args[0] != cobra.ShellCompNoDescRequestCmd) {
		return false
	}
	return slices.ContainsFunc(ClusterCommands, func(c CommandInfo) bool { return c.Name == args[1] })
}

// ExecCluster is Options.Forward for cmd/statuscheck: it runs
// ClusterBinary from statuscheck's own directory (symbolic links
// resolved), the one built and installed with it, in statuscheck's place
// (execve; on Windows a child), so that its exit code, its signals and,
// in a container, its process ID are the command's. It never looks on
// PATH: a statuscheck-cluster found there may be another version's.
//
// The process it starts has ForwardedEnv set, and a statuscheck that
// has it set refuses to forward again: a ClusterBinary that is statuscheck
// itself (a copy, a link) would otherwise start itself without end.
// Process unsets it in ClusterBinary, which never forwards, so that what
// the cluster commands start does not inherit it.
func ExecCluster(args []string) (int, error) {
	path, err := clusterBinaryPath()
	if err != nil {
		return 0, err
	}
	if os.Getenv(ForwardedEnv) != "" {
		return 0, fmt.Errorf("%s gave the command back to statuscheck: it is not %s (a copy of statuscheck, or a link to it?)", path, ClusterBinary)
	}
	if err := os.Setenv(ForwardedEnv, "1"); err != nil {
		return 0, fmt.Errorf("starting %s: %w", path, err)
	}
	return execProgram(path, args)
}

// ForwardedEnv is set in the environment of the process ExecCluster
// starts.
const ForwardedEnv = "STATUSCHECK_FORWARDED"

func clusterBinaryPath() (string, error) {
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err != nil {
		return "", fmt.Errorf("finding statuscheck's own directory, where %s is: %w", ClusterBinary, err)
	}
	dir := filepath.Dir(self)
	path := filepath.Join(dir, ClusterBinary+exeSuffix)
	switch info, err := os.Stat(path); {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%s is not beside statuscheck (%s): the cluster commands (%s) and the validation of file-based catalogs run in it; install it there (GOBIN=%s go install github.com/statuscheck/statuscheck/cmd/statuscheck-cluster@VERSION; make build writes both to bin/)", ClusterBinary, dir, clusterNames(), dir)
	case err != nil:
		return "", fmt.Errorf("%s: %w", path, err)
	case !info.Mode().IsRegular():
		return "", fmt.Errorf("%s is not a file (%s): the cluster commands (%s) and the validation of file-based catalogs run in it", path, info.Mode().Type(), clusterNames())
	}
	return path, nil
}
