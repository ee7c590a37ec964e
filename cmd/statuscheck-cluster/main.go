// Command statuscheck-cluster is statuscheck with the commands that reach
// a cluster linked in: record, bridge and gate (internal/cli/cluster),
// besides all of statuscheck's own. statuscheck runs them here; the image
// installs this binary as its statuscheck, so that the bridge sidecar is
// one process. See README.md.
package main

import (
	"os"

	"github.com/statuscheck/statuscheck/internal/cli"
	"github.com/statuscheck/statuscheck/internal/cli/cluster"
	"github.com/statuscheck/statuscheck/internal/gcfloor"
	_ "github.com/statuscheck/statuscheck/internal/warmdecode" // for its initialisation
	"github.com/statuscheck/statuscheck/pkg/apiserver"
)

func main() {
	// The apiserver code statuscheck runs, and client-go, log through
	// klog; what matters reaches the user as findings and errors.
	apiserver.SilenceLogs()
	// As in cmd/statuscheck: the collector is back now for the commands
	// that run long or grow large.
	if !cli.ShortLived(os.Args[1:]) {
		gcfloor.Release()
	}
	code := cli.Run(os.Args[1:], os.Stdout, os.Stderr, cli.Options{Cluster: cluster.Commands})
	cli.ReportDebug(os.Stderr)
	os.Exit(code)
}
