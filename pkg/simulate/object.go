package simulate

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"

	"github.com/statuscheck/statuscheck/pkg/contract"
)

// Object is a custom resource as the apiserver holds it, split the way the
// apiserver's strategy looks at it: metadata, status, and everything else
// (the part whose changes bump metadata.generation). Its maps are never
// modified in place: a change builds new maps, so a State can be copied by
// value and a branch of the explorer cannot disturb another.
type Object struct {
	Exists     bool
	Generation int64
	// Meta is metadata without generation.
	Meta map[string]interface{}
	// Body is every top-level field but apiVersion, kind, metadata and
	// status: spec and whatever else the CRD has.
	Body map[string]interface{}
	// Status is .status, nil when absent.
	Status map[string]interface{}

	// Conditions and StatusOG are read from Status when it is set.
	Conditions []contract.Condition
	StatusOG   *int64
	// Duplicate names a condition type that appears twice, if one does.
	Duplicate string
}

// NewObject splits a full object (as a trace or a snapshot gives it).
func NewObject(obj map[string]interface{}) Object {
	o := Object{Exists: true, Generation: 1}
	for k, v := range obj {
		switch k {
		case "apiVersion", "kind":
		case "metadata":
			md, _ := v.(map[string]interface{})
			o.Meta = map[string]interface{}{}
			for mk, mv := range md {
				if mk == "generation" {
					if g, ok := toInt(mv); ok {
						o.Generation = g
					}
					continue
				}
				o.Meta[mk] = mv
			}
		case "status":
			st, _ := v.(map[string]interface{})
			o = o.withStatus(st)
		default:
			if o.Body == nil {
				o.Body = map[string]interface{}{}
			}
			o.Body[k] = v
		}
	}
	return o
}

// withStatus returns o with a new status, its conditions read.
func (o Object) withStatus(st map[string]interface{}) Object {
	o.Status = st
	o.Conditions, o.StatusOG, o.Duplicate = readConditions(st)
	return o
}

// readConditions reads .status.conditions leniently: a trace records what
// an operator wrote, right or wrong, and the gate must see what OLM would.
func readConditions(st map[string]interface{}) ([]contract.Condition, *int64, string) {
	if st == nil {
		return nil, nil, ""
	}
	var og *int64
	if g, ok := toInt(st["observedGeneration"]); ok {
		og = &g
	}
	list, _ := st["conditions"].([]interface{})
	conds := make([]contract.Condition, 0, len(list))
	seen := map[string]bool{}
	dup := ""
	for _, item := range list {
		m, ok := item.(map[string]interface{})
		if !ok {
			continue
		}
		c := contract.Condition{}
		c.Type, _ = m["type"].(string)
		c.Status = fmt.Sprint(m["status"])
		if s, ok := m["status"].(string); ok {
			c.Status = s
		} else if b, ok := m["status"].(bool); ok {
			// An unquoted True in YAML is a boolean; Kubernetes would
			// reject it for a string field, but the trace recorded it.
			c.Status = map[bool]string{true: contract.StatusTrue, false: contract.StatusFalse}[b]
		}
		c.Reason, _ = m["reason"].(string)
		c.Message, _ = m["message"].(string)
		if g, ok := toInt(m["observedGeneration"]); ok {
			c.ObservedGeneration = &g
		}
		if seen[c.Type] && dup == "" {
			dup = c.Type
		}
		seen[c.Type] = true
		conds = append(conds, c)
	}
	return conds, og, dup
}

func toInt(v interface{}) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case float64:
		if n == float64(int64(n)) {
			return int64(n), true
		}
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	case string:
		i, err := strconv.ParseInt(n, 10, 64)
		return i, err == nil
	}
	return 0, false
}

func equalJSON(a, b interface{}) bool {
	if a == nil && b == nil {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// nestedString reads a dotted field path (".status.observedUpgradeRequest")
// as a string, "" when absent.
func nestedString(m map[string]interface{}, fields []string) (string, bool) {
	var cur interface{} = m
	for _, f := range fields {
		mm, ok := cur.(map[string]interface{})
		if !ok {
			return "", false
		}
		cur, ok = mm[f]
		if !ok {
			return "", false
		}
	}
	switch v := cur.(type) {
	case string:
		return v, true
	case nil:
		return "", false
	default:
		return fmt.Sprint(v), true
	}
}

// nestedPatch builds {f1: {f2: ... value}} for a field path.
func nestedPatch(fields []string, value interface{}) map[string]interface{} {
	out := map[string]interface{}{fields[len(fields)-1]: value}
	for i := len(fields) - 2; i >= 0; i-- {
		out = map[string]interface{}{fields[i]: out}
	}
	return out
}
