package bundle

import (
	"fmt"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	if yaml.Unmarshal([]byte(raw), &list) != nil {
		return nil
	}
	return list
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
		if yaml.Unmarshal([]byte(raw), &o) == nil && fits(o) {
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
