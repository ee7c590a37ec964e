package contract_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/statuscheck/statuscheck/pkg/contract"
)

// The gate on an object as a client-go informer or a dynamic client hands
// it out: parse the annotation, read the observation, decide.
func ExampleObservationFrom() {
	src, problems := contract.Parse(`{"apiVersion":"hco.kubevirt.io/v1beta1","kind":"HyperConverged","name":"kubevirt-hyperconverged"}`)
	if len(problems) > 0 {
		panic(problems[0].String())
	}
	hco := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "hco.kubevirt.io/v1beta1", "kind": "HyperConverged",
		"metadata": map[string]interface{}{"name": "kubevirt-hyperconverged", "generation": int64(16)},
		"status": map[string]interface{}{"conditions": []interface{}{map[string]interface{}{
			"type": "Upgradeable", "status": "True", "observedGeneration": int64(15)}}},
	}}
	obs := contract.ObservationFrom(hco, src)
	for _, p := range contract.Policies() {
		d := contract.Gate(p, src, obs)
		fmt.Printf("%s: %s (%s)\n", p, d.Verdict, d.Reason)
	}
	// Output:
	// olm: Block (Upgradeable=True is outdated (observedGeneration 15, generation 16))
	// strict: Block (Upgradeable=True is outdated (observedGeneration 15, generation 16))
	// naive: Allow (Upgradeable=True)
}
