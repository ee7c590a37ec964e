// Command statuscheck validates, generates and simulates the status-source
// contract of OLM bundles. See README.md. The commands that reach a
// cluster (record, bridge, gate) run in statuscheck-cluster, beside it,
// which it starts in its place: this binary does not link
// controller-runtime's manager or client-go's dynamic client, so that the
// process a pre-commit hook starts for each bundle starts fast.
package main

import (
	"os"

	"github.com/statuscheck/statuscheck/internal/cli"
	"github.com/statuscheck/statuscheck/internal/gcfloor"
	_ "github.com/statuscheck/statuscheck/internal/warmdecode" // for its initialisation
	"github.com/statuscheck/statuscheck/pkg/apiserver"
)

func main() {
	// The apiserver code statuscheck runs logs through klog; what
	// matters reaches the user as findings and errors.
	apiserver.SilenceLogs()
	// The collector has been off since gcfloor's initialisation; the
	// commands that run long or grow large get it back now, the others
	// when they reach gcfloor.Floor.
	if !cli.ShortLived(os.Args[1:]) {
		gcfloor.Release()
	}
	code := cli.Run(os.Args[1:], os.Stdout, os.Stderr, cli.Options{Forward: cli.ExecCluster})
	cli.ReportDebug(os.Stderr)
	os.Exit(code)
}
