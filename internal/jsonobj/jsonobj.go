// Package jsonobj holds the few operations on decoded JSON objects
// (map[string]interface{}, as encoding/json, sigs.k8s.io/yaml and
// unstructured.Unstructured hold them) that statuscheck's packages share:
// RFC 7386 merge patches, deep copies, nested patches and the split of an
// object the way the apiserver's strategy looks at it. Reading nested
// fields is apimachinery's unstructured.Nested* and not repeated here.
package jsonobj

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// MergePatch applies an RFC 7386 JSON merge patch to target, as the
// apiserver applies a merge-patch request to the stored object: null
// removes a key, an object merges, anything else replaces. It builds new
// maps on the way and shares what it does not touch, so target is not
// changed. (evanphx/json-patch's MergePatch does the same on JSON text;
// statuscheck's models apply patches to decoded objects in hot loops.)
func MergePatch(target, patch map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(target)+len(patch))
	for k, v := range target {
		out[k] = v
	}
	for k, pv := range patch {
		if pv == nil {
			delete(out, k)
			continue
		}
		if pm, ok := pv.(map[string]interface{}); ok {
			tm, _ := out[k].(map[string]interface{})
			out[k] = MergePatch(tm, pm)
			continue
		}
		out[k] = pv
	}
	return out
}

// CreateMergePatch is the RFC 7386 merge patch that turns a into b:
// MergePatch(a, CreateMergePatch(a, b)) equals b for objects without
// nulls.
func CreateMergePatch(a, b map[string]interface{}) map[string]interface{} {
	out := map[string]interface{}{}
	for k, bv := range b {
		av, ok := a[k]
		if ok && reflect.DeepEqual(av, bv) {
			continue
		}
		am, aok := av.(map[string]interface{})
		bm, bok := bv.(map[string]interface{})
		if aok && bok {
			out[k] = CreateMergePatch(am, bm)
			continue
		}
		out[k] = bv
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			out[k] = nil
		}
	}
	return out
}

// Equal compares two decoded JSON values (nil equals nil) as
// reflect.DeepEqual does (a nil map or slice is not an empty one; an
// int64 is not a float64), by a type switch over the kinds a decoded
// object holds, which the models call in hot loops; other types go to
// reflect.DeepEqual.
func Equal(a, b interface{}) bool {
	if a == nil && b == nil {
		return true
	}
	switch a := a.(type) {
	case map[string]interface{}:
		bm, ok := b.(map[string]interface{})
		if !ok || (a == nil) != (bm == nil) || len(a) != len(bm) {
			return false
		}
		for k, av := range a {
			bv, ok := bm[k]
			if !ok || !Equal(av, bv) {
				return false
			}
		}
		return true
	case []interface{}:
		bs, ok := b.([]interface{})
		if !ok || (a == nil) != (bs == nil) || len(a) != len(bs) {
			return false
		}
		for i := range a {
			if !Equal(a[i], bs[i]) {
				return false
			}
		}
		return true
	case string:
		bs, ok := b.(string)
		return ok && a == bs
	case int64:
		bi, ok := b.(int64)
		return ok && a == bi
	case bool:
		bb, ok := b.(bool)
		return ok && a == bb
	}
	return reflect.DeepEqual(a, b)
}

// Compact is v as compact JSON, HTML characters unescaped ("" when v
// cannot be marshaled): for messages and a trace's lines.
func Compact(v interface{}) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// NestedPatch builds {f1: {f2: ... value}} for a field path: the merge
// patch that sets one field.
func NestedPatch(fields []string, value interface{}) map[string]interface{} {
	out := map[string]interface{}{fields[len(fields)-1]: value}
	for i := len(fields) - 2; i >= 0; i-- {
		out = map[string]interface{}{fields[i]: out}
	}
	return out
}

// Copy deep-copies a JSON object made of the types encoding/json and
// sigs.k8s.io/yaml produce (int and int32 are taken as int64, float32 as
// float64), refusing anything else.
func Copy(obj map[string]interface{}) (map[string]interface{}, error) {
	out, err := copyValue(obj)
	if err != nil {
		return nil, err
	}
	m, _ := out.(map[string]interface{})
	return m, nil
}

func copyValue(v interface{}) (interface{}, error) {
	switch t := v.(type) {
	case nil, string, bool, int64, float64:
		return t, nil
	case int:
		return int64(t), nil
	case int32:
		return int64(t), nil
	case float32:
		return float64(t), nil
	case map[string]interface{}:
		if t == nil {
			return map[string]interface{}(nil), nil
		}
		out := make(map[string]interface{}, len(t))
		for k, x := range t {
			c, err := copyValue(x)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []interface{}:
		if t == nil {
			return []interface{}(nil), nil
		}
		out := make([]interface{}, len(t))
		for i, x := range t {
			c, err := copyValue(x)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return nil, fmt.Errorf("%T is not a JSON value", v)
}

// Parts is an object split the way the apiserver's registry strategy looks
// at it: metadata, status, and everything else (the part whose changes
// bump metadata.generation).
type Parts struct {
	APIVersion, Kind string
	// Meta is metadata as written (generation included).
	Meta map[string]interface{}
	// Body is every top-level field but apiVersion, kind, metadata and
	// status: spec and whatever else the CRD has. nil when there is none.
	Body map[string]interface{}
	// Status is .status, nil when absent or not an object.
	Status map[string]interface{}
}

// Split splits obj; the maps inside are shared, not copied.
func Split(obj map[string]interface{}) Parts {
	var p Parts
	for k, v := range obj {
		switch k {
		case "apiVersion":
			p.APIVersion, _ = v.(string)
		case "kind":
			p.Kind, _ = v.(string)
		case "metadata":
			p.Meta, _ = v.(map[string]interface{})
		case "status":
			p.Status, _ = v.(map[string]interface{})
		default:
			if p.Body == nil {
				p.Body = map[string]interface{}{}
			}
			p.Body[k] = v
		}
	}
	return p
}

// Int reads an integer as decoded JSON or YAML may hold it: int64, int,
// a float64 without a fraction, a json.Number or a decimal string. It is
// lenient on purpose: recordings hold what an operator wrote.
func Int(v interface{}) (int64, bool) {
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
