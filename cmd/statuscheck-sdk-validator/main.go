// Command statuscheck-sdk-validator is statuscheck as an operator-sdk
// external validator:
//
//	operator-sdk bundle validate ./bundle --alpha-select-external "$(go env GOPATH)/bin/statuscheck-sdk-validator"
//
// operator-sdk runs it with the bundle root as its only argument and
// decodes one operator-framework/api ManifestResult from its stdout. It
// exits 0 whenever it could validate; the findings are in the JSON.
// STATUSCHECK_ARGS adds validate flags, e.g. "--require-status-source".
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/statuscheck/statuscheck/internal/cli"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintf(os.Stderr, "usage: %s BUNDLE_ROOT (as operator-sdk bundle validate --alpha-select-external runs it)\n", os.Args[0])
		os.Exit(2)
	}
	args := []string{"validate", "-o", "manifest-result"}
	args = append(args, strings.Fields(os.Getenv("STATUSCHECK_ARGS"))...)
	args = append(args, os.Args[1])
	os.Exit(cli.Main(args, os.Stdout, os.Stderr))
}
