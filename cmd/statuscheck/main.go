// Command statuscheck validates, generates and simulates the status-source
// contract of OLM bundles. See README.md. The commands that reach a
// cluster (record, bridge, gate), and validate when a path is a
// file-based catalog, run in statuscheck-cluster, beside it, which it
// starts in its place: this binary does not link controller-runtime's
// manager, client-go's dynamic client or operator-registry's declcfg, so
// that the process a pre-commit hook starts for each bundle starts fast.
package main

import (
	"os"

	"github.com/statuscheck/statuscheck/internal/cli"
	"github.com/statuscheck/statuscheck/internal/gcfloor"
	_ "github.com/statuscheck/statuscheck/internal/warmdecode" // for its initialisation
)

func main() {
	os.Exit(cli.Process(os.Args[1:], cli.Options{Forward: cli.ExecCluster}, gcfloor.Release))
}
