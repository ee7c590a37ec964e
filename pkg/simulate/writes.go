package simulate

import (
	"fmt"
	"math"
	"sync"
	"time"

	olmcrds "github.com/operator-framework/api/crds"
	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/jsonobj"
	"github.com/statuscheck/statuscheck/pkg/apiserver"
)

// How a write reaches the apiserver model. When the status source's CRD
// is known (Config.CR), every write goes through package apiserver, which
// runs the apiextensions-apiserver's own decoding, strategy and
// validation. When it is not, the CRD is taken to keep every field
// (x-kubernetes-preserve-unknown-fields at the root, the status
// subresource as configured): creates, deletes and writes that touch
// metadata still go through package apiserver with such a schema; a write
// of spec or status alone takes a fast path (update and writeStatus below)
// that a differential test holds equal to package apiserver's answer, so
// a trace of millions of steps replays in seconds.

// The OperatorCondition's API, as OLM serves it.
const (
	OperatorConditionAPIVersion = "operators.coreos.com/v2"
	OperatorConditionKind       = "OperatorCondition"
)

// Epoch is the time the apiserver model stamps when no clock is given:
// runs are reproducible.
var Epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func (c *Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return Epoch
}

var (
	ocOnce     sync.Once
	ocResource *apiserver.Resource
	ocErr      error
)

// OperatorConditionResource serves OLM's OperatorCondition as a cluster
// with OLM installed does: operator-framework/api's CRD, version v2 (the
// one OLM reads), with its schema and status subresource.
func OperatorConditionResource() (*apiserver.Resource, error) {
	ocOnce.Do(func() {
		ocResource, ocErr = apiserver.NewResource(olmcrds.OperatorCondition(), "v2")
	})
	return ocResource, ocErr
}

var (
	schemalessMu    sync.Mutex
	schemalessCache = map[schemalessKey]*apiserver.Resource{}
)

type schemalessKey struct {
	gvk    schema.GroupVersionKind
	status bool
}

// Schemaless serves gvk from a CRD that keeps every field, for a status
// source whose CRD is not known: only metadata is validated.
func Schemaless(gvk schema.GroupVersionKind, statusSubresource bool) (*apiserver.Resource, error) {
	schemalessMu.Lock()
	defer schemalessMu.Unlock()
	k := schemalessKey{gvk, statusSubresource}
	if r, ok := schemalessCache[k]; ok {
		return r, nil
	}
	keep := true
	v := apiextv1.CustomResourceDefinitionVersion{Name: gvk.Version, Served: true, Storage: true,
		Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &keep}}}
	if statusSubresource {
		v.Subresources = &apiextv1.CustomResourceSubresources{Status: &apiextv1.CustomResourceSubresourceStatus{}}
	}
	crd := &apiextv1.CustomResourceDefinition{Spec: apiextv1.CustomResourceDefinitionSpec{
		Group: gvk.Group, Scope: apiextv1.NamespaceScoped, Names: apiextv1.CustomResourceDefinitionNames{Kind: gvk.Kind},
		Versions: []apiextv1.CustomResourceDefinitionVersion{v}}}
	crd.Name = "schemaless." + gvk.Group
	r, err := apiserver.NewResource(crd, gvk.Version)
	if err != nil {
		return nil, err
	}
	schemalessCache[k] = r
	return r, nil
}

// syncStatus is OLM's status copy of an OperatorCondition
// (SyncOperatorConditionStatus), remembered like the apiserver's answers.
func (c *Config) syncStatus(oc *Object) (map[string]interface{}, bool, error) {
	now := c.now()
	full := func() map[string]interface{} { return oc.Full(OperatorConditionAPIVersion, OperatorConditionKind) }
	if c.Memo == nil {
		return SyncOperatorConditionStatus(full(), now)
	}
	k, ok := c.Memo.key(oc)
	if !ok {
		return SyncOperatorConditionStatus(full(), now)
	}
	sk := digestOf([]byte("oc-sync"), []byte(now.Format(time.RFC3339Nano)), k[:])
	if e, hit := c.Memo.syncs[sk]; hit {
		return e.status, e.changed, nil
	}
	status, changed, err := SyncOperatorConditionStatus(full(), now)
	if err == nil {
		c.Memo.syncs[sk] = syncEntry{status, changed}
	}
	return status, changed, err
}

type syncEntry struct {
	status  map[string]interface{}
	changed bool
}

// crResource is the apiserver model of the status source.
func (c *Config) crResource() (*apiserver.Resource, error) {
	if c.CR != nil {
		return c.CR, nil
	}
	gv := c.Source.GroupVersion()
	return Schemaless(gv.WithKind(c.Source.Kind), c.StatusSubresource)
}

func (c *Config) ocResource() (*apiserver.Resource, error) {
	if c.OC != nil {
		return c.OC, nil
	}
	return OperatorConditionResource()
}

// Full is the object as the apiserver returns it (a shallow assembly: its
// maps are the object's own, not to be written to), for code that reads
// whole objects: the apiserver model's writes, the bridge's decision.
func (o Object) Full(apiVersion, kind string) map[string]interface{} {
	m := make(map[string]interface{}, len(o.Body)+4)
	for k, v := range o.Body {
		m[k] = v
	}
	md := make(map[string]interface{}, len(o.Meta)+1)
	for k, v := range o.Meta {
		md[k] = v
	}
	md["generation"] = o.Generation
	m["apiVersion"], m["kind"], m["metadata"] = apiVersion, kind, md
	if o.Status != nil {
		m["status"] = o.Status
	}
	return m
}

func (c *Config) crFull(o Object) map[string]interface{} {
	return o.Full(c.Source.APIVersion, c.Source.Kind)
}

// touchesMetadata: the write changes more than spec and status, so it
// needs the apiserver's metadata rules (finalizers, deletion, validation).
func touchesMetadata(patch map[string]interface{}) bool {
	for k := range patch {
		switch k {
		case "metadata", "apiVersion", "kind":
			return true
		}
	}
	return false
}

// writeResult is what a write did to an object.
type writeResult struct {
	obj     Object
	changed bool // status changed (it matters only without /status)
	refused *apiserver.Refusal
	// overwritten names the manager whose spec.conditions of the
	// OperatorCondition a bridge step overwrote.
	overwritten string
}

// createCR runs a create of the status source.
func createCR(cfg *Config, value map[string]interface{}) (writeResult, error) {
	res, err := cfg.crResource()
	if err != nil {
		return writeResult{}, err
	}
	obj := map[string]interface{}{"apiVersion": cfg.Source.APIVersion, "kind": cfg.Source.Kind}
	for k, v := range value {
		obj[k] = v
	}
	n, _, rf := cfg.ask("create", nil, obj, nil, func() (map[string]interface{}, bool, *apiserver.Refusal) {
		out, rf := res.Create(obj, cfg.now)
		return out, false, rf
	})
	if rf != nil {
		return writeResult{refused: rf}, nil
	}
	return writeResult{obj: n, changed: n.Status != nil}, nil
}

// updateCR runs a main-resource write (a JSON merge patch of the object).
func updateCR(cfg *Config, o Object, patch map[string]interface{}) (writeResult, error) {
	if cfg.CR == nil && !touchesMetadata(patch) && o.Generation < math.MaxInt64 {
		// At the last generation an int64 holds, the write that moves it
		// overflows and ObjectMeta validation refuses the negative
		// generation: package apiserver says so.
		n, changed := update(cfg, o, patch)
		return writeResult{obj: n, changed: changed}, nil
	}
	res, err := cfg.crResource()
	if err != nil {
		return writeResult{}, err
	}
	n, deleted, rf := cfg.ask("update", &o, patch, res, func() (map[string]interface{}, bool, *apiserver.Refusal) {
		full := cfg.crFull(o)
		return res.Update(full, jsonobj.MergePatch(full, patch))
	})
	switch {
	case rf != nil:
		return writeResult{refused: rf}, nil
	case deleted:
		return writeResult{obj: Object{}}, nil
	}
	return writeResult{obj: n, changed: !jsonobj.Equal(n.Status, o.Status)}, nil
}

// statusCR runs the operator's status write.
func statusCR(cfg *Config, o Object, status map[string]interface{}) (writeResult, error) {
	if cfg.CR == nil && (cfg.StatusSubresource || o.Generation < math.MaxInt64) {
		return writeResult{obj: writeStatus(cfg, o, status), changed: true}, nil
	}
	res, err := cfg.crResource()
	if err != nil {
		return writeResult{}, err
	}
	n, _, rf := cfg.ask("status", &o, status, res, func() (map[string]interface{}, bool, *apiserver.Refusal) {
		out, rf := res.UpdateStatus(cfg.crFull(o), status)
		return out, false, rf
	})
	if rf != nil {
		return writeResult{refused: rf}, nil
	}
	return writeResult{obj: n, changed: true}, nil
}

// deleteOptions reads a delete step's options.
func deleteOptions(st Step) apiserver.DeleteOptions {
	p, _ := st.Value["propagationPolicy"].(string)
	return apiserver.DeleteOptions{PropagationPolicy: p}
}

// deleteCR runs a delete of the status source. It is remembered like
// the other writes where the clock is the model's (a delete that marks
// an object stamps its deletionTimestamp).
func deleteCR(cfg *Config, o Object, st Step) (writeResult, error) {
	res, err := cfg.crResource()
	if err != nil {
		return writeResult{}, err
	}
	del := func() (map[string]interface{}, bool, *apiserver.Refusal) {
		return res.Delete(cfg.crFull(o), deleteOptions(st), cfg.now)
	}
	var n Object
	var deleted bool
	var rf *apiserver.Refusal
	if cfg.Now == nil {
		opts := map[string]interface{}{"propagationPolicy": deleteOptions(st).PropagationPolicy}
		n, deleted, rf = cfg.ask("delete", &o, opts, nil, del)
	} else {
		var out map[string]interface{}
		if out, deleted, rf = del(); rf == nil && !deleted {
			n = NewObject(out)
		}
	}
	switch {
	case rf != nil:
		return writeResult{refused: rf}, nil
	case deleted:
		return writeResult{obj: Object{}}, nil
	}
	return writeResult{obj: n}, nil
}

// storedCR brings a starting object to what the apiserver would hand out:
// pruned and defaulted, as a read from storage is.
func storedCR(cfg *Config, obj map[string]interface{}) (map[string]interface{}, error) {
	if cfg.CR == nil {
		return obj, nil
	}
	full := map[string]interface{}{"apiVersion": cfg.Source.APIVersion, "kind": cfg.Source.Kind}
	for k, v := range obj {
		full[k] = v
	}
	return cfg.CR.Stored(full)
}

// ocUpdate is the memo's op for an update of the OperatorCondition,
// followed by the field manager (the answer's managedFields name it).
const ocUpdate = "oc-update "

// applyOC writes OLM's OperatorCondition through its real CRD.
func applyOC(cfg *Config, oc Object, st Step) (writeResult, string, error) {
	res, err := cfg.ocResource()
	if err != nil {
		return writeResult{}, "", err
	}
	if st.Verb != v1alpha1.VerbCreate && !oc.Exists {
		return writeResult{}, fmt.Sprintf("%s of the OperatorCondition, which does not exist", st.Verb), nil
	}
	// The whole object is assembled only where the memo has no answer.
	full := func() map[string]interface{} { return oc.Full(OperatorConditionAPIVersion, OperatorConditionKind) }
	var out map[string]interface{}
	var rf *apiserver.Refusal
	deleted := false
	var n Object
	asked := false
	switch st.Verb {
	case v1alpha1.VerbUpdate:
		asked = true
		mgr := manager(st)
		n, deleted, rf = cfg.ask(ocUpdate+mgr, &oc, st.Value, res, func() (map[string]interface{}, bool, *apiserver.Refusal) {
			old := full()
			out, deleted, rf := res.Update(old, jsonobj.MergePatch(old, st.Value))
			if out != nil && !deleted && rf == nil {
				takeConditions(old, out, mgr)
			}
			return out, deleted, rf
		})
		if st.Actor == v1alpha1.ActorBridge && rf == nil && !deleted && !jsonobj.Equal(conditionsOf(oc.Body), conditionsOf(n.Body)) {
			if other := cfg.otherWriter(&oc); other != "" {
				return writeResult{obj: n, overwritten: other}, "", nil
			}
		}
	case v1alpha1.VerbUpdateStatus:
		status := st.Value
		if status == nil {
			var changed bool
			status, changed, err = cfg.syncStatus(&oc)
			if err != nil {
				return writeResult{}, "", err
			}
			if !changed {
				return writeResult{obj: oc}, "", nil
			}
		}
		asked = true
		n, _, rf = cfg.ask("oc-status", &oc, status, res, func() (map[string]interface{}, bool, *apiserver.Refusal) {
			out, rf := res.UpdateStatus(full(), status)
			return out, false, rf
		})
	case v1alpha1.VerbCreate:
		if oc.Exists {
			return writeResult{}, "create of the OperatorCondition, which exists already", nil
		}
		obj := map[string]interface{}{"apiVersion": OperatorConditionAPIVersion, "kind": OperatorConditionKind}
		for k, v := range st.Value {
			obj[k] = v
		}
		out, rf = res.Create(obj, cfg.now)
	case v1alpha1.VerbDelete:
		out, deleted, rf = res.Delete(full(), deleteOptions(st), cfg.now)
	default:
		return writeResult{}, fmt.Sprintf("%s cannot target the OperatorCondition", st.Verb), nil
	}
	switch {
	case rf != nil:
		return writeResult{refused: rf}, "", nil
	case deleted:
		return writeResult{obj: Object{}}, "", nil
	case asked:
		return writeResult{obj: n}, "", nil
	}
	return writeResult{obj: NewObject(out)}, "", nil
}

// SyncOperatorConditionStatus is OLM's status copy, line for line
// (operator-lifecycle-manager pkg/controller/operators/
// operatorcondition_controller.go, OperatorConditionReconciler.
// syncOperatorConditionStatus), on operator-framework/api's types: for each
// entry of spec.conditions in order, skip it when status already has that
// type with the same status and observedGeneration == generation, else
// stamp observedGeneration and meta.SetStatusCondition it. A type that
// left spec.conditions stays in status; of two entries of one type the
// last wins. The one change: where SetStatusCondition would read the wall
// clock for a zero lastTransitionTime, the model's clock is used. It
// returns the new status, and false when there is nothing to write.
func SyncOperatorConditionStatus(full map[string]interface{}, now time.Time) (map[string]interface{}, bool, error) {
	var oc operatorsv2.OperatorCondition
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(full, &oc); err != nil {
		return nil, false, fmt.Errorf("the OperatorCondition does not decode as operators.coreos.com/v2: %w", err)
	}
	currentGen := oc.ObjectMeta.GetGeneration()
	changed := false
	for _, cond := range oc.Spec.Conditions {
		if c := meta.FindStatusCondition(oc.Status.Conditions, cond.Type); c != nil {
			if cond.Status == c.Status && c.ObservedGeneration == currentGen {
				continue
			}
		}
		cond.ObservedGeneration = currentGen
		if cond.LastTransitionTime.IsZero() {
			cond.LastTransitionTime = metav1.NewTime(now)
		}
		meta.SetStatusCondition(&oc.Status.Conditions, cond)
		changed = true
	}
	if !changed {
		return nil, false, nil
	}
	status, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&oc.Status)
	if err != nil {
		return nil, false, err
	}
	return status, true, nil
}

// defaultOperatorCondition is the OperatorCondition OLM creates when it
// installs the CSV: empty, generation 1.
func defaultOperatorCondition(cfg *Config) (Object, error) {
	if cfg.Memo != nil && cfg.Memo.defaultOC != nil {
		return *cfg.Memo.defaultOC, nil // the same create, the same clock
	}
	res, err := cfg.ocResource()
	if err != nil {
		return Object{}, err
	}
	out, rf := res.Create(map[string]interface{}{"apiVersion": OperatorConditionAPIVersion, "kind": OperatorConditionKind,
		"metadata": map[string]interface{}{"name": "operator"}, "spec": map[string]interface{}{}}, cfg.now)
	if rf != nil {
		return Object{}, rf
	}
	o := NewObject(out)
	if cfg.Memo != nil && cfg.Now == nil { // Epoch: the answer does not change
		cfg.Memo.defaultOC = &o
	}
	return o, nil
}

// Write runs one write of the status source (an update, updateStatus or
// create step's value) through the apiserver model from o, as Next does:
// it returns the object after it, or the apiserver's refusal (and o).
func Write(cfg *Config, o Object, st Step) (Object, *apiserver.Refusal, error) {
	var w writeResult
	var err error
	switch st.Verb {
	case v1alpha1.VerbUpdate:
		w, err = updateCR(cfg, o, st.Value)
	case v1alpha1.VerbUpdateStatus:
		w, err = statusCR(cfg, o, st.Value)
	case v1alpha1.VerbCreate:
		w, err = createCR(cfg, st.Value)
	default:
		return o, nil, fmt.Errorf("%s is not a write of the status source", st.Verb)
	}
	if err != nil || w.refused != nil {
		return o, w.refused, err
	}
	return w.obj, nil, nil
}
