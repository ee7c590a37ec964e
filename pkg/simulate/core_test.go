package simulate

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/pkg/apiserver"
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
			step: Step{Actor: ActorUser, Verb: VerbUpdate, Value: map[string]interface{}{"spec": map[string]interface{}{"storageLayer": "MariaDB"}}}, wantGen: 6, wantExists: true, wantStatus: "True"},
		{name: "writing the same spec does not", subresource: true, initial: cr(5, spec, nil),
			step: Step{Actor: ActorUser, Verb: VerbUpdate, Value: map[string]interface{}{"spec": map[string]interface{}{"storageLayer": "PostgreSQL"}}}, wantGen: 5, wantExists: true},
		{name: "labels and annotations never do", subresource: true, initial: cr(5, spec, nil),
			step: Step{Actor: ActorUser, Verb: VerbUpdate, Value: map[string]interface{}{"metadata": map[string]interface{}{"labels": map[string]interface{}{"a": "b"}, "annotations": map[string]interface{}{"x": "y"}, "finalizers": []interface{}{"f"}}}}, wantGen: 5, wantExists: true},
		{name: "a client cannot set generation", subresource: true, initial: cr(5, spec, nil),
			step: Step{Actor: ActorUser, Verb: VerbUpdate, Value: map[string]interface{}{"metadata": map[string]interface{}{"generation": int64(99)}}}, wantGen: 5, wantExists: true},
		{name: "a status write through /status never does", subresource: true, initial: cr(5, spec, up("True", 4)),
			step: Step{Actor: ActorOperator, Verb: VerbUpdateStatus, Value: up("False", 5)}, wantGen: 5, wantExists: true, wantStatus: "False"},
		{name: "without the subresource a status write does", subresource: false, initial: cr(5, spec, up("True", 4)),
			step: Step{Actor: ActorOperator, Verb: VerbUpdateStatus, Value: up("True", 5)}, wantGen: 6, wantExists: true, wantStatus: "True"},
		{name: "with the subresource status in a main write is dropped", subresource: true, initial: cr(5, spec, up("True", 5)),
			step: Step{Actor: ActorUser, Verb: VerbUpdate, Value: map[string]interface{}{"status": up("False", 5)}}, wantGen: 5, wantExists: true, wantStatus: "True"},
		{name: "without it status in a main write lands and bumps", subresource: false, initial: cr(5, spec, up("True", 5)),
			step: Step{Actor: ActorUser, Verb: VerbUpdate, Value: map[string]interface{}{"status": up("False", 5), "spec": map[string]interface{}{"storageLayer": "MariaDB"}}}, wantGen: 6, wantExists: true, wantStatus: "False"},
		{name: "create sets generation 1 and drops status", subresource: true, initial: nil,
			step: Step{Actor: ActorUser, Verb: VerbCreate, Value: cr(9, spec, up("True", 9))}, wantGen: 1, wantExists: true},
		{name: "delete without finalizers removes it", subresource: true, initial: cr(5, spec, nil),
			step: Step{Actor: ActorUser, Verb: VerbDelete}, wantExists: false},
		{name: "delete with finalizers sets deletionTimestamp, which bumps", subresource: true,
			initial: map[string]interface{}{"apiVersion": "a/v1", "kind": "K", "metadata": map[string]interface{}{"name": "n", "generation": int64(5), "finalizers": []interface{}{"x"}}},
			step:    Step{Actor: ActorUser, Verb: VerbDelete}, wantGen: 6, wantExists: true},
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

func TestMergePatch(t *testing.T) {
	target := map[string]interface{}{"a": "b", "c": map[string]interface{}{"d": "e", "f": "g"}, "list": []interface{}{1, 2}}
	patch := map[string]interface{}{"a": "z", "c": map[string]interface{}{"f": nil, "h": "i"}, "list": []interface{}{3}, "new": true}
	got := apiserver.MergePatch(target, patch)
	assert.Equal(t, map[string]interface{}{"a": "z", "c": map[string]interface{}{"d": "e", "h": "i"}, "list": []interface{}{3}, "new": true}, got)
	assert.Equal(t, "b", target["a"], "the target is not modified")
	assert.Equal(t, map[string]interface{}{"d": "e", "f": "g"}, target["c"])
	assert.Equal(t, patch, apiserver.CreateMergePatch(target, got), "diffPatch is mergePatch's inverse")
}

func TestOperatorConditionSync(t *testing.T) {
	cfg := benchConfig()
	cfg.Source.Handshake = &contract.Handshake{Mode: contract.HandshakeOperatorCondition}
	s := mustInitial(t, cfg, cr(1, map[string]interface{}{}, nil), nil)
	var err error
	s, _, err = Next(cfg, s, Step{Actor: ActorOperator, Verb: VerbUpdate, Target: TargetOperatorCondition,
		Value: map[string]interface{}{"spec": map[string]interface{}{"conditions": []interface{}{condition("Upgradeable", false)}}}})
	require.NoError(t, err)
	assert.Equal(t, int64(2), s.OC.Generation, "a spec write bumps the OperatorCondition")
	assert.Empty(t, s.OC.Conditions, "OLM has not copied it yet")
	s, _, err = Next(cfg, s, Step{Actor: ActorOLM, Verb: VerbUpdateStatus, Target: TargetOperatorCondition})
	require.NoError(t, err)
	require.Len(t, s.OC.Conditions, 1)
	assert.Equal(t, "False", s.OC.Conditions[0].Status)
	assert.Equal(t, int64(2), *s.OC.Conditions[0].ObservedGeneration, "syncOperatorConditionStatus stamps the generation")
	s, out, err := Next(cfg, s, Step{Actor: ActorOLM, Verb: VerbCheck})
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
		{name: "a status write before create", step: Step{Actor: ActorOperator, Verb: VerbUpdateStatus, Value: up("True", 1)}, msg: "status write before the CR exists"},
		{name: "an update before create", step: Step{Actor: ActorUser, Verb: VerbUpdate, Value: map[string]interface{}{}}, msg: "update, but the CR does not exist"},
		{name: "a create of what exists", initial: cr(1, nil, nil), step: Step{Actor: ActorUser, Verb: VerbCreate, Value: cr(1, nil, nil)}, msg: "create, but the CR exists already"},
		{name: "a delete of nothing", step: Step{Actor: ActorUser, Verb: VerbDelete}, msg: "delete, but the CR does not exist"},
		{name: "a request without a handshake", initial: cr(1, nil, nil), step: Step{Actor: ActorOLM, Verb: VerbRequest}, msg: "OLM request, but the status source declares no RequestAck handshake"},
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

func TestDecodeStepErrors(t *testing.T) {
	tests := []struct {
		step string
		msg  string
	}{
		{"{actor: robot, update: {}}", `unknown actor "robot"`},
		{"{actor: user, edit: {}}", `unknown step field "edit"`},
		{"{actor: user}", "a step needs a verb"},
		{"{update: {}}", "a step needs an actor"},
		{"{actor: user, update: {}, delete: {}}", "one verb per step"},
		{"{actor: user, check: {}}", "user cannot check the status source"},
		{"{actor: olm, updateStatus: {}}", "olm cannot updateStatus the status source"},
		{"{actor: operator, target: Pod, update: {}}", `unknown target "Pod"`},
		{"{actor: olm, check: {expect: Maybe}}", "expect must be Allow or Block"},
		{"{actor: user, update: [1]}", "update needs an object"},
		{"just a string", "a step is a mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.step, func(t *testing.T) {
			body := "apiVersion: statuscheck.operatorframework.io/v1alpha1\nkind: StatusTrace\ninitial: null\nsteps:\n- {actor: olm, check: {}}\n- " + tt.step + "\n"
			tr, err := OpenReader("t.yaml", strings.NewReader(body), OpenOptions{Format: FormatTrace})
			require.NoError(t, err)
			_, err = tr.Next()
			if err == nil {
				_, err = tr.Next()
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "t.yaml:6: "+tt.msg)
		})
	}
}

func TestTraceErrors(t *testing.T) {
	tests := []struct {
		name string
		data string
		opts OpenOptions
		msg  string
	}{
		{name: "yaml that does not parse", data: "apiVersion: statuscheck.operatorframework.io/v1alpha1\nkind: StatusTrace\ninitial:\n  a: [\nsteps:\n- {actor: olm, check: {}}\n", msg: "t.yaml:4:"},
		{name: "a step that does not parse", data: "apiVersion: statuscheck.operatorframework.io/v1alpha1\nkind: StatusTrace\ninitial: null\nsteps:\n- {actor: olm, check: {}}\n- {actor: [\n", msg: "t.yaml:6: invalid YAML"},
		{name: "the wrong apiVersion", data: "apiVersion: v1\nkind: StatusTrace\ninitial: null\nsteps: []\n", opts: OpenOptions{Format: FormatTrace}, msg: `apiVersion is "v1"`},
		{name: "an unknown field", data: "apiVersion: statuscheck.operatorframework.io/v1alpha1\nkind: StatusTrace\ninitial: null\nstep: []\n", msg: `unknown StatusTrace field "step"`},
		{name: "keys after the steps", data: "apiVersion: statuscheck.operatorframework.io/v1alpha1\nkind: StatusTrace\ninitial: null\nsteps:\n- {actor: olm, check: {}}\nmetadata: {name: x}\n", msg: "t.yaml:6: keys after steps"},
		{name: "an empty file", data: "\n\n", msg: "empty trace"},
		{name: "snapshots of other objects only", data: `{"apiVersion":"a.io/v1","kind":"A","metadata":{"name":"one"}}` + "\n" + `{"apiVersion":"a.io/v1","kind":"A","metadata":{"name":"two"}}`,
			opts: OpenOptions{Source: &contract.StatusSource{APIVersion: "a.io/v1", Kind: "A", Name: "three"}}, msg: "t.yaml: no recording of A three in the input; it has A one (1), A two (1)"},
		{name: "a StatusTrace read as snapshots", data: "apiVersion: statuscheck.operatorframework.io/v1alpha1\nkind: StatusTrace\ninitial: null\nsteps: []\n",
			opts: OpenOptions{Format: FormatSnapshots}, msg: "this is a StatusTrace, not a recording of the status source: read it with --format trace"},
		{name: "a snapshot that is not an object", data: `{"apiVersion":"a.io/v1","kind":"A","metadata":{"name":"one"}}` + "\n[1, 2]", msg: "t.yaml:2: a snapshot must be a Kubernetes object"},
		{name: "truncated json", data: `{"apiVersion":"a.io/v1","kind":"A","metadata":{"name":"one"}}` + "\n{\"a\": ", msg: "t.yaml:2: unexpected end of input"},
		{name: "an audit log without a source", data: `{"kind":"Event","apiVersion":"audit.k8s.io/v1","verb":"get"}`, msg: "an audit log needs the status source"},
		{name: "an audit event without a response", data: `{"kind":"Event","apiVersion":"audit.k8s.io/v1","verb":"update","stage":"ResponseComplete","objectRef":{"name":"n","apiGroup":"a.io","resource":"as"}}`,
			opts: OpenOptions{Source: &contract.StatusSource{APIVersion: "a.io/v1", Kind: "A", Name: "n"}}, msg: "t.yaml:1: a update of n has no responseObject"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := OpenReader("t.yaml", strings.NewReader(tt.data), tt.opts)
			if err == nil {
				for err == nil {
					_, err = tr.Next()
				}
				require.False(t, errors.Is(err, io.EOF), "want an error, the trace was read")
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

// TestReplayStreamsInConstantMemory replays traces of 20k and 200k steps
// and compares the heap in use: it must not grow with the trace.
func TestReplayStreamsInConstantMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 20 MB trace")
	}
	heap := func(n int) uint64 {
		p := filepath.Join(t.TempDir(), "trace.yaml")
		writeTrace(t, p, n)
		var most uint64
		sum := replayAll(t, p, func(r Row) error {
			if r.Outcome.Step%5000 == 0 {
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				most = max(most, ms.HeapAlloc)
			}
			return nil
		})
		require.Equal(t, n, sum.Steps)
		require.NoError(t, os.Remove(p))
		return most
	}
	small, large := heap(20_000), heap(200_000)
	t.Logf("heap in use: %d KiB for 20k steps, %d KiB for 200k", small>>10, large>>10)
	assert.Less(t, large, small+4<<20, "ten times the steps may not cost more than 4 MiB more heap")
}

func TestTraceLimits(t *testing.T) {
	steps := strings.Repeat("- {actor: olm, check: {}}\n", 20)
	body := "apiVersion: statuscheck.operatorframework.io/v1alpha1\nkind: StatusTrace\nstatusSource: {apiVersion: a.io/v1, kind: A, name: a}\ninitial: null\nsteps:\n" + steps
	lim := DefaultLimits
	lim.MaxSteps = 10
	tr, err := OpenReader("long.yaml", strings.NewReader(body), OpenOptions{Limits: lim})
	require.NoError(t, err)
	cfg, _, err := (*Context)(nil).Config(tr, []contract.Policy{contract.PolicyOLM}, contract.PolicyOLM)
	require.NoError(t, err)
	_, err = Replay(tr, cfg, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "long.yaml:16: the trace is longer than 10 steps")

	lim = DefaultLimits
	lim.Manifest.MaxFileSize = 100
	long := "apiVersion: statuscheck.operatorframework.io/v1alpha1\nkind: StatusTrace\ninitial: null\nsteps:\n- {actor: user, create: {apiVersion: a.io/v1, kind: A, metadata: {name: " + strings.Repeat("a", 200) + "}}}\n"
	tr, err = OpenReader("wide.yaml", strings.NewReader(long), OpenOptions{Limits: lim})
	if err == nil {
		_, err = tr.Next()
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "wide.yaml:5:")
	assert.Contains(t, err.Error(), "100-byte limit")

	tr, err = OpenReader("big.yaml", strings.NewReader("apiVersion: a.io/v1\nkind: A\nmetadata: {name: a}\ndata: "+strings.Repeat("x", 300<<10)+"\n"), OpenOptions{Limits: lim})
	require.Error(t, err, "a snapshot over the limit")
	assert.Contains(t, err.Error(), "big.yaml")
}
