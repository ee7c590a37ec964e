package apiserver

import (
	"fmt"
	"sync"
	"time"

	apiextinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/statuscheck/statuscheck/internal/upstream/customresourcedefinition"
)

// scheme knows apiextensions.k8s.io in all its versions, with defaulting
// and conversion, as the apiserver's codec does. It is built on first use:
// a process that validates no CRD (validate of bundles without a status
// source, --help, bridge) never builds it.
var scheme = sync.OnceValue(func() *runtime.Scheme {
	s := runtime.NewScheme()
	apiextinstall.Install(s)
	return s
})

// CRDRefusal is the apiserver's refusal of a CustomResourceDefinition.
type CRDRefusal = Refusal

// ValidateCRD runs a create of crd (an apiextensions.k8s.io/v1 or v1beta1
// CustomResourceDefinition, as written) through what the apiserver runs:
// the request's defaulting and conversion to the internal version, then
// rest.BeforeCreate with the CRD registry's own strategy
// (pkg/registry/customresourcedefinition: PrepareForCreate, then Validate,
// which is validation.ValidateCustomResourceDefinition: structural schema,
// list-map keys, defaults, CEL rules compiled and costed against the
// apiserver's budget, and the rest). nil means the apiserver takes it.
// The field paths of the errors are those of the internal version, as a
// client sees them ("spec.validation.openAPIV3Schema..." when every
// version has the same schema).
//
// apiextensions.k8s.io/v1beta1 has not been served since Kubernetes 1.22:
// a CRD written in it exists on a cluster only because it was created
// before, and keeps its spec.preserveUnknownFields (true unless set to
// false). Such a CRD is validated as the apiserver validates an update of
// that existing CRD (the registry strategy's ValidateUpdate, which lets
// through what an old CRD already had), not as a create, which v1 rules
// would refuse for preserveUnknownFields alone.
func ValidateCRD(crd runtime.Object) (*CRDRefusal, error) {
	s := scheme()
	in := crd.DeepCopyObject()
	s.Default(in)
	internal := &apiextinternal.CustomResourceDefinition{}
	if err := s.Convert(in, internal, nil); err != nil {
		return nil, fmt.Errorf("converting the CustomResourceDefinition to the apiserver's internal version: %w", err)
	}
	internal.UID = types.UID("statuscheck-" + internal.Name)
	internal.CreationTimestamp = metav1.NewTime(time.Unix(0, 0))
	ctx := genericapirequest.WithNamespace(genericapirequest.NewContext(), metav1.NamespaceNone)
	strategy := customresourcedefinition.NewStrategy(s)
	if crd.GetObjectKind().GroupVersionKind().Version == "v1beta1" || isV1beta1(crd) {
		old := internal.DeepCopy()
		strategy.PrepareForCreate(ctx, old) // as it was stored when created
		internal.ResourceVersion, old.ResourceVersion = "1", "1"
		if err := rest.BeforeUpdate(strategy, ctx, internal, old); err != nil {
			return refused(err), nil
		}
		return nil, nil
	}
	if err := rest.BeforeCreate(strategy, ctx, internal); err != nil {
		return refused(err), nil
	}
	return nil, nil
}

func isV1beta1(o runtime.Object) bool {
	_, ok := o.(*apiextv1beta1.CustomResourceDefinition)
	return ok
}
