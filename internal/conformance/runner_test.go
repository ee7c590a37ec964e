package conformance

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	olmcrds "github.com/operator-framework/api/crds"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/jsonobj"
	"github.com/statuscheck/statuscheck/internal/kubetest"
	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/apiserver"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/simulate"
)

func TestMain(m *testing.M) {
	code := kubetest.Main(m)
	testutil.RemoveBinary()
	os.Exit(code)
}

// installed caches the CRDs on the server by content: one install (about
// three seconds) serves every case that needs that CRD. Installs of
// different CRDs run side by side.
var (
	installMu sync.Mutex
	installed = map[string]*installOnce{}
)

type installOnce struct {
	once sync.Once
	crd  *kubetest.InstalledCRD
	err  error
}

func install(t *testing.T, crd *apiextv1.CustomResourceDefinition) *kubetest.InstalledCRD {
	t.Helper()
	data, err := json.Marshal(crd.Spec)
	require.NoError(t, err)
	key := fmt.Sprintf("%x", sha256.Sum256(data))
	installMu.Lock()
	e, ok := installed[key]
	if !ok {
		e = &installOnce{}
		installed[key] = e
	}
	installMu.Unlock()
	e.once.Do(func() { e.crd, e.err = kubetest.Get(t).InstallCRD(t, crd) })
	require.NoError(t, e.err, "installing CRD %s", crd.Name)
	return e.crd
}

// schemalessCRD is the CRD simulate assumes when it knows none.
func schemalessCRD(src *v1alpha1.StatusSource, sub bool) *apiextv1.CustomResourceDefinition {
	gv := src.GroupVersion()
	keep := true
	v := apiextv1.CustomResourceDefinitionVersion{Name: gv.Version, Served: true, Storage: true,
		Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &keep}}}
	if sub {
		v.Subresources = &apiextv1.CustomResourceSubresources{Status: &apiextv1.CustomResourceSubresourceStatus{}}
	}
	plural := strings.ToLower(src.Kind) + "s"
	crd := &apiextv1.CustomResourceDefinition{Spec: apiextv1.CustomResourceDefinitionSpec{
		Group: gv.Group, Scope: apiextv1.NamespaceScoped,
		Names:    apiextv1.CustomResourceDefinitionNames{Kind: src.Kind, ListKind: src.Kind + "List", Plural: plural, Singular: strings.ToLower(src.Kind)},
		Versions: []apiextv1.CustomResourceDefinitionVersion{v}}}
	crd.Name = plural + "." + gv.Group
	return crd
}

// play is one run of a trace on the server beside the model.
type play struct {
	t    *testing.T
	name string
	cfg  *simulate.Config
	dyn  dynamic.Interface

	cr, oc         *kubetest.InstalledCRD
	crVer          string
	ns             string
	crName, ocName string
	// crOff and ocOff are the model's generation minus the server's: a
	// trace may start at any generation, a server always at 1.
	crOff, ocOff int64
	state        simulate.State
	step         simulate.Step
	mismatches   int
}

// newPlay installs the CRDs, creates the starting objects on the server
// and the model's initial state. crd nil means simulate's assumption for
// an unknown CRD.
func newPlay(t *testing.T, name string, crd *apiextv1.CustomResourceDefinition, cfg *simulate.Config, initial, oc map[string]interface{}) *play {
	t.Helper()
	srv := kubetest.Get(t)
	p := &play{t: t, name: name, cfg: cfg, dyn: srv.Dynamic, ns: kubetest.Namespace("conformance"), crVer: cfg.Source.GroupVersion().Version}
	if crd == nil {
		crd = schemalessCRD(cfg.Source, cfg.StatusSubresource)
	}
	res, err := apiserver.NewResource(crd, p.crVer)
	require.NoError(t, err)
	cfg.CR = res
	p.cr = install(t, crd)
	p.oc = install(t, olmcrds.OperatorCondition())
	p.state, err = simulate.Initial(cfg, initial, oc)
	require.NoError(t, err)
	if initial != nil {
		p.crName = nameOf(initial)
		real, err := p.createCR(initial)
		require.NoError(t, err, "%s: creating the initial CR", name)
		p.crOff = p.state.CR.Generation - real.GetGeneration()
		if st, ok := initial["status"].(map[string]interface{}); ok && cfg.StatusSubresource {
			real.Object["status"] = shift(st, -p.crOff)
			_, err = p.crClient().UpdateStatus(context.Background(), real, metav1.UpdateOptions{})
			require.NoError(t, err, "%s: writing the initial CR's status", name)
		}
	}
	p.ocName = "operator"
	ocObj := map[string]interface{}{"metadata": map[string]interface{}{"name": p.ocName}, "spec": map[string]interface{}{}}
	if oc != nil {
		ocObj, p.ocName = oc, nameOf(oc)
	}
	real, err := p.createOC(ocObj)
	require.NoError(t, err, "%s: creating the OperatorCondition", name)
	p.ocOff = p.state.OC.Generation - real.GetGeneration()
	if st, ok := ocObj["status"].(map[string]interface{}); ok {
		real.Object["status"] = shift(st, -p.ocOff)
		_, err = p.ocClient().UpdateStatus(context.Background(), real, metav1.UpdateOptions{})
		require.NoError(t, err, "%s: writing the initial OperatorCondition's status", name)
	}
	p.compare(0)
	return p
}

func nameOf(obj map[string]interface{}) string {
	md, _ := obj["metadata"].(map[string]interface{})
	n, _ := md["name"].(string)
	return n
}

func (p *play) crClient() dynamic.ResourceInterface {
	return p.dyn.Resource(p.cr.GVR(p.crVer)).Namespace(p.ns)
}

func (p *play) ocClient() dynamic.ResourceInterface {
	return p.dyn.Resource(p.oc.GVR("v2")).Namespace(p.ns)
}

// prepare makes a trace's object one the server takes: its API version
// under the test's group, the test's namespace, no server-managed fields.
func prepare(obj map[string]interface{}, apiVersion, ns string, off int64) *unstructured.Unstructured {
	c, _ := jsonobj.Copy(obj)
	u := &unstructured.Unstructured{Object: shift(c, -off)}
	u.SetAPIVersion(apiVersion)
	u.SetNamespace(ns)
	u.SetGeneration(0)
	u.SetResourceVersion("")
	u.SetUID("")
	u.SetCreationTimestamp(metav1.Time{})
	return u
}

func (p *play) createCR(obj map[string]interface{}) (*unstructured.Unstructured, error) {
	u := prepare(obj, p.cr.APIVersion(p.crVer), p.ns, 0)
	if u.GetKind() == "" {
		u.SetKind(p.cfg.Source.Kind)
	}
	return p.crClient().Create(context.Background(), u, metav1.CreateOptions{})
}

func (p *play) createOC(obj map[string]interface{}) (*unstructured.Unstructured, error) {
	u := prepare(obj, p.oc.APIVersion("v2"), p.ns, 0)
	u.SetKind("OperatorCondition")
	return p.ocClient().Create(context.Background(), u, metav1.CreateOptions{})
}

// shift adds delta to every observedGeneration in obj (and to
// metadata.generation), in a copy: the server's generations are the
// model's minus an offset.
func shift(obj map[string]interface{}, delta int64) map[string]interface{} {
	out, _ := shiftValue(obj, delta, "").(map[string]interface{})
	return out
}

func shiftValue(v interface{}, delta int64, key string) interface{} {
	switch x := v.(type) {
	case map[string]interface{}:
		out := make(map[string]interface{}, len(x))
		for k, e := range x {
			out[k] = shiftValue(e, delta, k)
		}
		return out
	case []interface{}:
		out := make([]interface{}, len(x))
		for i, e := range x {
			out[i] = shiftValue(e, delta, "")
		}
		return out
	case int64:
		if key == "observedGeneration" || key == "generation" {
			return x + delta
		}
	case int:
		if key == "observedGeneration" || key == "generation" {
			return int64(x) + delta
		}
	}
	return v
}

// apply plays one step on both sides and compares.
func (p *play) apply(i int, st simulate.Step) {
	p.step = st
	next, out, err := simulate.Next(p.cfg, p.state, st)
	require.NoError(p.t, err, "%s step %d: the model", p.name, i)
	modelRefused := false
	for _, v := range out.Violations {
		if v.Rule == simulate.RuleWriteRejected {
			modelRefused = true
		}
	}
	realErr := p.real(st, next)
	switch {
	case modelRefused && realErr == nil:
		p.t.Errorf("%s step %d (%s %s): the model refuses the write, the server took it", p.name, i, st.Actor, st.Action())
		p.mismatches++
	case !modelRefused && realErr != nil:
		p.t.Errorf("%s step %d (%s %s): the model took the write, the server refused it: %v", p.name, i, st.Actor, st.Action(), realErr)
		p.mismatches++
	}
	p.state = next
	p.compare(i)
}

// real plays st on the server as the issue prescribes: a user's or
// operator's update is an Update, an annotation request an Update of
// metadata, the operator's status write an UpdateStatus (an Update
// without the subresource), a delete a Delete; OLM's status copy is
// simulate.SyncOperatorConditionStatus (OLM's code) and an UpdateStatus.
func (p *play) real(st simulate.Step, next simulate.State) error {
	ctx := context.Background()
	if st.Target == v1alpha1.TargetOperatorCondition {
		return p.realOC(st)
	}
	switch st.Verb {
	case v1alpha1.VerbCreate:
		got, err := p.createCR(st.Value)
		if err == nil {
			p.crName = got.GetName()
			p.crOff = next.CR.Generation - got.GetGeneration()
		}
		return err
	case v1alpha1.VerbDelete:
		opts := metav1.DeleteOptions{}
		if pp, ok := st.Value["propagationPolicy"].(string); ok {
			pol := metav1.DeletionPropagation(pp)
			opts.PropagationPolicy = &pol
		}
		return p.crClient().Delete(ctx, p.crName, opts)
	case v1alpha1.VerbUpdate, v1alpha1.VerbRequest:
		cur, err := p.crClient().Get(ctx, p.crName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		patch := st.Value
		if st.Verb == v1alpha1.VerbRequest {
			r := p.cfg.Source.Handshake.Request
			patch = map[string]interface{}{"metadata": map[string]interface{}{"annotations": map[string]interface{}{r.Annotation: next.TokenValue}}}
			if r.SpecPath != "" {
				fields := v1alpha1.FieldPath(r.SpecPath)
				patch = map[string]interface{}{}
				m := patch
				for _, f := range fields[:len(fields)-1] {
					m[f] = map[string]interface{}{}
					m = m[f].(map[string]interface{})
				}
				m[fields[len(fields)-1]] = next.TokenValue
			}
		}
		merged := jsonobj.MergePatch(cur.Object, shift(patch, -p.crOff))
		_, err = p.crClient().Update(ctx, &unstructured.Unstructured{Object: merged}, metav1.UpdateOptions{})
		return err
	case v1alpha1.VerbUpdateStatus:
		cur, err := p.crClient().Get(ctx, p.crName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if st.Value == nil {
			delete(cur.Object, "status")
		} else {
			cur.Object["status"] = shift(st.Value, -p.crOff)
		}
		if p.cfg.StatusSubresource {
			_, err = p.crClient().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		} else {
			_, err = p.crClient().Update(ctx, cur, metav1.UpdateOptions{})
		}
		return err
	case v1alpha1.VerbUpgrade:
		// The replaced CSV's OperatorCondition goes; the new CSV's is
		// created empty.
		if err := p.ocClient().Delete(ctx, p.ocName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		p.ocName = "operator"
		got, err := p.createOC(map[string]interface{}{"metadata": map[string]interface{}{"name": p.ocName}, "spec": map[string]interface{}{}})
		if err == nil {
			p.ocOff = next.OC.Generation - got.GetGeneration()
		}
		return err
	}
	return nil // check: nothing is written
}

func (p *play) realOC(st simulate.Step) error {
	ctx := context.Background()
	switch st.Verb {
	case v1alpha1.VerbDelete:
		return p.ocClient().Delete(ctx, p.ocName, metav1.DeleteOptions{})
	case v1alpha1.VerbCreate:
		got, err := p.createOC(st.Value)
		if err == nil {
			p.ocName = got.GetName()
		}
		return err
	}
	cur, err := p.ocClient().Get(ctx, p.ocName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	switch st.Verb {
	case v1alpha1.VerbUpdate:
		_, err = p.ocClient().Update(ctx, &unstructured.Unstructured{Object: jsonobj.MergePatch(cur.Object, shift(st.Value, -p.ocOff))}, metav1.UpdateOptions{})
	case v1alpha1.VerbUpdateStatus:
		status := st.Value
		if status == nil {
			var changed bool
			status, changed, err = simulate.SyncOperatorConditionStatus(cur.Object, simulate.Epoch)
			if err != nil || !changed {
				return err
			}
		} else {
			status = shift(status, -p.ocOff)
		}
		cur.Object["status"] = status
		_, err = p.ocClient().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
	}
	return err
}

// compare reads the objects back and holds the model to them.
func (p *play) compare(i int) {
	ctx := context.Background()
	realState := p.state
	realState.CR = simulate.Object{}
	if p.crName != "" {
		got, err := p.crClient().Get(ctx, p.crName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			p.t.Fatalf("%s step %d: reading the CR: %v", p.name, i, err)
		default:
			realState.CR = simulate.NewObject(shift(got.Object, p.crOff))
		}
	}
	realState.OC = simulate.Object{}
	got, err := p.ocClient().Get(ctx, p.ocName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		p.t.Fatalf("%s step %d: reading the OperatorCondition: %v", p.name, i, err)
	default:
		realState.OC = simulate.NewObject(shift(got.Object, p.ocOff))
	}
	where := fmt.Sprintf("%s step %d", p.name, i)
	if i > 0 {
		where += fmt.Sprintf(" (%s %s, line %d)", p.step.Actor, p.step.Action(), p.step.Line)
	}
	p.same(where, "the CR exists", p.state.CR.Exists, realState.CR.Exists)
	if p.state.CR.Exists && realState.CR.Exists {
		p.same(where, "the CR's generation", p.state.CR.Generation, realState.CR.Generation)
		p.same(where, "the CR's Upgradeable", describe(p.state.CR), describe(realState.CR))
		p.same(where, "the CR is being deleted", p.state.CR.Meta["deletionTimestamp"] != nil, realState.CR.Meta["deletionTimestamp"] != nil)
	}
	p.same(where, "the OperatorCondition exists", p.state.OC.Exists, realState.OC.Exists)
	if p.state.OC.Exists && realState.OC.Exists {
		p.same(where, "the OperatorCondition's generation", p.state.OC.Generation, realState.OC.Generation)
		p.same(where, "the OperatorCondition's Upgradeable", describe(p.state.OC), describe(realState.OC))
	}
	model, real := simulate.Verdicts(p.cfg, p.state), simulate.Verdicts(p.cfg, realState)
	for k, pol := range p.cfg.Policies {
		p.same(where, fmt.Sprintf("the %s gate", pol), model[k], real[k])
	}
}

func (p *play) same(where, what string, model, real interface{}) {
	p.t.Helper()
	if fmt.Sprint(model) != fmt.Sprint(real) {
		p.t.Errorf("%s: %s: the model says %v, the server %v", where, what, model, real)
		p.mismatches++
	}
}

// describe is what the gate reads of an object's Upgradeable condition.
func describe(o simulate.Object) string {
	c := contract.Find(o.Conditions, contract.ConditionUpgradeable)
	if c == nil {
		return "none"
	}
	og := "absent"
	if c.ObservedGeneration != nil {
		og = fmt.Sprint(*c.ObservedGeneration)
	} else if o.StatusOG != nil {
		og = fmt.Sprintf("%d (status)", *o.StatusOG)
	}
	return fmt.Sprintf("%s observedGeneration %s", c.Status, og)
}
