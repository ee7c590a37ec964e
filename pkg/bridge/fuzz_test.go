package bridge

import (
	"encoding/json"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/contract"
)

// FuzzDecide feeds the decision arbitrary CRs (as JSON), OperatorCondition
// entries and handshakes: it never panics, writes exactly one Upgradeable
// entry with a status and reason metav1.Condition allows, leaves every
// other entry as it was, and writes True only where the contract's gate
// on the CR allows (never True from what is not a fresh True).
func FuzzDecide(f *testing.F) {
	f.Add([]byte(`{"metadata":{"generation":3},"status":{"conditions":[{"type":"Upgradeable","status":"True","observedGeneration":3}]}}`), []byte(`[]`), uint8(0), int64(0))
	f.Add([]byte(`{"metadata":{"generation":4},"status":{"observedGeneration":4,"conditions":[{"type":"Upgradeable","status":"False","reason":"x y"}]}}`), []byte(`[{"type":"Ready","status":"True","reason":"R"}]`), uint8(1), int64(2))
	f.Add([]byte(`null`), []byte(`[{"type":"Upgradeable","status":"True","reason":"Old"}]`), uint8(2), int64(1))
	f.Add([]byte(`{"metadata":{"generation":5},"spec":{"upgradeRequest":"1"},"status":{"conditions":[{"type":"Upgradeable","status":"True","observedGeneration":5}]}}`), []byte(`[]`), uint8(3), int64(5))
	f.Fuzz(func(t *testing.T, crJSON, ocJSON []byte, mode uint8, reqGen int64) {
		var obj map[string]interface{}
		var u *unstructured.Unstructured
		if json.Unmarshal(crJSON, &obj) == nil && obj != nil {
			u = &unstructured.Unstructured{Object: obj}
		}
		var conds []metav1.Condition
		_ = json.Unmarshal(ocJSON, &conds)
		src := source(v1alpha1.HandshakeNone, "")
		if mode%4 >= 2 {
			src = source(v1alpha1.HandshakeRequestAck, "")
		}
		if mode%2 == 1 {
			src.WhenAbsent = v1alpha1.WhenAbsentBlock
		}
		in := Input{Source: src, CR: u, Running: "a.v1", Now: t1,
			OC:   &operatorsv2.OperatorCondition{Spec: operatorsv2.OperatorConditionSpec{Conditions: conds}},
			CSVs: []operatorsv1alpha1.ClusterServiceVersion{csv("a.v2", "a.v1", false)}}
		if mode%8 >= 4 {
			in.Request = contract.Request{Standing: true, Token: 1, Value: "1", Generation: reqGen}
		}
		d := Decide(in)
		n := 0
		for _, c := range d.Conditions {
			if c.Type == contract.ConditionUpgradeable {
				n++
			}
		}
		if first := firstUpgradeable(conds); first < 0 && n != 1 || first >= 0 && n != countUpgradeable(conds) {
			t.Fatalf("%d Upgradeable entries written from %d", n, countUpgradeable(conds))
		}
		switch d.Condition.Status {
		case metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown:
		default:
			t.Fatalf("status %q", d.Condition.Status)
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
		if d.Condition.Status == metav1.ConditionTrue {
			obs := contract.ObservationFrom(u, src)
			g := contract.Decide(contract.PolicyStrict, src, obs, contract.Observation{}, in.Request)
			if g.Verdict != contract.Allow {
				t.Fatalf("True while the contract's gate blocks: %s", g.Reason)
			}
		}
	})
}

func firstUpgradeable(conds []metav1.Condition) int {
	for i, c := range conds {
		if c.Type == contract.ConditionUpgradeable {
			return i
		}
	}
	return -1
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
