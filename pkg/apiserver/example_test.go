package apiserver_test

import (
	"fmt"
	"os"
	"path/filepath"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/apiserver"
)

// ExampleResource_Values: where a CRD lets a write's strings be told
// apart only by their own checks and equality, and what a leaf's own
// check says.
func ExampleResource_Values() {
	data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "testdata/bundles/good/manifests/cool.operators.corp_cooloperators.yaml"))
	if err != nil {
		panic(err)
	}
	crd := &apiextv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		panic(err)
	}
	r, err := apiserver.NewResource(crd, "v1beta1")
	if err != nil {
		panic(err)
	}
	at := r.Values().Child("status").Child("conditions").Item().Child("lastTransitionTime")
	fmt.Println(at.Leaf(), at.Valid("2026-12-01T20:00:00Z"), at.Valid("yesterday"))
	layer := r.Values().Child("spec").Child("storageLayer")
	fmt.Println(layer.Leaf(), layer.Valid("MariaDB"), layer.Valid("Oracle"))
	fmt.Println(r.ShiftsGenerations())
	// Output:
	// true true false
	// true true false
	// true
}
