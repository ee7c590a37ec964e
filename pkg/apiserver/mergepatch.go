package apiserver

import "reflect"

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
