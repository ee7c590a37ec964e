// Package apiserver runs what the apiextensions-apiserver runs for a custom
// resource, with the apiserver's own code and without a server: the request
// decoding (pruning, embedded metadata, defaulting), the registry strategy
// (metadata.generation, the status reset), validation (OpenAPI, CEL,
// list types, metadata) and deletion with finalizers. It also validates a
// CustomResourceDefinition the way the apiserver does before it accepts one.
//
// Everything here is built from k8s.io/apiextensions-apiserver and
// k8s.io/apiserver; where a step of the apiserver is unexported, the few
// lines are repeated with the file and function they come from. A Resource
// is built once per CRD version (structural schema, validators, compiled
// CEL programs) and is safe for concurrent use.
package apiserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	apiextinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/crdserverscheme"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/statuscheck/statuscheck/internal/jsonobj"
	"github.com/statuscheck/statuscheck/internal/upstream/customresource"
	"github.com/statuscheck/statuscheck/internal/upstream/registry"
)

// Resource is one version of a CRD as the apiserver serves it.
type Resource struct {
	// GVK is the served group, version and kind.
	GVK schema.GroupVersionKind
	// Namespaced is the CRD's scope.
	Namespaced bool
	// StatusSubresource says whether /status is a subresource.
	StatusSubresource bool
	// PreserveUnknownFields is the CRD's spec.preserveUnknownFields
	// (true for a v1beta1 CRD unless it says false): nothing is pruned.
	PreserveUnknownFields bool
	// HasSchema says whether the version has an openAPIV3Schema.
	HasSchema bool
	// Schema is the version's openAPIV3Schema as the CRD declares it (nil
	// without one). It is for finding fields; the verdicts come from the
	// apiserver's code.
	Schema *apiextv1.JSONSchemaProps

	structural *structuralschema.Structural
	shifts     bool // ShiftsGenerations
	scale      bool // a scale subresource
	// values is Values, built on first use (validate never asks).
	valuesOnce sync.Once
	values     *Values
	main       mainStrategy
	status     rest.RESTUpdateStrategy
}

// mainStrategy is what customresource.NewStrategy returns, seen through
// the interfaces the generic registry uses.
type mainStrategy interface {
	rest.RESTCreateStrategy
	rest.RESTUpdateStrategy
}

// NewResource builds version of crd as the apiextensions-apiserver builds
// its serving info (pkg/apiserver/customresource_handler.go,
// getOrCreateServingInfoFor): the structural schema with its defaults
// pruned, the OpenAPI validators for the object and for status, and the
// registry strategy (pkg/registry/customresource NewStrategy, which
// compiles the CEL rules). It fails where the apiserver could not serve the
// version; ValidateCRD says why the apiserver would refuse the CRD.
func NewResource(crd *apiextv1.CustomResourceDefinition, version string) (*Resource, error) {
	var v *apiextv1.CustomResourceDefinitionVersion
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == version {
			v = &crd.Spec.Versions[i]
		}
	}
	if v == nil {
		return nil, fmt.Errorf("CRD %s has no version %s", crd.Name, version)
	}
	r := &Resource{
		GVK:                   schema.GroupVersionKind{Group: crd.Spec.Group, Version: version, Kind: crd.Spec.Names.Kind},
		Namespaced:            crd.Spec.Scope != apiextv1.ClusterScoped,
		StatusSubresource:     v.Subresources != nil && v.Subresources.Status != nil,
		PreserveUnknownFields: crd.Spec.PreserveUnknownFields,
	}
	var internalSchema *apiextinternal.JSONSchemaProps
	if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
		r.HasSchema = true
		r.Schema = v.Schema.OpenAPIV3Schema
		internal := &apiextinternal.CustomResourceValidation{}
		if err := apiextv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, internal, nil); err != nil {
			return nil, fmt.Errorf("converting the schema of %s: %w", r.GVK, err)
		}
		internalSchema = internal.OpenAPIV3Schema
		s, err := structuralschema.NewStructural(internalSchema)
		switch {
		case err != nil && !r.PreserveUnknownFields:
			return nil, fmt.Errorf("the schema of %s is not structural: %w", r.GVK, err)
		case err == nil && !r.PreserveUnknownFields:
			// As the handler does: its own copy, defaults pruned.
			s = s.DeepCopy()
			if err := structuraldefaulting.PruneDefaults(s); err != nil {
				return nil, fmt.Errorf("pruning the defaults of %s: %w", r.GVK, err)
			}
		}
		if err == nil {
			r.structural = s
		}
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internalSchema)
	if err != nil {
		return nil, fmt.Errorf("building the validator of %s: %w", r.GVK, err)
	}
	var statusSpec *apiextinternal.CustomResourceSubresourceStatus
	var statusValidator apiservervalidation.SchemaValidator
	if r.StatusSubresource {
		statusSpec = &apiextinternal.CustomResourceSubresourceStatus{}
		if internalSchema != nil && internalSchema.Properties != nil {
			if statusSchema, ok := internalSchema.Properties["status"]; ok {
				if statusValidator, _, err = apiservervalidation.NewSchemaValidator(&statusSchema); err != nil {
					return nil, fmt.Errorf("building the status validator of %s: %w", r.GVK, err)
				}
			}
		}
	}
	var scaleSpec *apiextinternal.CustomResourceSubresourceScale
	if v.Subresources != nil && v.Subresources.Scale != nil {
		scaleSpec = &apiextinternal.CustomResourceSubresourceScale{}
		if err := apiextv1.Convert_v1_CustomResourceSubresourceScale_To_apiextensions_CustomResourceSubresourceScale(v.Subresources.Scale, scaleSpec, nil); err != nil {
			return nil, fmt.Errorf("converting the scale subresource of %s: %w", r.GVK, err)
		}
	}
	strategy := customresource.NewStrategy(crdserverscheme.NewUnstructuredObjectTyper(), r.Namespaced, r.GVK,
		validator, statusValidator, r.structural, statusSpec, scaleSpec, v.SelectableFields)
	r.main = sortedMain{strategy}
	r.status = sortedUpdate{customresource.NewStatusStrategy(strategy)}
	r.shifts = shiftInvariant(r.Schema)
	r.scale = scaleSpec != nil
	return r, nil
}

// The schema validator lists a refusal's field errors in the order it
// walks the object's properties, a Go map's (kube-openapi
// validate.objectValidator ranges over Properties), so the same write is
// refused with its errors in a different order from one request to the
// next, on a server as here. The strategies are wrapped to sort them (by
// field, then message) before rest.BeforeCreate/BeforeUpdate build the
// apiserver's Invalid error from them: the same write, the same message.
type sortedMain struct{ mainStrategy }

func (s sortedMain) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	return sortErrors(s.mainStrategy.Validate(ctx, obj))
}

func (s sortedMain) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return sortErrors(s.mainStrategy.ValidateUpdate(ctx, obj, old))
}

type sortedUpdate struct{ rest.RESTUpdateStrategy }

func (s sortedUpdate) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return sortErrors(s.RESTUpdateStrategy.ValidateUpdate(ctx, obj, old))
}

func sortErrors(errs field.ErrorList) field.ErrorList {
	slices.SortStableFunc(errs, func(a, b *field.Error) int {
		return cmp.Or(cmp.Compare(a.Field, b.Field), cmp.Compare(a.Error(), b.Error()))
	})
	return errs
}

// Refusal is a write the apiserver refuses: nothing changes.
type Refusal struct {
	// Err is the apiserver's error, as a client would receive it.
	Err error
	// Fields are the field errors of an Invalid refusal.
	Fields field.ErrorList
}

func (r *Refusal) Error() string { return r.Err.Error() }

func refused(err error) *Refusal {
	out := &Refusal{Err: err}
	var se *apierrors.StatusError
	if errors.As(err, &se) && se.ErrStatus.Details != nil {
		for _, c := range se.ErrStatus.Details.Causes {
			out.Fields = append(out.Fields, &field.Error{Type: field.ErrorType(c.Type), Field: c.Field, Detail: c.Message})
		}
	}
	return out
}

func invalid(r *Resource, name string, errs field.ErrorList) *Refusal {
	return &Refusal{Err: apierrors.NewInvalid(r.GVK.GroupKind(), name, errs), Fields: errs}
}

// Clock gives the time the apiserver would stamp (creationTimestamp,
// deletionTimestamp); the simulation injects a fixed one.
type Clock func() time.Time

// request is the context a handler gives the registry: the namespace of
// the request, which is the object's.
func (r *Resource) request(obj *unstructured.Unstructured) context.Context {
	ns := ""
	if r.Namespaced {
		ns = obj.GetNamespace()
	}
	return genericapirequest.WithNamespace(genericapirequest.NewContext(), ns)
}

// place puts a namespaced object that names no namespace into "default",
// as kubectl does without -n; the gate does not care which namespace.
func (r *Resource) place(u *unstructured.Unstructured) {
	if r.Namespaced && u.GetNamespace() == "" {
		u.SetNamespace(metav1.NamespaceDefault)
	}
}

// decode is what the request decoder does to a custom resource before the
// registry sees it (pkg/apiserver/customresource_handler.go:
// unstructuredSchemaCoercer.apply, then unstructuredDefaulter.Default in
// the versioning codec): metadata is read as ObjectMeta, unknown fields are
// pruned unless preserveUnknownFields, non-nullable nulls without defaults
// are dropped, embedded ObjectMeta is coerced, then defaults are applied.
func (r *Resource) decode(u *unstructured.Unstructured) *Refusal {
	kind, foundKind, err := unstructured.NestedString(u.Object, "kind")
	if err != nil {
		return refused(apierrors.NewBadRequest(err.Error()))
	}
	apiVersion, foundAPIVersion, err := unstructured.NestedString(u.Object, "apiVersion")
	if err != nil {
		return refused(apierrors.NewBadRequest(err.Error()))
	}
	objectMeta, foundObjectMeta, _, err := schemaobjectmeta.GetObjectMetaWithOptions(u.Object, schemaobjectmeta.ObjectMetaOptions{})
	if err != nil {
		return refused(apierrors.NewBadRequest(err.Error()))
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return refused(apierrors.NewBadRequest(err.Error()))
	}
	if gv.Group == r.GVK.Group && kind == r.GVK.Kind && r.structural != nil {
		if !r.PreserveUnknownFields {
			structuralpruning.PruneWithOptions(u.Object, r.structural, true, structuralschema.UnknownFieldPathOptions{})
			structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, r.structural)
		}
		if ferr, _ := schemaobjectmeta.CoerceWithOptions(nil, u.Object, r.structural, false, schemaobjectmeta.CoerceOptions{}); ferr != nil {
			return refused(apierrors.NewBadRequest(ferr.Error()))
		}
	}
	if foundKind {
		u.SetKind(kind)
	}
	if foundAPIVersion {
		u.SetAPIVersion(apiVersion)
	}
	if foundObjectMeta {
		if err := schemaobjectmeta.SetObjectMeta(u.Object, objectMeta); err != nil {
			return refused(apierrors.NewBadRequest(err.Error()))
		}
	}
	if r.structural != nil {
		structuraldefaulting.Default(u.Object, r.structural)
	}
	return nil
}

// Stored reads an object as the apiserver hands out what it stored: pruned
// and defaulted (defaults apply on read too). It is how a recorded or
// hand-written starting state is brought to what a server would hold.
func (r *Resource) Stored(obj map[string]interface{}) (map[string]interface{}, error) {
	u, err := object(obj)
	if err != nil {
		return nil, err
	}
	r.place(u)
	if rf := r.decode(u); rf != nil {
		return nil, rf
	}
	return u.Object, nil
}

// object deep-copies obj into an Unstructured, checking that it holds
// only JSON values.
func object(obj map[string]interface{}) (*unstructured.Unstructured, error) {
	c, err := jsonobj.Copy(obj)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: c}, nil
}

// Create runs a create as the generic registry does (Store.Create after
// the handler filled the system fields): decode, then rest.BeforeCreate
// (PrepareForCreate sets generation 1 and drops status when /status is a
// subresource; Validate runs the schema, metadata, list-type and CEL
// checks). uid and creationTimestamp come from now.
func (r *Resource) Create(obj map[string]interface{}, now Clock) (map[string]interface{}, *Refusal) {
	u, err := object(obj)
	if err != nil {
		return nil, refused(apierrors.NewBadRequest(err.Error()))
	}
	if rf := r.decode(u); rf != nil {
		return nil, rf
	}
	r.place(u)
	u.SetUID(types.UID("statuscheck-" + u.GetName()))
	u.SetCreationTimestamp(metav1.NewTime(now()))
	u.SetResourceVersion("")
	if err := rest.BeforeCreate(r.main, r.request(u), u); err != nil {
		return nil, refused(err)
	}
	return u.Object, nil
}

// Update runs a write of the whole object through the main resource
// (Store.Update): decode, rest.BeforeUpdate (PrepareForUpdate keeps the
// old status when /status is a subresource and bumps generation when
// anything outside metadata changed; ValidateUpdate), then
// registry.ShouldDeleteDuringUpdate: an update that empties the finalizers
// of an object being deleted deletes it (deleted is then true).
func (r *Resource) Update(old, next map[string]interface{}) (out map[string]interface{}, deleted bool, rf *Refusal) {
	return r.update(r.main, old, next)
}

// UpdateStatus runs a write of status: through /status when it is a
// subresource (the status strategy keeps everything but status), else
// through the main resource, which is where a status write must go then.
func (r *Resource) UpdateStatus(old map[string]interface{}, status map[string]interface{}) (map[string]interface{}, *Refusal) {
	next := make(map[string]interface{}, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	if status == nil {
		delete(next, "status")
	} else {
		next["status"] = status
	}
	strategy := rest.RESTUpdateStrategy(r.main)
	if r.StatusSubresource {
		strategy = r.status
	}
	out, _, rf := r.update(strategy, old, next)
	return out, rf
}

func (r *Resource) update(strategy rest.RESTUpdateStrategy, old, next map[string]interface{}) (map[string]interface{}, bool, *Refusal) {
	ou, err := object(old)
	if err != nil {
		return nil, false, refused(apierrors.NewBadRequest(err.Error()))
	}
	nu, err := object(next)
	if err != nil {
		return nil, false, refused(apierrors.NewBadRequest(err.Error()))
	}
	r.place(ou)
	r.place(nu)
	if rf := r.decode(nu); rf != nil {
		return nil, false, rf
	}
	// A client updates the object it read: same resourceVersion. The
	// model keeps no resourceVersion, so it writes one for the checks and
	// takes it out again.
	ou.SetResourceVersion("1")
	nu.SetResourceVersion("1")
	ctx := r.request(ou)
	if err := rest.BeforeUpdate(strategy, ctx, nu, ou); err != nil {
		return nil, false, refused(err)
	}
	if registry.ShouldDeleteDuringUpdate(ctx, "", nu, ou) {
		return nil, true, nil
	}
	nu.SetResourceVersion("")
	return nu.Object, false, nil
}

// DeleteOptions are the options of a delete that matter here.
type DeleteOptions struct {
	// PropagationPolicy is Orphan, Background or Foreground ("" means the
	// default, Background for custom resources).
	PropagationPolicy string
}

// Delete runs a delete as the generic registry's Store.Delete does for a
// custom resource, whose strategy has no graceful deletion: with no
// finalizer (after the garbage collector's own, per propagationPolicy,
// are added or removed) the object is deleted at once; with finalizers it
// is marked as deleting: deletionTimestamp is set and generation bumped,
// once, by markAsDeleting. A second delete of an object being deleted
// changes nothing.
func (r *Resource) Delete(old map[string]interface{}, opts DeleteOptions, now Clock) (map[string]interface{}, bool, *Refusal) {
	u, err := object(old)
	if err != nil {
		return nil, false, refused(apierrors.NewBadRequest(err.Error()))
	}
	r.place(u)
	options := &metav1.DeleteOptions{}
	if opts.PropagationPolicy != "" {
		p := metav1.DeletionPropagation(opts.PropagationPolicy)
		options.PropagationPolicy = &p
	}
	ctx := r.request(u)
	if _, _, err := rest.BeforeDelete(r.main, ctx, u, options); err != nil {
		return nil, false, refused(err)
	}
	// Store.Delete then updateForGracefulDeletionAndFinalizers
	// (k8s.io/apiserver pkg/registry/generic/registry/store.go).
	update, finalizers := deletionFinalizersForGarbageCollection(u.GetFinalizers(), options)
	if update {
		u.SetFinalizers(finalizers)
	}
	if len(u.GetFinalizers()) == 0 {
		return nil, true, nil
	}
	markAsDeleting(u, now())
	return u.Object, false, nil
}

// deletionFinalizersForGarbageCollection is store.go's function of that
// name for a store with garbage collection enabled (the apiserver's
// default) and a strategy without a default garbage-collection policy (a
// custom resource's): Orphan adds "orphan", Foreground adds
// "foregroundDeletion", Background removes both; without a policy the
// object's own finalizers decide.
func deletionFinalizersForGarbageCollection(existing []string, options *metav1.DeleteOptions) (bool, []string) {
	orphan, foreground := false, false
	switch {
	case options.OrphanDependents != nil: // deprecated, but the apiserver still reads it
		orphan = *options.OrphanDependents
	case options.PropagationPolicy != nil:
		orphan = *options.PropagationPolicy == metav1.DeletePropagationOrphan
		foreground = *options.PropagationPolicy == metav1.DeletePropagationForeground
	default:
		for _, f := range existing {
			switch f {
			case metav1.FinalizerOrphanDependents:
				orphan = true
			case metav1.FinalizerDeleteDependents:
				foreground = true
			}
		}
	}
	next := []string{}
	for _, f := range existing {
		if f == metav1.FinalizerOrphanDependents || f == metav1.FinalizerDeleteDependents {
			continue
		}
		next = append(next, f)
	}
	if orphan {
		next = append(next, metav1.FinalizerOrphanDependents)
	}
	if foreground {
		next = append(next, metav1.FinalizerDeleteDependents)
	}
	if sameSet(existing, next) {
		return false, existing
	}
	return true, next
}

func sameSet(a, b []string) bool {
	in := func(s string, l []string) bool {
		for _, x := range l {
			if x == s {
				return true
			}
		}
		return false
	}
	for _, s := range a {
		if !in(s, b) {
			return false
		}
	}
	for _, s := range b {
		if !in(s, a) {
			return false
		}
	}
	return true
}

// markAsDeleting is store.go's markAsDeleting: generation moves only when
// deletionTimestamp is first set; the grace period becomes 0.
func markAsDeleting(u *unstructured.Unstructured, now time.Time) {
	if u.GetDeletionTimestamp() == nil && u.GetGeneration() > 0 {
		u.SetGeneration(u.GetGeneration() + 1)
	}
	if existing := u.GetDeletionTimestamp(); existing == nil || existing.After(now) {
		t := metav1.NewTime(now)
		u.SetDeletionTimestamp(&t)
	}
	var zero int64
	u.SetDeletionGracePeriodSeconds(&zero)
}
