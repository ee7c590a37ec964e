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
