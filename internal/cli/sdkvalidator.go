package cli

import (
	"fmt"
	"io"

	"github.com/google/shlex"

	"github.com/statuscheck/statuscheck/pkg/catalog"
	"github.com/statuscheck/statuscheck/pkg/result"
)

// SDKValidatorHelp is what statuscheck-sdk-validator --help prints.
const SDKValidatorHelp = `statuscheck-sdk-validator: statuscheck validate as an operator-sdk external validator.

Usage:
  operator-sdk bundle validate ./bundle --alpha-select-external "$(go env GOPATH)/bin/statuscheck-sdk-validator"
  statuscheck-sdk-validator BUNDLE_ROOT

operator-sdk runs it with the bundle root as its only argument and decodes
one operator-framework/api ManifestResult from its stdout: the findings of
statuscheck validate (errors and warnings). It exits 0 whenever it could
validate, whatever it found, and 2 with nothing on stdout when it could not
(a file-based catalog is not a bundle: statuscheck validate reads those).

STATUSCHECK_ARGS adds validate flags, split as a POSIX shell splits words:
  STATUSCHECK_ARGS='--require-status-source --fail-on warning'
`

// SDKValidator runs statuscheck-sdk-validator: args are its arguments
// (without the program name), extra is $STATUSCHECK_ARGS.
func SDKValidator(args []string, extra string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprint(stdout, SDKValidatorHelp)
		return result.ExitOK
	}
	if len(args) != 1 {
		fmt.Fprintf(stderr, "statuscheck-sdk-validator: want one BUNDLE_ROOT (as operator-sdk bundle validate --alpha-select-external runs it), got %d arguments; --help says more\n", len(args))
		return result.ExitFailure
	}
	if catalog.IsCatalog(args[0]) {
		fmt.Fprintf(stderr, "statuscheck-sdk-validator: %s is a file-based catalog, not a bundle root: operator-sdk bundle validate gives a bundle; validate a catalog with statuscheck validate\n", args[0])
		return result.ExitFailure
	}
	words, err := shlex.Split(extra)
	if err != nil {
		fmt.Fprintf(stderr, "statuscheck-sdk-validator: STATUSCHECK_ARGS %q: %v\n", extra, err)
		return result.ExitFailure
	}
	full := append([]string{"validate", "-o", "manifest-result"}, words...)
	return Main(append(full, args[0]), stdout, stderr)
}
