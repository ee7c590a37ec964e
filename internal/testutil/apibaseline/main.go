// Command apibaseline is the anchor of statuscheck's whole-process
// benchmark (cmd/statuscheck BenchmarkProcess): what operator-sdk bundle
// validate runs on a bundle, without operator-sdk around it.
//
//	apibaseline BUNDLE_DIR...
//
// For each directory it loads the bundle with operator-framework/api's
// manifests.GetBundleFromDir and runs validation.DefaultBundleValidators on
// bundle.ObjectsToValidate(), printing every error the validators report,
// one per line after the directory. It exits 2 when a bundle could not be
// loaded and 0 otherwise, whatever the validators found; without
// arguments it exits 0 at once (the start-up alone). It is a test helper,
// built only by the benchmark.
package main

import (
	"fmt"
	"os"

	"github.com/operator-framework/api/pkg/manifests"
	apivalidation "github.com/operator-framework/api/pkg/validation"
)

func main() {
	code := 0
	for _, d := range os.Args[1:] {
		bun, err := manifests.GetBundleFromDir(d)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 2
			continue
		}
		for _, r := range apivalidation.DefaultBundleValidators.Validate(bun.ObjectsToValidate()...) {
			for _, e := range r.Errors {
				fmt.Println(d, e.Error())
			}
		}
	}
	os.Exit(code)
}
