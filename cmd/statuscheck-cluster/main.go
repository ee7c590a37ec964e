// Command statuscheck-cluster is statuscheck with the commands that reach
// a cluster linked in: record, bridge and gate (internal/cli/cluster),
// and the reading of file-based catalogs (pkg/catalog/fbc), besides all of
// statuscheck's own. statuscheck runs them here; the image
// installs this binary as its statuscheck, so that the bridge sidecar is
// one process. See README.md.
package main

import (
	"os"

	"github.com/statuscheck/statuscheck/internal/cli"
	"github.com/statuscheck/statuscheck/internal/cli/cluster"
	"github.com/statuscheck/statuscheck/internal/gcfloor"
	_ "github.com/statuscheck/statuscheck/internal/warmdecode" // for its initialisation
	"github.com/statuscheck/statuscheck/pkg/catalog/fbc"
)

func main() {
	os.Exit(cli.Process(os.Args[1:], cli.Options{Cluster: cluster.Commands, Catalogs: fbc.Walk}, gcfloor.Release))
}
