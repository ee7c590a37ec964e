package simulate

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/contract"
)

func cr(gen int64, spec, status map[string]interface{}) map[string]interface{} {
	o := map[string]interface{}{
		"apiVersion": "cool.operators.corp/v1beta1", "kind": "CoolOperator",
		"metadata": map[string]interface{}{"name": "cool-operator", "generation": gen},
		"spec":     spec,
	}
	if status != nil {
		o["status"] = status
	}
	return o
}

func mustInitial(t testing.TB, cfg *Config, cr, oc map[string]interface{}) State {
	t.Helper()
	s, err := Initial(cfg, cr, oc)
	require.NoError(t, err)
	return s
}

func up(status string, og int64) map[string]interface{} {
	return map[string]interface{}{"conditions": []interface{}{
		map[string]interface{}{"type": "Upgradeable", "status": status, "observedGeneration": og}}}
}

// TestGenerationModel pins the apiserver's generation rules
// (apiextensions-apiserver pkg/registry/customresource/strategy.go).
func TestGenerationModel(t *testing.T) {
	spec := map[string]interface{}{"storageLayer": "PostgreSQL"}
	tests := []struct {
		name        string
		subresource bool
		initial     map[string]interface{}
		step        Step
		wantGen     int64
		wantExists  bool
		wantStatus  string
	}{
		{name: "a spec change bumps generation", subresource: true, initial: cr(5, spec, up("True", 5)),
			step: Step{Actor: v1alpha1.ActorUser, Verb: v1alpha1.VerbUpdate, Value: map[string]interface{}{"spec": map[string]interface{}{"storageLayer": "MariaDB"}}}, wantGen: 6, wantExists: true, wantStatus: "True"},
		{name: "writing the same spec does not", subresource: true, initial: cr(5, spec, nil),
			step: Step{Actor: v1alpha1.ActorUser, Verb: v1alpha1.VerbUpdate, Value: map[string]interface{}{"spec": map[string]interface{}{"storageLayer": "PostgreSQL"}}}, wantGen: 5, wantExists: true},
		{name: "labels and annotations never do", subresource: true, initial: cr(5, spec, nil),
			step: Step{Actor: v1alpha1.ActorUser, Verb: v1alpha1.VerbUpdate, Value: map[string]interface{}{"metadata": map[string]interface{}{"labels": map[string]interface{}{"a": "b"}, "annotations": map[string]interface{}{"x": "y"}, "finalizers": []interface{}{"f"}}}}, wantGen: 5, wantExists: true},
		{name: "a client cannot set generation", subresource: true, initial: cr(5, spec, nil),
			step: Step{Actor: v1alpha1.ActorUser, Verb: v1alpha1.VerbUpdate, Value: map[string]interface{}{"metadata": map[string]interface{}{"generation": int64(99)}}}, wantGen: 5, wantExists: true},
		{name: "a status write through /status never does", subresource: true, initial: cr(5, spec, up("True", 4)),
			step: Step{Actor: v1alpha1.ActorOperator, Verb: v1alpha1.VerbUpdateStatus, Value: up("False", 5)}, wantGen: 5, wantExists: true, wantStatus: "False"},
		{name: "without the subresource a status write does", subresource: false, initial: cr(5, spec, up("True", 4)),
			step: Step{Actor: v1alpha1.ActorOperator, Verb: v1alpha1.VerbUpdateStatus, Value: up("True", 5)}, wantGen: 6, wantExists: true, wantStatus: "True"},
		{name: "with the subresource status in a main write is dropped", subresource: true, initial: cr(5, spec, up("True", 5)),
			step: Step{Actor: v1alpha1.ActorUser, Verb: v1alpha1.VerbUpdate, Value: map[string]interface{}{"status": up("False", 5)}}, wantGen: 5, wantExists: true, wantStatus: "True"},
		{name: "without it status in a main write lands and bumps", subresource: false, initial: cr(5, spec, up("True", 5)),
			step: Step{Actor: v1alpha1.ActorUser, Verb: v1alpha1.VerbUpdate, Value: map[string]interface{}{"status": up("False", 5), "spec": map[string]interface{}{"storageLayer": "MariaDB"}}}, wantGen: 6, wantExists: true, wantStatus: "False"},
		{name: "create sets generation 1 and drops status", subresource: true, initial: nil,
			step: Step{Actor: v1alpha1.ActorUser, Verb: v1alpha1.VerbCreate, Value: cr(9, spec, up("True", 9))}, wantGen: 1, wantExists: true},
		{name: "delete without finalizers removes it", subresource: true, initial: cr(5, spec, nil),
			step: Step{Actor: v1alpha1.ActorUser, Verb: v1alpha1.VerbDelete}, wantExists: false},
		{name: "delete with finalizers sets deletionTimestamp, which bumps", subresource: true,
			initial: map[string]interface{}{"apiVersion": "a/v1", "kind": "K", "metadata": map[string]interface{}{"name": "n", "generation": int64(5), "finalizers": []interface{}{"x"}}},
			step:    Step{Actor: v1alpha1.ActorUser, Verb: v1alpha1.VerbDelete}, wantGen: 6, wantExists: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := benchConfig()
			cfg.StatusSubresource = tt.subresource
			s := mustInitial(t, cfg, tt.initial, nil)
			next, _, err := Next(cfg, s, tt.step)
			require.NoError(t, err)
			assert.Equal(t, tt.wantExists, next.CR.Exists)
			if tt.wantExists {
				assert.Equal(t, tt.wantGen, next.CR.Generation)
			}
			if tt.wantStatus != "" {
				c := contract.Find(next.CR.Conditions, contract.ConditionUpgradeable)
				require.NotNil(t, c)
				assert.Equal(t, tt.wantStatus, c.Status)
			}
			// The state before is untouched: maps are never changed in place.
			if tt.initial != nil {
				assert.Equal(t, mustInitial(t, cfg, tt.initial, nil).CR.Generation, s.CR.Generation)
				assert.Equal(t, NewObject(tt.initial).Body, s.CR.Body)
			}
		})
	}
}

func TestOperatorConditionSync(t *testing.T) {
	cfg := benchConfig()
	cfg.Source.Handshake = &v1alpha1.Handshake{Mode: v1alpha1.HandshakeOperatorCondition}
	s := mustInitial(t, cfg, cr(1, map[string]interface{}{}, nil), nil)
	var err error
	s, _, err = Next(cfg, s, Step{Actor: v1alpha1.ActorOperator, Verb: v1alpha1.VerbUpdate, Target: v1alpha1.TargetOperatorCondition,
		Value: map[string]interface{}{"spec": map[string]interface{}{"conditions": []interface{}{condition("Upgradeable", false)}}}})
	require.NoError(t, err)
	assert.Equal(t, int64(2), s.OC.Generation, "a spec write bumps the OperatorCondition")
	assert.Empty(t, s.OC.Conditions, "OLM has not copied it yet")
	s, _, err = Next(cfg, s, Step{Actor: v1alpha1.ActorOLM, Verb: v1alpha1.VerbUpdateStatus, Target: v1alpha1.TargetOperatorCondition})
	require.NoError(t, err)
	require.Len(t, s.OC.Conditions, 1)
	assert.Equal(t, "False", s.OC.Conditions[0].Status)
	assert.Equal(t, int64(2), *s.OC.Conditions[0].ObservedGeneration, "syncOperatorConditionStatus stamps the generation")
	s, out, err := Next(cfg, s, Step{Actor: v1alpha1.ActorOLM, Verb: v1alpha1.VerbCheck})
	require.NoError(t, err)
	assert.Equal(t, contract.Block, out.Verdicts[0].Verdict)
	_ = s
}

func TestNonsenseSteps(t *testing.T) {
	cfg := benchConfig()
	tests := []struct {
		name    string
		initial map[string]interface{}
		step    Step
		msg     string
	}{
		{name: "a status write before create", step: Step{Actor: v1alpha1.ActorOperator, Verb: v1alpha1.VerbUpdateStatus, Value: up("True", 1)}, msg: "status write before the CR exists"},
		{name: "an update before create", step: Step{Actor: v1alpha1.ActorUser, Verb: v1alpha1.VerbUpdate, Value: map[string]interface{}{}}, msg: "update, but the CR does not exist"},
		{name: "a create of what exists", initial: cr(1, nil, nil), step: Step{Actor: v1alpha1.ActorUser, Verb: v1alpha1.VerbCreate, Value: cr(1, nil, nil)}, msg: "create, but the CR exists already"},
		{name: "a delete of nothing", step: Step{Actor: v1alpha1.ActorUser, Verb: v1alpha1.VerbDelete}, msg: "delete, but the CR does not exist"},
		{name: "a request without a handshake", initial: cr(1, nil, nil), step: Step{Actor: v1alpha1.ActorOLM, Verb: v1alpha1.VerbRequest}, msg: "OLM request, but the status source declares no RequestAck handshake"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.step.File, tt.step.Line = "t.yaml", 7
			_, _, err := Next(cfg, mustInitial(t, cfg, tt.initial, nil), tt.step)
			var se *StepError
			require.True(t, errors.As(err, &se), "%v", err)
			assert.Contains(t, err.Error(), "t.yaml:7: step 1: "+tt.msg)
		})
	}
}

// TestReplayStreamsInConstantMemory replays traces of 20k and 200k steps
// and compares the heap in use: it must not grow with the trace, without
// a CRD and with one (every write through the apiserver's code, the
// replay's memo bounded).
func TestReplayStreamsInConstantMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 30 MB trace")
	}
	for _, crd := range []string{"", goodCRD} {
		t.Run("crd="+crd, func(t *testing.T) {
			heap := func(n int) uint64 {
				p := filepath.Join(t.TempDir(), "trace.yaml")
				writeTrace(t, p, n)
				var most uint64
				got := replayWithEmit(t, p, crd, func(r Row) error {
					if r.Outcome.Step%5000 == 0 {
						runtime.GC()
						var ms runtime.MemStats
						runtime.ReadMemStats(&ms)
						most = max(most, ms.HeapAlloc)
					}
					return nil
				})
				require.Equal(t, n, got.Steps)
				require.NoError(t, os.Remove(p))
				return most
			}
			small, large := heap(20_000), heap(200_000)
			t.Logf("heap in use: %d KiB for 20k steps, %d KiB for 200k", small>>10, large>>10)
			assert.Less(t, large, small+4<<20, "ten times the steps may not cost more than 4 MiB more heap")
		})
	}
}

// condition is an Upgradeable-style condition as meta.SetStatusCondition
// writes it.
func condition(t string, ok bool) map[string]interface{} {
	s := map[bool]string{true: "True", false: "False"}[ok]
	return map[string]interface{}{"type": t, "status": s, "reason": "R", "message": "m", "lastTransitionTime": "2024-01-01T00:00:00Z"}
}
