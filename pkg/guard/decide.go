package guard

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/contract"
)

// Decide is the guard's decision on the live CR (nil: it does not
// exist): contract.Gate under contract.PolicyStrict, with the override
// annotation (contract.AnnotationOverrides) as the overrides. A held
// decision's reason carries the reason and message the CR gives for each
// condition type that holds it.
func Decide(u *unstructured.Unstructured, src *v1alpha1.StatusSource) contract.Decision {
	o := contract.ObservationFrom(u, src)
	if u != nil {
		o.Overrides = contract.AnnotationOverrides(u.GetAnnotations())
	}
	d := contract.Gate(contract.PolicyStrict, src, o)
	if d.Verdict == contract.Allow && o.Exists && len(o.Overrides) == 0 {
		// The contract's reading is lenient for recordings (a YAML
		// boolean status, a generation written as a string); the live
		// gate holds on what the admission policy holds on, so that the
		// hook and the policy give one answer.
		if why := malformed(u, src); why != "" {
			return contract.Decision{Verdict: contract.Block, Reason: why}
		}
	}
	if d.Verdict == contract.Allow || !o.Exists || len(o.Overrides) > 0 {
		return d
	}
	var why []string
	for _, t := range src.ConditionTypes() {
		c := contract.Find(o.Conditions, t)
		if c == nil || (c.Reason == "" && c.Message == "") {
			continue
		}
		s := t + ": "
		if c.Reason != "" {
			s += "reason " + c.Reason
		}
		if c.Message != "" {
			if c.Reason != "" {
				s += ", "
			}
			s += fmt.Sprintf("message %q", c.Message)
		}
		why = append(why, s)
	}
	if len(why) > 0 {
		d.Reason += " (" + strings.Join(why, "; ") + ")"
	}
	return d
}

// malformed says why the CR's conditions, which contract.Gate read as a
// fresh True, are not one as the apiserver's CEL reads them (the
// admission policy, FreshTrueExpression): the first entry of each type
// must have a string status and an integer observedGeneration (its own,
// else status.observedGeneration), not a string, a fraction or null.
// Empty when they are.
func malformed(u *unstructured.Unstructured, src *v1alpha1.StatusSource) string {
	status, _ := u.Object["status"].(map[string]interface{})
	list, _ := status["conditions"].([]interface{})
	for _, t := range src.ConditionTypes() {
		for _, item := range list {
			m, ok := item.(map[string]interface{})
			if !ok || m["type"] != t {
				continue
			}
			if _, ok := m["status"].(string); !ok {
				return fmt.Sprintf("%s: status %v is not a string", t, m["status"])
			}
			og, own := m["observedGeneration"]
			where := "observedGeneration"
			if !own {
				og, own = status["observedGeneration"]
				where = "status.observedGeneration"
			}
			if own && !integer(og) {
				return fmt.Sprintf("%s: %s %#v is not an integer", t, where, og)
			}
			break
		}
	}
	return ""
}

// integer: a JSON integer as the decoders give it (3.0 is 3 for CEL too).
func integer(v interface{}) bool {
	switch n := v.(type) {
	case int64, int32, int:
		return true
	case float64:
		return n == float64(int64(n))
	}
	return false
}
