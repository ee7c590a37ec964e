package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/statuscheck/statuscheck/pkg/bridge/sidecar"
)

// ClusterBinary is the binary the cluster commands are linked into
// (cmd/statuscheck-cluster; sidecar.ClusterProgram). They need client-go's clients and
// controller-runtime, whose package initialisation every process of a
// binary pays; statuscheck, which pre-commit hooks and CI start once a
// bundle for validate, does not link them and runs them there, from its
// own directory or from PATH.
const ClusterBinary = sidecar.ClusterProgram

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
	// with the child's exit code.
	Forward func(args []string) (int, error)
}

// Env is what a command made by Options.Cluster writes to, and how it
// sets the exit code it decided on.
type Env struct {
	Stdout, Stderr io.Writer
	// Exit sets the process's exit code when the command returns no
	// error (0 unless set).
	Exit func(code int)
}

// Usagef is an error in how statuscheck was called: exit 2, with the
// command's usage hint.
func Usagef(format string, args ...interface{}) error {
	return usagef(format, args...)
}

// clusterCommands are the cluster commands of the tree: the linked ones,
// else commands that forward their arguments, unparsed, to ClusterBinary.
func (a *app) clusterCommands() []*cobra.Command {
	if a.opts.Cluster != nil {
		return a.opts.Cluster(Env{Stdout: a.stdout, Stderr: a.stderr, Exit: func(code int) { a.code = code }})
	}
	var cmds []*cobra.Command
	for _, info := range ClusterCommands {
		cmds = append(cmds, &cobra.Command{
			Use:                info.Use,
			Short:              info.Short,
			DisableFlagParsing: true,
			RunE: func(cmd *cobra.Command, args []string) error {
				return a.forward(append([]string{info.Name}, args...))
			},
		})
	}
	return cmds
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
// ClusterBinary from statuscheck's own directory, else from PATH, in
// statuscheck's place (execve, on Windows a child), so that its exit
// code, its signals and, in a container, its process ID are the
// command's.
func ExecCluster(args []string) (int, error) {
	path, err := clusterBinaryPath()
	if err != nil {
		return 0, err
	}
	return execProgram(path, args)
}

// errNoClusterBinary says where ClusterBinary was looked for.
var errNoClusterBinary = errors.New("not found")

func clusterBinaryPath() (string, error) {
	name := ClusterBinary + exeSuffix
	self, err := os.Executable()
	if err == nil {
		if real, rerr := filepath.EvalSymlinks(self); rerr == nil {
			self = real
		}
		beside := filepath.Join(filepath.Dir(self), name)
		if info, serr := os.Stat(beside); serr == nil && info.Mode().IsRegular() {
			return beside, nil
		}
	}
	if p, lerr := exec.LookPath(name); lerr == nil {
		return p, nil
	}
	where := "on PATH"
	if err == nil {
		where = "in " + filepath.Dir(self) + " or on PATH"
	}
	return "", fmt.Errorf("%s %w %s: the cluster commands (record, bridge, gate) run in it; install it beside statuscheck (go install github.com/statuscheck/statuscheck/cmd/statuscheck-cluster@VERSION, or make build)", ClusterBinary, errNoClusterBinary, where)
}
