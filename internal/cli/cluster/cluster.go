// Package cluster is statuscheck's commands that reach a cluster: record,
// bridge and gate, with client-go's clients and controller-runtime's
// manager. cmd/statuscheck-cluster links them into statuscheck's tree
// (cli.Options.Cluster); cmd/statuscheck, which does not link them, runs
// them there. Like package cli, it parses flags and calls the pkg/
// packages.
package cluster

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/statuscheck/statuscheck/internal/cli"
)

// Commands makes the cluster commands, in cli.ClusterCommands' order, for
// cli.Options.Cluster.
func Commands(env cli.Env) []*cobra.Command {
	a := &app{env}
	return []*cobra.Command{a.recordCommand(), a.bridgeCommand(), a.gateCommand()}
}

// app is where a command writes and sets its exit code.
type app struct{ cli.Env }

// clusterFlags are how a command reaches the cluster, as kubectl does.
type clusterFlags struct {
	kubeconfig, kubeContext string
}

func (c *clusterFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&c.kubeconfig, "kubeconfig", "", "the kubeconfig `FILE` (default: $KUBECONFIG, else ~/.kube/config, else the in-cluster config)")
	fl.StringVar(&c.kubeContext, "context", "", "the kubeconfig context `NAME` to use (default: its current context)")
}
