package simulate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/bridge"
	"github.com/statuscheck/statuscheck/pkg/contract"
)

// bridgeConfig is the bridge's model of a spec request, or of an
// annotation request.
func bridgeConfig(spec bool) *Config {
	h := &v1alpha1.Handshake{Mode: v1alpha1.HandshakeRequestAck, Request: &v1alpha1.HandshakeRequest{Annotation: "example.com/upgrade-request"}}
	if spec {
		h.Request = &v1alpha1.HandshakeRequest{SpecPath: ".spec.upgradeRequest"}
	}
	return &Config{Source: &v1alpha1.StatusSource{APIVersion: "cool.operators.corp/v1beta1", Kind: "CoolOperator", Name: "cool-operator", Handshake: h},
		StatusSubresource: true, Bridge: true, Policies: []contract.Policy{contract.PolicyOLM}, Primary: contract.PolicyOLM}
}

func bridgeRequest(patch map[string]interface{}) Step {
	return Step{Actor: v1alpha1.ActorBridge, Verb: v1alpha1.VerbRequest, Value: map[string]interface{}{"patch": patch}}
}

func specToken(v interface{}) map[string]interface{} {
	return map[string]interface{}{"spec": map[string]interface{}{"upgradeRequest": v}}
}

// TestBridgeRequestIsWhatTheCRHolds: the bridge's request step applies
// its patch, and the request is then what the CR holds: a new token is a
// new request, the standing token written again is the same request (a
// second replica's write), no token is none; under the bridge, a write
// that takes the token off withdraws the request and its answer.
func TestBridgeRequestIsWhatTheCRHolds(t *testing.T) {
	spec := map[string]interface{}{"storageLayer": "PostgreSQL"}
	tests := []struct {
		name      string
		spec      bool
		steps     []Step
		requested bool
		token     int64
		reqGen    int64
		acked     bool
	}{
		{name: "a request", spec: true, steps: []Step{bridgeRequest(specToken("3"))}, requested: true, token: 3, reqGen: 6},
		{name: "an annotation request with its record", steps: []Step{bridgeRequest(map[string]interface{}{"metadata": map[string]interface{}{
			"annotations": map[string]interface{}{"example.com/upgrade-request": "2", "statuscheck.operatorframework.io/upgrade-request": `{"token":2}`}}})},
			requested: true, token: 2, reqGen: 5},
		{name: "answered", spec: true, steps: []Step{bridgeRequest(specToken("1")),
			{Actor: v1alpha1.ActorOperator, Verb: v1alpha1.VerbUpdateStatus, Value: up("True", 6)}}, requested: true, token: 1, reqGen: 6, acked: true},
		{name: "the same token again is the same request, still answered", spec: true, steps: []Step{bridgeRequest(specToken("1")),
			{Actor: v1alpha1.ActorOperator, Verb: v1alpha1.VerbUpdateStatus, Value: up("True", 6)}, bridgeRequest(specToken("1"))},
			requested: true, token: 1, reqGen: 6, acked: true},
		{name: "a withdrawal", spec: true, steps: []Step{bridgeRequest(specToken("1")), bridgeRequest(specToken(nil))}, token: 1},
		{name: "a revert takes the request and its answer", spec: true, steps: []Step{bridgeRequest(specToken("1")),
			{Actor: v1alpha1.ActorOperator, Verb: v1alpha1.VerbUpdateStatus, Value: up("True", 6)},
			{Actor: v1alpha1.ActorAdmin, Verb: v1alpha1.VerbUpdate, Value: specToken(nil)}}, token: 1},
		{name: "the CR deleted takes it", spec: true, steps: []Step{bridgeRequest(specToken("1")),
			{Actor: v1alpha1.ActorAdmin, Verb: v1alpha1.VerbDelete}}, token: 1},
		{name: "another spec change leaves it", spec: true, steps: []Step{bridgeRequest(specToken("1")),
			{Actor: v1alpha1.ActorUser, Verb: v1alpha1.VerbUpdate, Value: map[string]interface{}{"spec": map[string]interface{}{"storageLayer": "MariaDB"}}}},
			requested: true, token: 1, reqGen: 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := bridgeConfig(tt.spec)
			s := mustInitial(t, cfg, cr(5, spec, up("True", 5)), nil)
			for _, st := range tt.steps {
				var err error
				s, _, err = Next(cfg, s, st)
				require.NoError(t, err)
			}
			assert.Equal(t, tt.requested, s.Requested)
			assert.Equal(t, tt.token, s.Token)
			assert.Equal(t, tt.acked, s.Acked)
			if tt.requested {
				assert.Equal(t, tt.reqGen, s.ReqGen)
			}
		})
	}
}

// TestBridgeRequestNeedsAHandshake: the bridge's request, like OLM's, is
// RequestAck's.
func TestBridgeRequestNeedsAHandshake(t *testing.T) {
	cfg := benchConfig()
	s := mustInitial(t, cfg, cr(1, nil, nil), nil)
	_, _, err := Next(cfg, s, bridgeRequest(specToken("1")))
	assert.ErrorContains(t, err, "bridge request, but the status source declares no RequestAck handshake")
}

func ocEntry(status string) map[string]interface{} {
	return map[string]interface{}{"type": "Upgradeable", "status": status, "reason": "R", "message": "", "lastTransitionTime": "2024-01-01T00:00:00Z"}
}

func ocWrite(actor v1alpha1.Actor, who string, entries ...interface{}) Step {
	return Step{Actor: actor, Verb: v1alpha1.VerbUpdate, Target: v1alpha1.TargetOperatorCondition, Who: who,
		Value: map[string]interface{}{"spec": map[string]interface{}{"conditions": entries}}}
}

// bridgeOCWrite is the bridge's write of one entry with its digest, as
// the runner makes it.
func bridgeOCWrite(status string) Step {
	st := ocWrite(v1alpha1.ActorBridge, "statuscheck-bridge", ocEntry(status))
	st.Value["metadata"] = map[string]interface{}{"annotations": map[string]interface{}{bridge.AnnotationEntry: bridge.EntryDigest(metav1.Condition{Type: "Upgradeable", Status: metav1.ConditionStatus(status), Reason: "R"})}}
	return st
}

// conditionsOwners are the managers managedFields say own spec.conditions.
func conditionsOwners(o Object) []string {
	var out []string
	list, _ := o.Meta["managedFields"].([]interface{})
	for _, e := range list {
		entry, _ := e.(map[string]interface{})
		fields, _ := entry["fieldsV1"].(map[string]interface{})
		spec, _ := fields["f:spec"].(map[string]interface{})
		if _, ok := spec["f:conditions"]; ok {
			out = append(out, entry["manager"].(string))
		}
	}
	return out
}

// TestOperatorConditionFieldManager: a write that changes
// spec.conditions makes its field manager their one owner
// (managedFields, as the apiserver's field manager keeps an atomic list),
// a write that changes nothing leaves the owner; the bridge writing
// spec.conditions while another writer keeps the entry
// (bridge.OtherWriter: the entry is not the one the bridge last wrote, and
// another manager owns the list) is operatorcondition-overwritten, and
// folding an admin's copy of its own entry is not.
func TestOperatorConditionFieldManager(t *testing.T) {
	dup := ocWrite(v1alpha1.ActorAdmin, "kubectl-edit", ocEntry("True"), ocEntry("True"))
	tests := []struct {
		name   string
		steps  []Step
		owners []string
		rules  []string
	}{
		{name: "the bridge alone", steps: []Step{bridgeOCWrite("True")}, owners: []string{"statuscheck-bridge"}},
		{name: "the operator's write", steps: []Step{ocWrite(v1alpha1.ActorOperator, "cool-operator", ocEntry("True"))}, owners: []string{"cool-operator"}},
		{name: "an actor without who is its own manager", steps: []Step{ocWrite(v1alpha1.ActorAdmin, "", ocEntry("True"))}, owners: []string{"admin"}},
		{name: "the bridge over the operator's entry", steps: []Step{bridgeOCWrite("True"), ocWrite(v1alpha1.ActorOperator, "cool-operator", ocEntry("False")),
			bridgeOCWrite("True")}, owners: []string{"statuscheck-bridge"}, rules: []string{RuleOperatorConditionOverwritten}},
		{name: "writing what is there changes nothing", steps: []Step{ocWrite(v1alpha1.ActorOperator, "cool-operator", ocEntry("True")),
			ocWrite(v1alpha1.ActorBridge, "statuscheck-bridge", ocEntry("True"))}, owners: []string{"cool-operator"}},
		{name: "the operator over the bridge's", steps: []Step{bridgeOCWrite("True"), ocWrite(v1alpha1.ActorOperator, "cool-operator", ocEntry("False"))},
			owners: []string{"cool-operator"}},
		{name: "the bridge folds an admin's copy of its entry", steps: []Step{bridgeOCWrite("True"), dup, bridgeOCWrite("False")},
			owners: []string{"statuscheck-bridge"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := bridgeConfig(true)
			s := mustInitial(t, cfg, cr(1, nil, nil), nil)
			var got []string
			for _, st := range tt.steps {
				var out Outcome
				var err error
				s, out, err = Next(cfg, s, st)
				require.NoError(t, err)
				for _, v := range out.Violations {
					got = append(got, v.Rule)
				}
			}
			assert.Equal(t, tt.rules, got)
			assert.Equal(t, tt.owners, conditionsOwners(s.OC))
		})
	}
}
