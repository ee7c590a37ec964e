package bridge_test

import (
	"encoding/json"
	"fmt"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
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

// Under RequestAck the request lives on the CR: the first decision writes
// it (the token and its record, under the CR's resourceVersion), and the
// next decision reads it back from the CR, so a restarted bridge or a
// second replica decides the same.
func ExampleDecide_requestAck() {
	src := &v1alpha1.StatusSource{APIVersion: "cool.operators.corp/v1beta1", Kind: "CoolOperator", Name: "cool-operator",
		Handshake: &v1alpha1.Handshake{Mode: v1alpha1.HandshakeRequestAck, Request: &v1alpha1.HandshakeRequest{SpecPath: ".spec.upgradeRequest"}}}
	cr := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "cool.operators.corp/v1beta1", "kind": "CoolOperator",
		"metadata": map[string]interface{}{"name": "cool-operator", "generation": int64(3), "resourceVersion": "41"},
		"status": map[string]interface{}{"conditions": []interface{}{map[string]interface{}{
			"type": "Upgradeable", "status": "True", "reason": "Idle", "message": "", "observedGeneration": int64(3),
			"lastTransitionTime": "2024-01-01T00:00:00Z"}}},
	}}
	next := operatorsv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Name: "cool-operator.v0.2.0"},
		Spec: operatorsv1alpha1.ClusterServiceVersionSpec{Replaces: "cool-operator.v0.1.0"}}
	in := bridge.Input{Source: src, CR: cr, Running: "cool-operator.v0.1.0", CSVs: []operatorsv1alpha1.ClusterServiceVersion{next},
		OC: &operatorsv2.OperatorCondition{}, Now: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}

	d := bridge.Decide(in)
	fmt.Println(d.Condition.Status, d.Condition.Reason, d.Request.Record.Token, d.Request.Record.CSV)

	// The apiserver applies the patch: the spec moves to generation 4,
	// and the operator answers for it.
	doc, _ := json.Marshal(cr.Object)
	patch, _ := json.Marshal(d.Request.Patch)
	doc, _ = jsonpatch.MergePatch(doc, patch)
	_ = json.Unmarshal(doc, &cr.Object)
	cr.SetGeneration(4)
	conds, _, _ := unstructured.NestedSlice(cr.Object, "status", "conditions")
	conds[0].(map[string]interface{})["observedGeneration"] = int64(4)
	_ = unstructured.SetNestedSlice(cr.Object, conds, "status", "conditions")
	d = bridge.Decide(in)
	fmt.Println(d.Condition.Status, d.Condition.Reason, d.Request == nil)
	// Output:
	// False UpgradeRequested 1 cool-operator.v0.2.0
	// True UpgradeRequestAnswered true
}

// A second writer of the OperatorCondition's Upgradeable entry (an
// operator still writing its own OperatorCondition) is seen in
// managedFields and in an entry that is not the one the bridge last wrote
// (its digest, on the OperatorCondition); the bridge then writes nothing.
func ExampleOtherWriter() {
	entry := metav1.Condition{Type: "Upgradeable", Status: metav1.ConditionTrue, Reason: "ReconcileCompleted"}
	oc := &operatorsv2.OperatorCondition{
		ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "olm", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:deployments":{}}}`)}},
			{Manager: "hyperconverged-cluster-operator", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:conditions":{}}}`)}},
		}},
		Spec: operatorsv2.OperatorConditionSpec{Conditions: []metav1.Condition{entry}},
	}
	fmt.Printf("%q\n", bridge.OtherWriter(oc))

	// The entry the bridge wrote last (its digest kept beside it) is the
	// bridge's, whoever else wrote other entries of the list.
	oc.Annotations = map[string]string{bridge.AnnotationEntry: bridge.EntryDigest(entry)}
	fmt.Printf("%q\n", bridge.OtherWriter(oc))
	// Output:
	// "hyperconverged-cluster-operator"
	// ""
}
