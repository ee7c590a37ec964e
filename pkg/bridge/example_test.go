package bridge_test

import (
	"fmt"
	"time"

	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/bridge"
)

// The bridge's decision on values: the operator's CR says Upgradeable=True
// for the generation it is at, so the OperatorCondition's entry becomes
// True; after a spec change it is outdated, and the entry is False.
func ExampleDecide() {
	src := &v1alpha1.StatusSource{APIVersion: "cool.operators.corp/v1beta1", Kind: "CoolOperator", Name: "cool-operator"}
	cr := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "cool.operators.corp/v1beta1", "kind": "CoolOperator",
		"metadata": map[string]interface{}{"name": "cool-operator", "generation": int64(3)},
		"status": map[string]interface{}{"conditions": []interface{}{map[string]interface{}{
			"type": "Upgradeable", "status": "True", "reason": "Idle", "message": "", "observedGeneration": int64(3),
			"lastTransitionTime": "2024-01-01T00:00:00Z"}}},
	}}
	oc := &operatorsv2.OperatorCondition{ObjectMeta: metav1.ObjectMeta{Name: "cool-operator.v0.1.0"}}
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

	d := bridge.Decide(bridge.Input{Source: src, CR: cr, OC: oc, Running: oc.Name, Now: now})
	fmt.Println(d.Condition.Status, d.Condition.Reason, d.WriteOC)

	cr.SetGeneration(4) // a user's spec change the operator has not reconciled
	d = bridge.Decide(bridge.Input{Source: src, CR: cr, OC: oc, Running: oc.Name, Now: now})
	fmt.Println(d.Condition.Status, d.Condition.Reason+":", d.Condition.Message)
	// Output:
	// True StatusSourceUpgradeable true
	// False StatusSourceOutdated: Upgradeable=True is outdated (observedGeneration 3, generation 4)
}
