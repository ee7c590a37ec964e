package olm

import (
	"context"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/statuscheck/statuscheck/pkg/contract"
)

// The claims of docs/contract.md §3 about OLM's gate and its status copy,
// each on the real OperatorCondition controllers and olm-operator, and
// compared with what statuscheck's model of them says
// (contract.OperatorConditionObservation, the olm policy).

// TestContractStatusCopy: syncOperatorConditionStatus copies
// spec.conditions into status.conditions, setting observedGeneration to
// the generation; of two entries of one type the last wins; a type that
// leaves spec.conditions stays in status, and its observedGeneration falls
// behind, so a False left there blocks for good ("outdated").
func TestContractStatusCopy(t *testing.T) {
	w := newWorld(t, "operatorcondition")
	w.running(true)

	w.writeOC(v1, "cool-operator", func(oc *operatorsv2.OperatorCondition) {
		oc.Spec.Conditions = []metav1.Condition{
			{Type: "Upgradeable", Status: metav1.ConditionTrue, Reason: "First", Message: "first", LastTransitionTime: metav1.Now()},
			{Type: "Upgradeable", Status: metav1.ConditionFalse, Reason: "Second", Message: "second", LastTransitionTime: metav1.Now()},
		}
	})
	w.waitOCStatus(v1, metav1.ConditionFalse)
	c := meta.FindStatusCondition(w.oc(v1).Status.Conditions, "Upgradeable")
	require.NotNil(t, c)
	assert.Equal(t, "Second", c.Reason, "the last entry of a type wins")

	w.writeOC(v1, "cool-operator", func(oc *operatorsv2.OperatorCondition) { oc.Spec.Conditions = nil })
	time.Sleep(time.Second) // OLM's reconciler has had its chance to copy
	oc := w.oc(v1)
	c = meta.FindStatusCondition(oc.Status.Conditions, "Upgradeable")
	require.NotNil(t, c, "a type that left spec.conditions stays in status")
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Less(t, c.ObservedGeneration, oc.Generation, "its observedGeneration falls behind")

	// The gate finds it outdated and holds the replacement; the model's
	// olm policy, on the same OperatorCondition, says the same.
	w.installCSV(v2, "0.2.0", v1)
	w.waitCSV(v2, operatorsv1alpha1.CSVPhasePending, operatorsv1alpha1.CSVReasonOperatorConditionNotUpgradeable)
	csv, err := w.c.OLM.OperatorsV1alpha1().ClusterServiceVersions(w.ns).Get(context.Background(), v2, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, csv.Status.Message, "outdated")
	d := modelGate(t, w.oc(v1))
	assert.Equal(t, contract.Block, d.Verdict, "%s", d.Reason)
	assert.Contains(t, d.Reason, "outdated")
}

// TestContractUnknownAllows: an Upgradeable=Unknown the operator mirrors
// lets the replacement through (isOperatorUpgradeable blocks only on
// False or an outdated copy), as the model's olm policy says.
func TestContractUnknownAllows(t *testing.T) {
	w := newWorld(t, "operatorcondition")
	w.running(true)
	w.mirrors(v1, metav1.ConditionUnknown, "Starting")
	w.waitOCStatus(v1, metav1.ConditionUnknown)
	assert.Equal(t, contract.Allow, modelGate(t, w.oc(v1)).Verdict)
	w.installCSV(v2, "0.2.0", v1)
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
}

// modelGate is the model's olm policy on an OperatorCondition of the
// cluster.
func modelGate(t *testing.T, oc *operatorsv2.OperatorCondition) contract.Decision {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(oc)
	require.NoError(t, err)
	return contract.Gate(contract.PolicyOLM, nil, contract.OperatorConditionObservation(&unstructured.Unstructured{Object: obj}))
}
