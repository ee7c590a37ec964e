package contract

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
)

const base = `"apiVersion":"hco.kubevirt.io/v1beta1","kind":"HyperConverged","name":"kubevirt-hyperconverged"`

func TestParse(t *testing.T) {
	tests := []struct {
		name  string
		value string
		// want lists "field: message fragment" for each expected problem.
		want []string
	}{
		{name: "minimal", value: `{` + base + `}`},
		{name: "every field", value: `{` + base + `,"namespace":"kubevirt-hyperconverged","conditions":["Upgradeable","Degraded"],"whenAbsent":"Block","handshake":{"mode":"RequestAck","request":{"annotation":"operatorframework.io/upgrade-request"},"ack":{"statusPath":".status.observedUpgradeRequest"}}}`},
		{name: "whitespace and a spec request", value: "{\n  " + base + ",\n  \"handshake\": {\"mode\": \"RequestAck\", \"request\": {\"specPath\": \".spec.upgradeRequest\"}}\n}"},
		{name: "nulls for optional fields", value: `{` + base + `,"namespace":null,"handshake":null}`},
		{name: "not json", value: `apiVersion: x`, want: []string{"the annotation value is not JSON"}},
		{name: "empty", value: ``, want: []string{"the annotation value is not JSON: the value is empty"}},
		{name: "a list", value: `[1]`, want: []string{"the annotation value must be a JSON object, not a list"}},
		{name: "truncated", value: `{` + base, want: []string{"is not JSON"}},
		{name: "trailing text", value: `{` + base + `} x`, want: []string{"after the JSON object"}},
		{name: "missing required fields", value: `{}`, want: []string{"apiVersion: is required", "kind: is required", "name: is required"}},
		{name: "empty name", value: `{"apiVersion":"a.io/v1","kind":"K","name":" "}`, want: []string{"name: is required"}},
		{name: "unknown field with a suggestion", value: `{` + base + `,"condtions":["Upgradeable"]}`, want: []string{`condtions: unknown field "condtions" (did you mean "conditions"?)`}},
		{name: "field in the wrong case", value: `{"ApiVersion":"a.io/v1","kind":"K","name":"n"}`, want: []string{`ApiVersion: unknown field "ApiVersion" (did you mean "apiVersion"?)`, "apiVersion: is required"}},
		{name: "repeated field", value: `{` + base + `,"whenAbsent":"Block","whenAbsent":"Allow"}`, want: []string{"whenAbsent: is given twice"}},
		{name: "wrong type", value: `{"apiVersion":1,"kind":"K","name":"n"}`, want: []string{"apiVersion: must be a string, not 1"}},
		{name: "core group", value: `{"apiVersion":"v1","kind":"ConfigMap","name":"n"}`, want: []string{`apiVersion: "v1" has no group`}},
		{name: "too many slashes", value: `{"apiVersion":"a/b/c","kind":"K","name":"n"}`, want: []string{"apiVersion: \"a/b/c\" is not GROUP/VERSION"}},
		{name: "bad group", value: `{"apiVersion":"Bad_Group/v1","kind":"K","name":"n"}`, want: []string{`apiVersion: group "Bad_Group"`}},
		{name: "bad kind", value: `{"apiVersion":"a.io/v1","kind":"my-kind","name":"n"}`, want: []string{`kind: "my-kind" is not a kind`}},
		{name: "bad name", value: `{"apiVersion":"a.io/v1","kind":"K","name":"Not_Valid"}`, want: []string{`name: "Not_Valid"`}},
		{name: "bad namespace", value: `{` + base + `,"namespace":"a.b"}`, want: []string{`namespace: "a.b"`}},
		{name: "conditions without Upgradeable", value: `{` + base + `,"conditions":["Ready"]}`, want: []string{`conditions: must contain "Upgradeable"`}},
		{name: "misspelt Upgradeable", value: `{` + base + `,"conditions":["Upgradable"]}`, want: []string{`("Upgradable" is a misspelling of it)`}},
		{name: "empty conditions", value: `{` + base + `,"conditions":[]}`, want: []string{"conditions: must not be empty"}},
		{name: "conditions not strings", value: `{` + base + `,"conditions":[1]}`, want: []string{"conditions: must be a list of condition type strings"}},
		{name: "repeated condition", value: `{` + base + `,"conditions":["Upgradeable","Upgradeable"]}`, want: []string{`conditions[1]: "Upgradeable" is listed twice`}},
		{name: "bad whenAbsent", value: `{` + base + `,"whenAbsent":"block"}`, want: []string{`whenAbsent: "block" is not one of Allow, Block`}},
		{name: "handshake without mode", value: `{` + base + `,"handshake":{}}`, want: []string{"handshake.mode: is required"}},
		{name: "unknown mode", value: `{` + base + `,"handshake":{"mode":"Lock"}}`, want: []string{`handshake.mode: "Lock" is not one of`}},
		{name: "request on mode None", value: `{` + base + `,"handshake":{"mode":"None","request":{"specPath":".spec.x"}}}`, want: []string{"handshake.request: applies only to mode RequestAck"}},
		{name: "RequestAck without request", value: `{` + base + `,"handshake":{"mode":"RequestAck"}}`, want: []string{"handshake.request: is required for RequestAck"}},
		{name: "request with both", value: `{` + base + `,"handshake":{"mode":"RequestAck","request":{"specPath":".spec.x","annotation":"a/b"}}}`, want: []string{"handshake.request: has both specPath and annotation"}},
		{name: "request with neither", value: `{` + base + `,"handshake":{"mode":"RequestAck","request":{}}}`, want: []string{"handshake.request: needs specPath or annotation"}},
		{name: "spec path outside spec", value: `{` + base + `,"handshake":{"mode":"RequestAck","request":{"specPath":".status.x"}}}`, want: []string{`handshake.request.specPath: ".status.x" must start with .spec.`}},
		{name: "spec path with an index", value: `{` + base + `,"handshake":{"mode":"RequestAck","request":{"specPath":".spec.x[0]"}}}`, want: []string{"is not a path of field names"}},
		{name: "the request annotation is the manager's record", value: `{` + base + `,"handshake":{"mode":"RequestAck","request":{"annotation":"operatorframework.io/status-source-request"},"ack":{"statusPath":".status.a"}}}`, want: []string{`handshake.request.annotation: "operatorframework.io/status-source-request" is where the lifecycle manager or the bridge keeps its record of the request`}},
		{name: "the request annotation is the bridge's record", value: `{` + base + `,"handshake":{"mode":"RequestAck","request":{"annotation":"statuscheck.operatorframework.io/upgrade-request"},"ack":{"statusPath":".status.a"}}}`, want: []string{`handshake.request.annotation: "statuscheck.operatorframework.io/upgrade-request" is where the lifecycle manager or the bridge keeps its record of the request`}},
		{name: "bad annotation key", value: `{` + base + `,"handshake":{"mode":"RequestAck","request":{"annotation":"not a key"}}}`, want: []string{`handshake.request.annotation: "not a key"`}},
		{name: "ack without path", value: `{` + base + `,"handshake":{"mode":"RequestAck","request":{"annotation":"a/b"},"ack":{}}}`, want: []string{"handshake.ack.statusPath: is required"}},
		{name: "ack path outside status", value: `{` + base + `,"handshake":{"mode":"RequestAck","request":{"annotation":"a/b"},"ack":{"statusPath":".spec.x"}}}`, want: []string{`handshake.ack.statusPath: ".spec.x" must start with .status.`}},
		{name: "unknown handshake field", value: `{` + base + `,"handshake":{"mode":"None","requests":{}}}`, want: []string{`handshake.requests: unknown field "requests" (did you mean "request"?)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, problems := Parse(tt.value)
			var got []string
			for _, p := range problems {
				got = append(got, p.String())
			}
			require.Len(t, got, len(tt.want), "problems: %q", got)
			for i, w := range tt.want {
				assert.Contains(t, got[i], w)
			}
		})
	}
}

func TestDefaultsAndMarshal(t *testing.T) {
	s, problems := Parse(`{` + base + `}`)
	require.Empty(t, problems)
	assert.Equal(t, []string{"Upgradeable"}, s.ConditionTypes())
	assert.Equal(t, v1alpha1.WhenAbsentAllow, s.Absent())
	assert.Equal(t, v1alpha1.HandshakeNone, s.Mode())
	assert.Equal(t, "hco.kubevirt.io", s.GroupVersion().Group)
	assert.Equal(t, "v1beta1", s.GroupVersion().Version)
	assert.Equal(t, `{`+base+`}`, s.Marshal())

	full := &v1alpha1.StatusSource{APIVersion: "a.io/v1", Kind: "K", Name: "n", Namespace: "ns", Conditions: []string{"Upgradeable"},
		WhenAbsent: v1alpha1.WhenAbsentBlock, Handshake: &v1alpha1.Handshake{Mode: v1alpha1.HandshakeRequestAck, Request: &v1alpha1.HandshakeRequest{SpecPath: ".spec.r"}, Ack: &v1alpha1.HandshakeAck{StatusPath: ".status.a"}}}
	assert.Equal(t, `{"apiVersion":"a.io/v1","kind":"K","name":"n","namespace":"ns","conditions":["Upgradeable"],"whenAbsent":"Block","handshake":{"mode":"RequestAck","request":{"specPath":".spec.r"},"ack":{"statusPath":".status.a"}}}`, full.Marshal())
	back, problems := Parse(full.Marshal())
	require.Empty(t, problems)
	assert.Equal(t, full, back)
}

func TestNearMiss(t *testing.T) {
	for _, s := range []string{"Upgradable", "upgradeable", "UPGRADEABLE", "Upgradeble", "Upgradeabel", "Upgradeables"} {
		assert.True(t, IsNearMiss(s), s)
	}
	for _, s := range []string{"Upgradeable", "Degraded", "Available", "Upgraded", "", "Progressing"} {
		assert.False(t, IsNearMiss(s), s)
	}
}

func gen(n int64) *int64 { return &n }

func TestGate(t *testing.T) {
	src := &v1alpha1.StatusSource{APIVersion: "a.io/v1", Kind: "K", Name: "n"}
	block := &v1alpha1.StatusSource{APIVersion: "a.io/v1", Kind: "K", Name: "n", WhenAbsent: v1alpha1.WhenAbsentBlock}
	two := &v1alpha1.StatusSource{APIVersion: "a.io/v1", Kind: "K", Name: "n", Conditions: []string{"Upgradeable", "Ready"}}
	up := func(status string, og *int64) Condition {
		return Condition{Type: ConditionUpgradeable, Status: status, ObservedGeneration: og}
	}
	tests := []struct {
		name   string
		src    *v1alpha1.StatusSource
		obs    Observation
		olm    Verdict
		strict Verdict
		naive  Verdict
		reason string
	}{
		{name: "absent object, default", src: src, obs: Observation{}, olm: Allow, strict: Allow, naive: Allow},
		{name: "absent object, whenAbsent Block", src: block, obs: Observation{}, olm: Block, strict: Block, naive: Block},
		// The issue 28 order: an admin's override wins over a missing
		// status source, as it wins everything in OLM's gate.
		{name: "override True beats whenAbsent Block", src: block, obs: Observation{Overrides: []Condition{{Type: "Upgradeable", Status: "True"}}}, olm: Allow, strict: Allow, naive: Allow, reason: "override"},
		{name: "override False beats whenAbsent Allow", src: src, obs: Observation{Overrides: []Condition{{Type: "Upgradeable", Status: "False"}}}, olm: Block, strict: Block, naive: Block, reason: "override"},
		{name: "no condition", src: src, obs: Observation{Exists: true, Generation: 3}, olm: Allow, strict: Block, naive: Allow, reason: "no Upgradeable condition"},
		{name: "fresh True", src: src, obs: Observation{Exists: true, Generation: 3, Conditions: []Condition{up("True", gen(3))}}, olm: Allow, strict: Allow, naive: Allow},
		{name: "outdated True (the seed's 15 vs 16)", src: src, obs: Observation{Exists: true, Generation: 16, Conditions: []Condition{up("True", gen(15))}}, olm: Block, strict: Block, naive: Allow, reason: "outdated"},
		{name: "fresh False", src: src, obs: Observation{Exists: true, Generation: 3, Conditions: []Condition{up("False", gen(3))}}, olm: Block, strict: Block, naive: Block},
		{name: "fresh Unknown", src: src, obs: Observation{Exists: true, Generation: 3, Conditions: []Condition{up("Unknown", gen(3))}}, olm: Allow, strict: Block, naive: Allow},
		{name: "True without any observedGeneration", src: src, obs: Observation{Exists: true, Generation: 1, Conditions: []Condition{up("True", nil)}}, olm: Block, strict: Block, naive: Allow, reason: "observedGeneration absent"},
		// Issue 18, item 2: olm is OLM's comparison, the condition's own
		// observedGeneration; strict takes status.observedGeneration.
		{name: "status-wide observedGeneration", src: src, obs: Observation{Exists: true, Generation: 4, StatusObservedGeneration: gen(4), Conditions: []Condition{up("True", nil)}}, olm: Block, strict: Allow, naive: Allow, reason: "OLM does not read status.observedGeneration"},
		{name: "the condition's own field wins over status", src: src, obs: Observation{Exists: true, Generation: 4, StatusObservedGeneration: gen(4), Conditions: []Condition{up("True", gen(3))}}, olm: Block, strict: Block, naive: Allow},
		// operator-lifecycle-manager operatorconditions.go isOperatorUpgradeable: c.ObservedGeneration != cond.ObjectMeta.Generation
		{name: "future observedGeneration fails OLM's != check", src: src, obs: Observation{Exists: true, Generation: 4, Conditions: []Condition{up("True", gen(9))}}, olm: Block, strict: Block, naive: Allow},
		{name: "duplicates: the first one counts", src: src, obs: Observation{Exists: true, Generation: 2, Conditions: []Condition{up("False", gen(2)), up("True", gen(2))}}, olm: Block, strict: Block, naive: Block},
		{name: "override True beats a False condition", src: src, obs: Observation{Exists: true, Generation: 2, Conditions: []Condition{up("False", gen(2))}, Overrides: []Condition{{Type: "Upgradeable", Status: "True"}}}, olm: Allow, strict: Allow, naive: Allow, reason: "override"},
		{name: "override False beats a True condition", src: src, obs: Observation{Exists: true, Generation: 2, Conditions: []Condition{up("True", gen(2))}, Overrides: []Condition{{Type: "Other", Status: "True"}, {Type: "Upgradeable", Status: "False"}}}, olm: Block, strict: Block, naive: Block},
		{name: "a second gating condition that is False", src: two, obs: Observation{Exists: true, Generation: 2, Conditions: []Condition{up("True", gen(2)), {Type: "Ready", Status: "False", ObservedGeneration: gen(2)}}}, olm: Block, strict: Block, naive: Block, reason: "Ready=False"},
		{name: "OLM's own OperatorCondition (nil source), absent", src: nil, obs: Observation{}, olm: Allow, strict: Allow, naive: Allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for p, want := range map[Policy]Verdict{PolicyOLM: tt.olm, PolicyStrict: tt.strict, PolicyNaive: tt.naive} {
				d := Gate(p, tt.src, tt.obs)
				assert.Equal(t, want, d.Verdict, "policy %s: %s", p, d.Reason)
				assert.NotEmpty(t, d.Reason)
				if tt.reason != "" && p == PolicyOLM {
					assert.Contains(t, d.Reason, tt.reason)
				}
			}
		})
	}
}

func TestParsePolicy(t *testing.T) {
	for _, p := range Policies() {
		got, err := ParsePolicy(string(p))
		require.NoError(t, err)
		assert.Equal(t, p, got)
	}
	_, err := ParsePolicy("OLM")
	assert.Error(t, err)
}

// FuzzParse checks that Parse never panics, always explains a rejection,
// and that a value it accepts survives Marshal and Parse unchanged.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{` + base + `}`, `{}`, `[]`, `null`, `{"apiVersion":1}`, `{"handshake":{"mode":"RequestAck","request":{"specPath":".spec.x"}}}`,
		`{` + base + `,"conditions":["Upgradeable"],"whenAbsent":"Block"}`, `{"a":{"b":[`, "\"\\ud800\"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		s, problems := Parse(value)
		for _, p := range problems {
			if strings.TrimSpace(p.Message) == "" {
				t.Fatalf("a problem without a message: %+v", p)
			}
		}
		if s == nil {
			if len(problems) == 0 {
				t.Fatalf("nil source without a problem for %q", value)
			}
			return
		}
		if len(problems) > 0 {
			return
		}
		if !json.Valid([]byte(value)) {
			t.Fatalf("accepted invalid JSON %q", value)
		}
		again, p2 := Parse(s.Marshal())
		if len(p2) != 0 {
			t.Fatalf("re-parse of %s: %v", s.Marshal(), p2)
		}
		if again.Marshal() != s.Marshal() {
			t.Fatalf("round trip changed %s into %s", s.Marshal(), again.Marshal())
		}
	})
}

// TestOLMPolicyIsOLMsComparison is issue 18, item 2: the olm policy is
// isOperatorUpgradeable's comparison of the condition's own
// observedGeneration (an absent one is metav1.Condition's 0), so
// status.observedGeneration does not open it; strict, the contract's
// policy, reads it.
func TestOLMPolicyIsOLMsComparison(t *testing.T) {
	src := &v1alpha1.StatusSource{APIVersion: "cool.operators.corp/v1beta1", Kind: "CoolOperator", Name: "cool-operator"}
	o := Observation{Exists: true, Generation: 7, StatusObservedGeneration: gen(7), Conditions: []Condition{{Type: ConditionUpgradeable, Status: StatusTrue}}}
	d := Gate(PolicyOLM, src, o)
	assert.Equal(t, Block, d.Verdict, d.Reason)
	assert.Contains(t, d.Reason, "OLM reads it as 0")
	assert.Equal(t, Allow, Gate(PolicyStrict, src, o).Verdict)
}

func TestTokenValue(t *testing.T) {
	tests := []struct {
		name string
		typ  TokenType
		text string
		want interface{}
	}{
		{name: "a string stays text", typ: TokenString, text: "5", want: "5"},
		{name: "an integer is an int64", typ: TokenInteger, text: "5", want: int64(5)},
		{name: "text that is no integer stays text, for the apiserver to refuse", typ: TokenInteger, text: "abc", want: "abc"},
		{name: "beyond an int64 stays text", typ: TokenInteger, text: "99999999999999999999", want: "99999999999999999999"},
		{name: "the zero type is a string", text: "7", want: "7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.typ.Value(tt.text); got != tt.want {
				t.Errorf("%s.Value(%q) = %#v, want %#v", tt.typ, tt.text, got, tt.want)
			}
		})
	}
}
