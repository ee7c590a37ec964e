package explore

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/jsonobj"
	"github.com/statuscheck/statuscheck/pkg/simulate"
)

// SpecChange is the user's spec change in an exploration: one field that
// the CRD keeps, set back and forth between two values the apiserver
// accepts, each write moving metadata.generation.
type SpecChange struct {
	// Path is the field, from the object's root ("spec", ...).
	Path []string `json:"path"`
	// A is the value every explored trace starts with, B the other.
	A interface{} `json:"a"`
	B interface{} `json:"b"`
	// Why says how the field was chosen.
	Why string `json:"why"`
}

// String describes the change for a reader.
func (c SpecChange) String() string {
	return fmt.Sprintf(".%s between %s and %s (%s)", strings.Join(c.Path, "."), jsonobj.Compact(c.A), jsonobj.Compact(c.B), c.Why)
}

// patch is the update that sets the field to v.
func (c SpecChange) patch(v interface{}) map[string]interface{} {
	return jsonobj.NestedPatch(c.Path, v)
}

// other is the value the next change writes.
func (c SpecChange) other(cr simulate.Object) interface{} {
	if cur, ok := nested(cr.Body, c.Path); ok && jsonobj.Equal(cur, c.B) {
		return c.A
	}
	return c.B
}

func nested(m map[string]interface{}, path []string) (interface{}, bool) {
	v, ok, err := unstructured.NestedFieldNoCopy(m, path...)
	return v, ok && err == nil
}

// candidate is a field and two values to try.
type candidate struct {
	path []string
	a, b interface{}
	why  string
}

// specCandidates lists the spec fields of a schema a user could change, the
// shallowest first: enums, booleans, integers within their bounds, strings.
func specCandidates(schema *apiextv1.JSONSchemaProps, skip []string) []candidate {
	if schema == nil {
		return nil
	}
	spec, ok := schema.Properties["spec"]
	if !ok {
		return nil
	}
	var out []candidate
	type entry struct {
		path []string
		s    apiextv1.JSONSchemaProps
	}
	queue := []entry{{[]string{"spec"}, spec}}
	for len(queue) > 0 && len(out) < 64 {
		e := queue[0]
		queue = queue[1:]
		names := make([]string, 0, len(e.s.Properties))
		for n := range e.s.Properties {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			p := append(append([]string(nil), e.path...), n)
			if strings.Join(p, ".") == strings.Join(skip, ".") {
				continue // OLM's handshake field, not the user's
			}
			f := e.s.Properties[n]
			if c, ok := leafCandidate(p, f); ok {
				out = append(out, c)
			}
			if f.Type == "object" && len(f.Properties) > 0 {
				queue = append(queue, entry{p, f})
			}
		}
	}
	return out
}

func leafCandidate(p []string, f apiextv1.JSONSchemaProps) (candidate, bool) {
	switch {
	case len(f.Enum) >= 2:
		var a, b interface{}
		if json.Unmarshal(f.Enum[0].Raw, &a) != nil || json.Unmarshal(f.Enum[1].Raw, &b) != nil {
			return candidate{}, false
		}
		return candidate{p, jsonNumbers(a), jsonNumbers(b), "an enum field the CRD keeps"}, true
	case f.Type == "boolean":
		return candidate{p, false, true, "a boolean field the CRD keeps"}, true
	case f.Type == "integer":
		lo := int64(1)
		if f.Minimum != nil {
			lo = int64(*f.Minimum)
			if f.ExclusiveMinimum {
				lo++
			}
		}
		return candidate{p, lo, lo + 1, "an integer field the CRD keeps"}, true
	case f.Type == "string" && f.Format == "":
		return candidate{p, "statuscheck-a", "statuscheck-b", "a string field the CRD keeps"}, true
	}
	return candidate{}, false
}

// jsonNumbers turns float64 integers (encoding/json's) into int64.
func jsonNumbers(v interface{}) interface{} {
	if f, ok := v.(float64); ok && f == float64(int64(f)) {
		return int64(f)
	}
	return v
}

// pickSpecChange finds the user's spec change for an exploration: the
// first candidate field that the apiserver model accepts in both
// directions from the initial object, with generation moving each time.
// Without a schema that describes spec, a field the CRD keeps because it
// preserves unknown fields is used.
func pickSpecChange(cfg *Config, initial map[string]interface{}) (SpecChange, error) {
	var skip []string
	if r := cfg.Source.Request(); r != nil && r.SpecPath != "" {
		skip = v1alpha1.FieldPath(r.SpecPath)
	}
	var schema *apiextv1.JSONSchemaProps
	if cfg.CR != nil {
		schema = cfg.CR.Schema
	}
	cands := specCandidates(schema, skip)
	cands = append(cands, candidate{[]string{"spec", "statuscheckExplore"}, "a", "b", "a field no schema describes; the CRD keeps it (it preserves unknown fields)"})
	var tried []string
	for _, c := range cands {
		if ok, why := tryChange(cfg, initial, c); ok {
			return SpecChange{Path: c.path, A: c.a, B: c.b, Why: c.why}, nil
		} else if len(tried) < 3 {
			tried = append(tried, fmt.Sprintf(".%s: %s", strings.Join(c.path, "."), why))
		}
	}
	msg := fmt.Sprintf("no spec field of %s that the apiserver keeps and accepts could be found to model the user's spec change", cfg.Source.Kind)
	if len(tried) > 0 {
		msg += " (tried " + strings.Join(tried, "; ") + ")"
	}
	return SpecChange{}, fmt.Errorf("%s", msg)
}

// tryChange runs A, then B, then A again through the core from the initial
// object: each must be accepted and move generation.
func tryChange(cfg *Config, initial map[string]interface{}, c candidate) (bool, string) {
	obj := jsonobj.MergePatch(initial, jsonobj.NestedPatch(c.path, c.a))
	s, err := simulate.Initial(cfg, obj, nil)
	if err != nil {
		return false, err.Error()
	}
	for _, v := range []interface{}{c.b, c.a} {
		before := s.CR.Generation
		after, rf, err := simulate.Write(cfg, s.CR, Step{Actor: v1alpha1.ActorUser, Verb: v1alpha1.VerbUpdate, Value: jsonobj.NestedPatch(c.path, v)})
		switch {
		case err != nil:
			return false, err.Error()
		case rf != nil:
			return false, rf.Error()
		case after.Generation == before:
			return false, "the write does not move generation (pruned or defaulted away)"
		}
		s.CR = after
	}
	return true, ""
}
