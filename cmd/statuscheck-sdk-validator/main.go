// Command statuscheck-sdk-validator is statuscheck as an operator-sdk
// external validator:
//
//	operator-sdk bundle validate ./bundle --alpha-select-external "$(go env GOPATH)/bin/statuscheck-sdk-validator"
//
// operator-sdk runs it with the bundle root as its only argument and
// decodes one operator-framework/api ManifestResult from its stdout. It
// exits 0 whenever it could validate; the findings are in the JSON.
// STATUSCHECK_ARGS adds validate flags, split as a shell splits words,
// e.g. "--require-status-source". --help says so.
package main

import (
	"os"

	"github.com/statuscheck/statuscheck/internal/cli"
	// A validator process is short-lived: the collector off until it
	// reaches its floor (internal/gcfloor), as statuscheck validate has it.
	_ "github.com/statuscheck/statuscheck/internal/gcfloor"
	"github.com/statuscheck/statuscheck/pkg/apiserver"
)

func main() {
	apiserver.SilenceLogs()
	os.Exit(cli.SDKValidator(os.Args[1:], os.Getenv("STATUSCHECK_ARGS"), os.Stdout, os.Stderr))
}
