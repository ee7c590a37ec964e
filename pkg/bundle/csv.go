package bundle

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/contract"
)

// What a CSV says about the CRs it owns, read one way for validate,
// generate, simulate and record.

// OwnedKind is one kind a CSV owns, with the versions it lists for it.
type OwnedKind struct {
	Group, Kind string
	Versions    []string
}

// OwnedKinds lists the CSV's spec.customresourcedefinitions.owned by group
// and kind, in order. An owned entry's name is PLURAL.GROUP, as OLM
// requires.
func OwnedKinds(csv *operatorsv1alpha1.ClusterServiceVersion) []OwnedKind {
	var out []OwnedKind
	idx := map[string]int{}
	for _, o := range csv.Spec.CustomResourceDefinitions.Owned {
		_, group, _ := strings.Cut(o.Name, ".")
		k := group + "/" + o.Kind
		if i, ok := idx[k]; ok {
			out[i].Versions = append(out[i].Versions, o.Version)
			continue
		}
		idx[k] = len(out)
		out = append(out, OwnedKind{Group: group, Kind: o.Kind, Versions: []string{o.Version}})
	}
	return out
}

// Owns reports whether the CSV owns group/kind.
func Owns(csv *operatorsv1alpha1.ClusterServiceVersion, group, kind string) bool {
	for _, o := range OwnedKinds(csv) {
		if o.Group == group && o.Kind == kind {
			return true
		}
	}
	return false
}

// Examples reads the CSV's alm-examples: a JSON list of CRs (in the wild
// also YAML); nil when it has none or it does not parse.
func Examples(csv *operatorsv1alpha1.ClusterServiceVersion) []map[string]interface{} {
	raw := csv.Annotations["alm-examples"]
	if strings.TrimSpace(raw) == "" {
		return nil
	}
	var list []map[string]interface{}
	if unmarshalAsRequest(raw, &list) != nil {
		return nil
	}
	return list
}

// unmarshalAsRequest decodes a CR the console creates from an annotation
// (alm-examples, the initialization resource) as the apiserver receives
// it. The console parses the annotation with JSON.parse, whose numbers
// are IEEE doubles, and sends JSON.stringify's text, which writes a whole
// number below 1e21 without a fraction or an exponent (ECMAScript's
// Number::toString): 3.0 and 1e1 arrive as 3 and 10, and 2^53+1 as 2^53.
// The apiserver decodes the body with apimachinery's unstructured JSON
// scheme (decodeToUnstructured in pkg/apis/meta/v1/unstructured/helpers.go)
// through util/json.Unmarshal, sigs.k8s.io/json's
// UnmarshalCaseSensitivePreserveInts, which keeps such a number an int64
// when it fits one. The apiserver's code the probes run reads some values
// as int64 only (a scale subresource's replicas path: NestedInt64), and
// refuses a float64 3. A value that is not JSON but YAML, which the
// annotations are in the wild, is turned into JSON first.
func unmarshalAsRequest(raw string, into interface{}) error {
	data := []byte(raw)
	if !json.Valid(data) {
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return err
		}
		data = j
	}
	var v interface{}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	// encoding/json writes a float64 "as if by ES6 number to string
	// conversion" (floatEncoder in encoding/json/encode.go), which is
	// JSON.stringify's: JSON.parse then JSON.stringify is this round trip.
	out, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return sigsjson.UnmarshalCaseSensitivePreserveInts(out, into)
}

// ExamplesError says why the CSV's alm-examples is not what OLM's console
// and operator-sdk's bundle validator read: a JSON list of objects (both
// parse it as JSON; YAML, which Examples tolerates, is not JSON). nil when
// the annotation is absent, empty or valid. The message names the place
// in the value (line and column, counted in the annotation's value); for
// JSON that does not parse it wraps the *json.SyntaxError, whose Offset
// places the break in the value.
func ExamplesError(csv *operatorsv1alpha1.ClusterServiceVersion) error {
	raw, ok := csv.Annotations["alm-examples"]
	if !ok || strings.TrimSpace(raw) == "" {
		return nil
	}
	var list []map[string]interface{}
	err := json.Unmarshal([]byte(raw), &list)
	if err == nil {
		return nil
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn) && syn.Offset >= int64(len(raw)):
		err = fmt.Errorf("not valid JSON: %w (at the end of the value: a bracket, brace or string is not closed)", syn)
	case errors.As(err, &syn):
		line, col := lineCol(raw, syn.Offset)
		err = fmt.Errorf("not valid JSON: %w (line %d, column %d of the value)", syn, line, col)
	case errors.As(err, &typ):
		where := ""
		if typ.Field != "" {
			where = " at " + typ.Field
		}
		err = fmt.Errorf("not a JSON list of objects: a JSON %s%s where %s goes", typ.Value, where, describeGoType(typ.Type.String()))
	default:
		err = fmt.Errorf("not valid JSON: %v", err)
	}
	var y []map[string]interface{}
	if yaml.Unmarshal([]byte(raw), &y) == nil && len(y) > 0 {
		err = fmt.Errorf("%w; it parses as YAML, but the console and operator-sdk parse it as JSON", err)
	}
	return err
}

// lineCol turns a byte offset of s (json.SyntaxError's: just past the
// byte that failed) into a 1-based line and column.
func lineCol(s string, offset int64) (line, col int) {
	if offset > int64(len(s)) {
		offset = int64(len(s))
	}
	before := s[:max(offset-1, 0)]
	line = 1 + strings.Count(before, "\n")
	col = int(offset) - strings.LastIndex(before, "\n") - 1
	return line, max(col, 1)
}

func describeGoType(t string) string {
	switch t {
	case "[]map[string]interface {}":
		return "a list of objects"
	case "map[string]interface {}":
		return "an object"
	}
	return t
}

// ExampleRefs is Examples as object references.
func ExampleRefs(csv *operatorsv1alpha1.ClusterServiceVersion) []contract.ObjectRef {
	var out []contract.ObjectRef
	for _, item := range Examples(csv) {
		av, _ := item["apiVersion"].(string)
		if _, err := schema.ParseGroupVersion(av); err != nil {
			continue
		}
		out = append(out, contract.RefOf(item))
	}
	return out
}

// Example is a CR of the status source's kind the CSV offers: the
// initialization resource (Index -1) or an alm-examples entry.
type Example struct {
	Object map[string]interface{}
	// Key is the CSV annotation it is in; Index its place in alm-examples.
	Key   string
	Index int
}

// Describe names the example for messages: "alm-examples entry 2
// (cool-operator)".
func (e Example) Describe() string {
	name := contract.RefOf(e.Object).Name
	if e.Index < 0 {
		return fmt.Sprintf("%s (%s)", e.Key, name)
	}
	return fmt.Sprintf("%s entry %d (%s)", e.Key, e.Index+1, name)
}

// StatusSourceExamples lists every CR of the status source's group and
// kind the CSV offers users to create: the initialization resource, then
// each alm-examples entry of that kind, in order.
func StatusSourceExamples(csv *operatorsv1alpha1.ClusterServiceVersion, src *v1alpha1.StatusSource) []Example {
	gv := src.GroupVersion()
	fits := func(o map[string]interface{}) bool {
		r := contract.RefOf(o)
		return r.Kind == src.Kind && r.Group == gv.Group
	}
	var out []Example
	if raw, ok := csv.Annotations[v1alpha1.InitializationResourceKey]; ok {
		var o map[string]interface{}
		if unmarshalAsRequest(raw, &o) == nil && fits(o) {
			out = append(out, Example{Object: o, Key: v1alpha1.InitializationResourceKey, Index: -1})
		}
	}
	for i, o := range Examples(csv) {
		if fits(o) {
			out = append(out, Example{Object: o, Key: "alm-examples", Index: i})
		}
	}
	return out
}

// StatusSourceExample finds the CR of the status source's kind that the
// console would create: the initialization resource, else the alm-examples
// entry of that group and kind (of the source's name, if several). key is
// the CSV annotation it came from; nil and "" when there is none.
func StatusSourceExample(csv *operatorsv1alpha1.ClusterServiceVersion, src *v1alpha1.StatusSource) (obj map[string]interface{}, key string) {
	if e := ConsoleExample(StatusSourceExamples(csv, src), src); e != nil {
		return e.Object, e.Key
	}
	return nil, ""
}

// ConsoleExample picks, of a CSV's examples of the status source's kind
// (StatusSourceExamples), the one the console creates: the initialization
// resource, else the alm-examples entry of the source's name, else the
// last one; nil when there is none.
func ConsoleExample(all []Example, src *v1alpha1.StatusSource) *Example {
	var found *Example
	for i := range all {
		e := &all[i]
		switch {
		case e.Index < 0:
			return e
		case found == nil || contract.RefOf(e.Object).Name == src.Name:
			found = e
		}
	}
	return found
}
