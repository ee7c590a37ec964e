package validate_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/manifest"
	"github.com/statuscheck/statuscheck/pkg/validate"
)

// A bundle held in memory (a CI step that renders manifests, an operator
// checking itself): parse the documents, assemble the bundle, check it.
func ExampleCheck() {
	var docs []*manifest.Document
	for _, name := range []string{"cool-operator.clusterserviceversion.yaml", "cool.operators.corp_cooloperators.yaml"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "bundles", "good", "manifests", name))
		if err != nil {
			panic(err)
		}
		// Drop the CRD's status subresource, as a typo in a kustomization might.
		data = []byte(strings.Replace(string(data), "    subresources:\n      status: {}\n", "", 1))
		parsed, err := manifest.Parse(name, data, manifest.DefaultLimits)
		if err != nil {
			panic(err)
		}
		docs = append(docs, parsed[0])
	}
	b := bundle.FromDocuments("in-memory", docs, nil)
	res := validate.Check(b, validate.Options{})
	for _, f := range res.Findings {
		fmt.Printf("%s %s (%s:%d)\n", f.Severity, f.Rule, f.File, f.Line)
	}
	for _, p := range res.Protection {
		fmt.Printf("%s held: %t\n", p.Manager, p.Held)
	}
	// Output:
	// error never-upgradeable (cool-operator.clusterserviceversion.yaml:11)
	// error upgrade-not-held-olm-v0 (cool-operator.clusterserviceversion.yaml:11)
	// error status-subresource-disabled (cool.operators.corp_cooloperators.yaml:14)
	// olm-v0 held: false
	// olm-v1 held: false
	// none held: false
}

// Protection is the verdict on its own: the example the README's quick
// start validates declares statuscheck bridge under a RequestAck handshake,
// which holds its upgrade on OLM v0, and nothing can hold it on OLM v1 or
// without OLM.
func ExampleProtection() {
	b, err := bundle.Load(filepath.Join("..", "..", "testdata", "bundles", "protected"), bundle.Options{})
	if err != nil {
		panic(err)
	}
	ctx := validate.NewContext(b, validate.Options{})
	for _, p := range validate.Protection(ctx) {
		fmt.Printf("%s: held %t by %q\n", p.Manager, p.Held, p.By)
	}
	// Output:
	// olm-v0: held true by "bridge"
	// olm-v1: held false by ""
	// none: held false by ""
}
