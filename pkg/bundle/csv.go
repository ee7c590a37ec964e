package bundle

import (
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

// StatusSourceExample finds the CR of the status source's kind that the
// console would create: the initialization resource, else the alm-examples
// entry of that group and kind (of the source's name, if several). key is
// the CSV annotation it came from; nil and "" when there is none.
func StatusSourceExample(csv *operatorsv1alpha1.ClusterServiceVersion, src *v1alpha1.StatusSource) (obj map[string]interface{}, key string) {
	gv := src.GroupVersion()
	fits := func(o map[string]interface{}) bool {
		r := contract.RefOf(o)
		return r.Kind == src.Kind && r.Group == gv.Group
	}
	if raw, ok := csv.Annotations[v1alpha1.InitializationResourceKey]; ok {
		var o map[string]interface{}
		if yaml.Unmarshal([]byte(raw), &o) == nil && fits(o) {
			return o, v1alpha1.InitializationResourceKey
		}
	}
	var found map[string]interface{}
	for _, o := range Examples(csv) {
		if !fits(o) {
			continue
		}
		if found == nil || contract.RefOf(o).Name == src.Name {
			found = o
		}
	}
	if found == nil {
		return nil, ""
	}
	return found, "alm-examples"
}
