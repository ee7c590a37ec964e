// Command statuscheck validates, generates and simulates the status-source
// contract of OLM bundles. See README.md.
package main

import (
	"os"

	"github.com/statuscheck/statuscheck/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
