package bundle

import (
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"

	"github.com/statuscheck/statuscheck/pkg/crd"
	"github.com/statuscheck/statuscheck/pkg/manifest"
)

// WarmDecoders decodes an empty object of each kind the loader decodes
// into its type (a CSV, a CRD of either apiVersion), as the loader does,
// and throws the results away. What it leaves is what the first decode
// of each type costs once in a process: encoding/json's field and
// encoder caches for the type's whole tree (a CSV's holds a PodSpec's),
// and the v1beta1 CRD's conversion scheme. That is about a tenth of
// a validate process of a small bundle; internal/warmdecode runs it in
// the background while the binary's packages initialise.
func WarmDecoders() {
	for _, doc := range warmDocuments() {
		decodeObject(doc)
	}
}

// warmDocuments are the empty objects WarmDecoders decodes.
func warmDocuments() []*manifest.Document {
	var out []*manifest.Document
	for _, gvk := range [][2]string{
		{v1alpha1.SchemeGroupVersion.String(), CSVKind},
		{apiextv1.SchemeGroupVersion.String(), crd.Kind},
		{apiextv1beta1.SchemeGroupVersion.String(), crd.Kind},
	} {
		docs, err := manifest.Parse("", []byte(`{"apiVersion":"`+gvk[0]+`","kind":"`+gvk[1]+`"}`), manifest.DefaultLimits)
		if err == nil {
			out = append(out, docs...)
		}
	}
	return out
}
