package bridge

import (
	"encoding/json"
	"strconv"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/contract"
)

// FuzzDecide feeds the decision arbitrary CRs (as JSON, with or without
// the bridge's request record), OperatorCondition entries and handshakes.
// Its invariant is the gate's: it never panics; the entry is True exactly
// where the contract allows on what was read (contract.Gate in freshness
// mode, contract.RequestAckGate on the request the CR holds under
// RequestAck), False everywhere else, never Unknown; exactly one
// Upgradeable entry is left (duplicates folded), with a reason and
// message metav1.Condition allows; every other entry stays as it was; and
// with another writer of the conditions nothing is written.
func FuzzDecide(f *testing.F) {
	f.Add([]byte(`{"metadata":{"generation":3},"status":{"conditions":[{"type":"Upgradeable","status":"True","observedGeneration":3}]}}`), []byte(`[]`), uint8(0))
	f.Add([]byte(`{"metadata":{"generation":4},"status":{"observedGeneration":4,"conditions":[{"type":"Upgradeable","status":"False","reason":"x y"}]}}`), []byte(`[{"type":"Ready","status":"True","reason":"R"}]`), uint8(1))
	f.Add([]byte(`null`), []byte(`[{"type":"Upgradeable","status":"True","reason":"Old"}]`), uint8(2))
	f.Add([]byte(`{"metadata":{"generation":3},"status":{"conditions":[{"type":"Upgradeable","status":"Unknown","observedGeneration":3}]}}`), []byte(`[{"type":"Upgradeable","status":"True","reason":"A"},{"type":"Upgradeable","status":"False","reason":"B"}]`), uint8(0))
	f.Add([]byte(`{"metadata":{"generation":5,"annotations":{"statuscheck.operatorframework.io/upgrade-request":"{\"token\":1,\"csv\":\"a.v2\",\"generation\":4}"}},"spec":{"upgradeRequest":"1"},"status":{"conditions":[{"type":"Upgradeable","status":"True","observedGeneration":5}]}}`), []byte(`[]`), uint8(2))
	f.Add([]byte(`{"metadata":{"generation":4,"annotations":{"statuscheck.operatorframework.io/upgrade-request":"{\"token\":1,\"csv\":\"a.v2\",\"generation\":4}"}},"status":{"conditions":[{"type":"Upgradeable","status":"True","observedGeneration":4}]}}`), []byte(`[]`), uint8(6))
	f.Add([]byte(`{"metadata":{"generation":2,"annotations":{"cool.operators.corp/upgrade-request":"1","statuscheck.operatorframework.io/upgrade-request":"{\"token\":1,\"csv\":\"a.v2\",\"generation\":2}"}},"status":{"observedUpgradeRequest":"1","conditions":[{"type":"Upgradeable","status":"True","observedGeneration":2}]}}`), []byte(`[]`), uint8(34))
	f.Add([]byte(`{"metadata":{"generation":2},"status":{"observedUpgradeRequest":"1","conditions":[{"type":"Upgradeable","status":"True","observedGeneration":2}]}}`), []byte(`[]`), uint8(34))
	f.Add([]byte(`{"metadata":{"generation":3},"spec":{"upgradeRequest":1},"metadata":{"generation":3,"annotations":{"statuscheck.operatorframework.io/upgrade-request":"{\"token\":1,\"csv\":\"a.v2\",\"generation\":2}"}},"status":{"conditions":[{"type":"Upgradeable","status":"True","observedGeneration":3}]}}`), []byte(`[]`), uint8(66))
	// A request that did not move generation, with a report from the
	// future: never answered.
	f.Add([]byte(`{"metadata":{"generation":3,"annotations":{"statuscheck.operatorframework.io/upgrade-request":"{\"token\":1,\"csv\":\"a.v2\",\"generation\":3}"}},"spec":{"upgradeRequest":"1"},"status":{"conditions":[{"type":"Upgradeable","status":"True","observedGeneration":4}]}}`), []byte(`[]`), uint8(2))
	// A record for another uid (the CR made again from a copy).
	f.Add([]byte(`{"metadata":{"generation":4,"uid":"new","annotations":{"statuscheck.operatorframework.io/upgrade-request":"{\"token\":1,\"csv\":\"a.v2\",\"generation\":3,\"uid\":\"old\"}"}},"spec":{"upgradeRequest":"1"},"status":{"conditions":[{"type":"Upgradeable","status":"True","observedGeneration":4}]}}`), []byte(`[]`), uint8(2))
	// A reverted token.
	f.Add([]byte(`{"metadata":{"generation":5,"annotations":{"statuscheck.operatorframework.io/upgrade-request":"{\"token\":2,\"csv\":\"a.v2\",\"generation\":3}"}},"spec":{"upgradeRequest":"1"},"status":{"conditions":[{"type":"Upgradeable","status":"True","observedGeneration":5}]}}`), []byte(`[]`), uint8(2))
	f.Fuzz(func(t *testing.T, crJSON, ocJSON []byte, mode uint8) {
		// apimachinery's JSON (int64 numbers), as the apiserver's
		// objects come to the runner.
		var obj map[string]interface{}
		var u *unstructured.Unstructured
		if utiljson.Unmarshal(crJSON, &obj) == nil && obj != nil {
			u = &unstructured.Unstructured{Object: obj}
		}
		var conds []metav1.Condition
		_ = json.Unmarshal(ocJSON, &conds)
		src := source(v1alpha1.HandshakeNone, "")
		if mode%4 >= 2 {
			src = source(v1alpha1.HandshakeRequestAck, "")
			switch mode / 32 % 4 {
			case 1: // an annotation request with an echo
				src.Handshake.Request = &v1alpha1.HandshakeRequest{Annotation: "cool.operators.corp/upgrade-request"}
				src.Handshake.Ack = &v1alpha1.HandshakeAck{StatusPath: ".status.observedUpgradeRequest"}
			case 2: // a spec request the schema types as an integer
				src.Handshake.Ack = &v1alpha1.HandshakeAck{StatusPath: ".status.observedUpgradeRequest"}
			}
		}
		if mode%2 == 1 {
			src.WhenAbsent = v1alpha1.WhenAbsentBlock
		}
		in := Input{Source: src, CR: u, Running: "a.v1", Now: t1,
			OC:   &operatorsv2.OperatorCondition{Spec: operatorsv2.OperatorConditionSpec{Conditions: conds}},
			CSVs: []operatorsv1alpha1.ClusterServiceVersion{csv("a.v2", "a.v1", false)}}
		if mode%8 >= 4 {
			in.CSVs = nil
		}
		if mode/32%4 == 2 {
			in.Tokens = contract.Tokens{Request: contract.TokenInteger, Ack: contract.TokenInteger}
		}
		other := mode%16 >= 8
		if other {
			in.OC.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "operator", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:conditions":{}}}`)}}}
		}
		d := Decide(in)
		if other && countUpgradeable(conds) > 0 {
			// Another manager owns the list and the entry is not the
			// bridge's (no digest): it is another writer's.
			if d.WriteOC || d.Request != nil || d.Yield != "operator" {
				t.Fatalf("wrote beside another writer: %+v", d)
			}
			return
		}
		if d.Yield != "" {
			t.Fatalf("yielded to %s with no Upgradeable entry to keep", d.Yield)
		}
		if n := countUpgradeable(d.Conditions); n != 1 {
			t.Fatalf("%d Upgradeable entries written from %d", n, countUpgradeable(conds))
		}
		if d.WriteOC != !equalConditions(conds, d.Conditions) {
			t.Fatalf("WriteOC %v for a change %v", d.WriteOC, !equalConditions(conds, d.Conditions))
		}
		switch d.Condition.Status {
		case metav1.ConditionTrue, metav1.ConditionFalse:
		default:
			t.Fatalf("status %q: only True or False is written", d.Condition.Status)
		}
		if !reasonRE.MatchString(d.Condition.Reason) || len(d.Condition.Reason) > 1024 {
			t.Fatalf("reason %q", d.Condition.Reason)
		}
		if len(d.Condition.Message) > maxMessage {
			t.Fatalf("message of %d bytes", len(d.Condition.Message))
		}
		i := 0
		for _, c := range d.Conditions {
			if c.Type == contract.ConditionUpgradeable {
				continue
			}
			for i < len(conds) && conds[i].Type == contract.ConditionUpgradeable {
				i++
			}
			if i >= len(conds) || conds[i] != c {
				t.Fatalf("entry %+v changed or moved", c)
			}
			i++
		}
		allows := contractAllows(in)
		if got := d.Condition.Status == metav1.ConditionTrue; got != allows {
			t.Fatalf("True is %v where the contract's gate allows is %v: %s", got, allows, d.Gate.Reason)
		}
	})
}

// contractAllows is the contract's gate on what the decision read: the
// gate on the CR in freshness mode; under RequestAck whenAbsent for an
// absent CR, and otherwise only the answer to a request the CR holds for
// the replacing CSV (its record, its token, a generation the request
// moved) that contract.RequestAckGate allows.
func contractAllows(in Input) bool {
	obs := contract.ObservationFrom(in.CR, in.Source)
	if in.Source.Mode() != v1alpha1.HandshakeRequestAck || !obs.Exists {
		return contract.Gate(contract.PolicyStrict, in.Source, obs).Verdict == contract.Allow
	}
	rec := RecordOf(in.CR)
	next := Replacing(in.Running, in.CSVs)
	if rec == nil || next == "" || rec.CSV != next || rec.UID != in.CR.GetUID() {
		return false
	}
	text := strconv.FormatInt(rec.Token, 10)
	req := contract.Request{Standing: true, Token: rec.Token, Value: text, Generation: rec.Generation}
	if r := in.Source.Request(); r.SpecPath != "" {
		if got, ok := contract.TokenAt(in.CR.Object, []string{"spec", "upgradeRequest"}); !ok || got != text || obs.Generation <= rec.Generation {
			return false
		}
		req.Generation = rec.Generation + 1
	} else if in.CR.GetAnnotations()[r.Annotation] != text {
		return false
	}
	return contract.RequestAckGate(contract.PolicyStrict, in.Source, obs, req).Verdict == contract.Allow
}

func equalConditions(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func countUpgradeable(conds []metav1.Condition) int {
	n := 0
	for _, c := range conds {
		if c.Type == contract.ConditionUpgradeable {
			n++
		}
	}
	return n
}
