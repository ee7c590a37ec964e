package trace

import (
	"fmt"
	"math"
	"sort"

	"github.com/statuscheck/statuscheck/internal/strict"
)

// The values a hand-written trace gives the model are read as the
// apiserver would decode them, never coerced: a generation is an integer
// (metadata.generation is an int64, and encoding/json refuses 1.5, 1e20 or
// "1" for it), not negative (ObjectMeta validation,
// ValidateNonnegativeField: a starting object cannot have a negative one,
// a write that would give one is the model's to refuse), and a condition
// is a metav1.Condition: a field one or two edits from one of its fields
// is a typo, and its observedGeneration is an integer. Other fields pass:
// a CRD may add its own (cluster-api's severity).

// conditionFields are metav1.Condition's JSON field names.
var conditionFields = []string{"type", "status", "observedGeneration", "lastTransitionTime", "reason", "message"}

// generationProblem says what is wrong with a generation value, "" when
// nothing is. A negative value is wrong only where no apiserver could
// have stored it (negative false): a write of one is for the model to
// refuse, as the apiserver's validation would.
func generationProblem(what string, v interface{}, negative bool) string {
	switch n := v.(type) {
	case int64:
		if n < 0 && !negative {
			return fmt.Sprintf("%s is %d; a generation is never negative", what, n)
		}
		return ""
	case float64:
		if n == math.Trunc(n) && math.Abs(n) >= math.MaxInt64 {
			return fmt.Sprintf("%s is %v, beyond an int64", what, v)
		}
		return fmt.Sprintf("%s is %v, not an integer", what, v)
	case nil:
		return fmt.Sprintf("%s is null, not an integer", what)
	}
	return fmt.Sprintf("%s must be an integer, not %s", what, describe(v))
}

// conditionsProblem checks a list of conditions as metav1.Condition.
func conditionsProblem(where string, list interface{}) string {
	l, ok := list.([]interface{})
	if !ok {
		if list == nil {
			return ""
		}
		return fmt.Sprintf("%s must be a list of conditions, not %s", where, describe(list))
	}
	for i, e := range l {
		c, ok := e.(map[string]interface{})
		if !ok {
			return fmt.Sprintf("%s[%d] must be a condition (a mapping), not %s", where, i, describe(e))
		}
		var unknown []string
		for k := range c {
			if !known(k) {
				unknown = append(unknown, k)
			}
		}
		sort.Strings(unknown) // the first typo, whatever the map's order
		for _, k := range unknown {
			if s := strict.Closest(k, conditionFields); s != "" {
				return fmt.Sprintf("%s[%d] has an unknown field %q (did you mean %q?)", where, i, k, s)
			}
		}
		if og, ok := c["observedGeneration"]; ok {
			if p := generationProblem(fmt.Sprintf("%s[%d].observedGeneration", where, i), og, true); p != "" {
				return p
			}
		}
		for _, k := range []string{"type", "status"} {
			if v, ok := c[k]; ok {
				if _, isString := v.(string); !isString {
					return fmt.Sprintf("%s[%d].%s must be a string, not %s", where, i, k, describe(v))
				}
			}
		}
	}
	return ""
}

func known(k string) bool {
	for _, f := range conditionFields {
		if f == k {
			return true
		}
	}
	return false
}

func describe(v interface{}) string {
	switch v.(type) {
	case string:
		return fmt.Sprintf("a string (%q)", v)
	case bool:
		return "a boolean"
	case int64, float64:
		return fmt.Sprintf("a number (%v)", v)
	case []interface{}:
		return "a list"
	case map[string]interface{}:
		return "a mapping"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// objectProblem checks an object's metadata.generation and
// status.conditions (the trace's initial object and OperatorCondition,
// a create's object); at is the path the problem is at, for its line.
func objectProblem(where string, obj map[string]interface{}) (msg, at string) {
	if md, ok := obj["metadata"].(map[string]interface{}); ok {
		if g, ok := md["generation"]; ok {
			if p := generationProblem(where+".metadata.generation", g, false); p != "" {
				return p, where + ".metadata.generation"
			}
		}
	}
	if st, ok := obj["status"].(map[string]interface{}); ok {
		if p := conditionsProblem(where+".status.conditions", st["conditions"]); p != "" {
			return p, where + ".status.conditions"
		}
	}
	return "", ""
}

// stepValueProblem checks the conditions a step writes: a status write's
// status.conditions, a main-resource write's or a create's, and on the
// OperatorCondition spec.conditions and spec.overrides.
func stepValueProblem(st Step) string {
	v := st.Value
	if v == nil {
		return ""
	}
	if st.Target == "OperatorCondition" {
		if st.Verb == "updateStatus" {
			return conditionsProblem("status.conditions", v["conditions"])
		}
		if spec, ok := v["spec"].(map[string]interface{}); ok {
			for _, k := range []string{"conditions", "overrides"} {
				if p := conditionsProblem("spec."+k, spec[k]); p != "" {
					return p
				}
			}
		}
		return ""
	}
	switch st.Verb {
	case "updateStatus":
		return conditionsProblem("status.conditions", v["conditions"])
	case "update", "create":
		// metadata.generation in a write is the server's to set; the
		// conditions are the operator's.
		if status, ok := v["status"].(map[string]interface{}); ok {
			return conditionsProblem("status.conditions", status["conditions"])
		}
	}
	return ""
}
