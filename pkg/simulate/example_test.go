package simulate_test

import (
	"fmt"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/simulate"
	"github.com/statuscheck/statuscheck/pkg/trace"
)

// A trace built in Go, replayed under OLM's gate: the user changes the
// spec, OLM checks before the operator has reported on the new
// generation, and replaces the operator.
func ExampleReplay() {
	src := &v1alpha1.StatusSource{APIVersion: "cool.operators.corp/v1beta1", Kind: "CoolOperator", Name: "cool-operator"}
	initial := map[string]interface{}{
		"apiVersion": src.APIVersion, "kind": src.Kind,
		"metadata": map[string]interface{}{"name": src.Name, "generation": int64(15)},
		"spec":     map[string]interface{}{"storageLayer": "PostgreSQL"},
		"status": map[string]interface{}{"conditions": []interface{}{map[string]interface{}{
			"type": "Upgradeable", "status": "True", "reason": "Idle", "message": "", "lastTransitionTime": "2024-01-01T00:00:00Z", "observedGeneration": int64(15)}}},
	}
	steps := []trace.Step{
		{Actor: v1alpha1.ActorUser, Verb: v1alpha1.VerbUpdate, Value: map[string]interface{}{"spec": map[string]interface{}{"storageLayer": "MariaDB"}}},
		{Actor: v1alpha1.ActorOLM, Verb: v1alpha1.VerbCheck},
		{Actor: v1alpha1.ActorOLM, Verb: v1alpha1.VerbUpgrade},
	}
	tr := trace.FromSteps("storage-migration", src, initial, steps)
	cfg := &simulate.Config{Source: src, StatusSubresource: true,
		Policies: []contract.Policy{contract.PolicyOLM, contract.PolicyNaive}, Primary: contract.PolicyOLM}
	sum, err := simulate.Replay(tr, cfg, func(r simulate.Row) error {
		fmt.Printf("%d %s %s: generation %d, %s\n", r.Outcome.Step, r.Step.Actor, r.Step.Verb, r.Generation, r.Condition)
		return nil
	})
	if err != nil {
		panic(err)
	}
	for _, v := range sum.Violations {
		fmt.Printf("%s [%s] at step %d\n", v.Rule, v.Policy, v.Step)
	}
	// Output:
	// 1 user update: generation 16, True og=15
	// 2 olm check: generation 16, True og=15
	// 3 olm upgrade: generation 16, True og=15
	// unsafe-approval [naive] at step 2
	// upgrade-while-blocked [olm] at step 3
	// unsafe-approval [naive] at step 3
}
