package contract

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// ObjectRef names one object: how an initialization resource or an
// alm-examples entry is compared with a status source.
type ObjectRef struct {
	Group, Version, Kind, Name, Namespace string
}

// APIVersion is GROUP/VERSION (or VERSION for the core group).
func (r ObjectRef) APIVersion() string {
	return schema.GroupVersion{Group: r.Group, Version: r.Version}.String()
}

// RefOf names a decoded object.
func RefOf(obj map[string]interface{}) ObjectRef {
	u := unstructured.Unstructured{Object: obj}
	gvk := schema.FromAPIVersionAndKind(u.GetAPIVersion(), u.GetKind())
	return ObjectRef{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Name: u.GetName(), Namespace: u.GetNamespace()}
}

// ParseObjectRef reads an object's apiVersion, kind, name and namespace
// from its JSON, or its YAML, as some CSVs write
// operatorframework.io/initialization-resource although the console
// parses it as JSON.
func ParseObjectRef(s string) (ObjectRef, error) {
	var obj struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(s), &obj); err != nil {
		return ObjectRef{}, err
	}
	gv, err := schema.ParseGroupVersion(obj.APIVersion)
	if err != nil {
		return ObjectRef{}, err
	}
	return ObjectRef{Group: gv.Group, Version: gv.Version, Kind: obj.Kind, Name: obj.Metadata.Name, Namespace: obj.Metadata.Namespace}, nil
}
