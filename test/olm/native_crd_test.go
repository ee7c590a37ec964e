//go:build olmnative

package olm

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/statuscheck/statuscheck/internal/testutil"
)

// doomedGVR is the resource of a CRD of its own that
// TestNativeCRDNotServedOrDeletedHolds takes away: the other tests share
// the CoolOperator CRD.
var doomedGVR = schema.GroupVersionResource{Group: "cool.operators.corp", Version: "v1beta1", Resource: "cooldoomeds"}

// TestNativeCRDNotServedOrDeletedHolds: the status source's CRD stops
// serving the annotation's version, then is deleted, while OLM holds a
// replacement on the CR's Upgradeable=False. With the default whenAbsent
// (Allow), a CR that is gone with its CRD must not read as a CR that does
// not exist: the patched OLM holds, with a message that names the CRD and
// why, and keeps holding. While it holds on the unserved version, the
// apiserver counts no aggregated-discovery request and no read of the CRD
// (the series has no discovery client and takes the CRD from OLM's CRD
// cache). Requests for the unserved version of the CR, and legacy or
// group-version discovery, are not in apiserver_request_total, so those
// zeros do not cover them. The figure beside them is the gate's runs a
// minute, each of which reset discovery in the series' previous revision.
func TestNativeCRDNotServedOrDeletedHolds(t *testing.T) {
	w := newWorld(t, "none")
	ctx := context.Background()
	crds := w.c.Ext.ApiextensionsV1().CustomResourceDefinitions()
	crdName := doomedGVR.Resource + "." + doomedGVR.Group
	crd := testutil.ReadCRD(t, filepath.Join("testdata", "bundles", "handshake", "none", "manifests", "cool.operators.corp_cooloperators.yaml"))
	crd.Name = crdName
	crd.Spec.Names = apiextv1.CustomResourceDefinitionNames{Plural: doomedGVR.Resource, Singular: "cooldoomed", Kind: "CoolDoomed", ListKind: "CoolDoomedList"}
	crd.ResourceVersion, crd.UID = "", ""
	require.NoError(t, w.c.installCRD(crd))
	t.Cleanup(func() {
		if err := crds.Delete(context.Background(), crdName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	})

	// v1 owns the CRD and names its CR, which says a fresh False.
	w.csv = w.csv.DeepCopy()
	w.csv.Spec.CustomResourceDefinitions.Owned = append(w.csv.Spec.CustomResourceDefinitions.Owned,
		operatorsv1alpha1.CRDDescription{Name: crdName, Version: doomedGVR.Version, Kind: "CoolDoomed", DisplayName: "CoolDoomed"})
	w.annotate(`{"apiVersion":"cool.operators.corp/v1beta1","kind":"CoolDoomed","name":"cool-operator"}`)
	doomed := w.c.Dyn.Resource(doomedGVR).Namespace(w.ns)
	obj, err := doomed.Create(ctx, &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": doomedGVR.GroupVersion().String(), "kind": "CoolDoomed",
		"metadata": map[string]interface{}{"name": w.name, "namespace": w.ns}, "spec": map[string]interface{}{"storageLayer": "PostgreSQL"}}},
		metav1.CreateOptions{FieldManager: "kubectl-create"})
	require.NoError(t, err)
	obj.Object["status"] = map[string]interface{}{"conditions": []interface{}{map[string]interface{}{
		"type": "Upgradeable", "status": "False", "reason": "Migrating", "message": "Migrating", "observedGeneration": obj.GetGeneration(),
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}}
	_, err = doomed.UpdateStatus(ctx, obj, metav1.UpdateOptions{FieldManager: "cool-operator"})
	require.NoError(t, err)
	w.installCSV(v1, "0.1.0", "")
	w.waitCSV(v1, operatorsv1alpha1.CSVPhaseSucceeded, "")
	w.installCSV(v2, "0.2.0", v1)
	w.waitHeld(v2, `"Upgradeable"="False": Migrating`)

	// The version stops being served (the CRD's only one: the
	// apiserver allows it, and the CR stays in etcd).
	patch, err := json.Marshal([]map[string]interface{}{{"op": "replace", "path": "/spec/versions/0/served", "value": false}})
	require.NoError(t, err)
	_, err = crds.Patch(ctx, crdName, types.JSONPatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
	notServed := fmt.Sprintf("the status source version v1beta1 is not served by the CustomResourceDefinition %s: holding until it is", crdName)
	w.waitHeld(v2, notServed)
	// The apiextensions controllers update the CRD after the patch, and
	// the gate reads the CRD from the apiserver again when its
	// resourceVersion moves: the window starts once it has stayed put.
	var rv string
	stable := time.Now()
	w.waitUntil("the CRD to settle", 60*time.Second, func() bool {
		got, err := crds.Get(ctx, crdName, metav1.GetOptions{})
		require.NoError(t, err)
		if got.ResourceVersion != rv {
			rv, stable = got.ResourceVersion, time.Now()
		}
		return time.Since(stable) > 2*time.Second
	})

	// OLM syncs the held v2 on its own (the Replacing loop, when v1 has
	// entered it) or not at all; a label written on v2 every 100 ms
	// syncs it, and so runs the gate, in either case.
	s0 := scrapeLoad(t, w.c)
	for end := time.Now().Add(loadWindow); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		poke := fmt.Sprintf(`{"metadata":{"labels":{"statuscheck.test/poke":%q}}}`, time.Now().Format("150405.000000"))
		_, err := w.c.OLM.OperatorsV1alpha1().ClusterServiceVersions(w.ns).Patch(ctx, v2, types.MergePatchType, []byte(poke), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	d := scrapeLoad(t, w.c).since(s0)
	phase, reason, msg := w.csvMessage(v2)
	require.Equal(t, heldPhase, phase+"/"+reason, msg)
	require.Contains(t, msg, notServed)
	runs := d.count("clusterserviceversions", "", "GET")
	var discovery float64
	for k, n := range d.requests {
		// Discovery is non-resource: /api, /apis and the group and
		// version documents under them (the metric's subresource label
		// carries a non-resource request's path). The apiserver's own
		// OpenAPI controller GETs openapi/v3 after the CRD changes.
		path := strings.TrimPrefix(k.subresource, "/")
		if k.resource == "" && k.verb == "GET" && (path == "api" || path == "apis" || strings.HasPrefix(path, "api/") || strings.HasPrefix(path, "apis/")) {
			discovery += n
		}
	}
	logLoad(t, d.report("native, version not served")...)
	logLoad(t, fmt.Sprintf("load native, version not served: discovery requests %.1f/min (%g), GETs of the CRD %.1f/min (%g), requests of the CR %g; the gate's runs %.1f/min (%g): the series' previous revision reset discovery on each",
		d.perMinute(discovery), discovery, d.perMinute(d.count("customresourcedefinitions", "*", "GET")), d.count("customresourcedefinitions", "*", "GET"),
		d.count(doomedGVR.Resource, "*", "GET")+d.count(doomedGVR.Resource, "*", "LIST"), d.perMinute(runs), runs))
	assert.Positive(t, runs, "OLM ran the gate in the window (else the zeros below say nothing)")
	assert.Zero(t, discovery, "no discovery request while the version is not served")
	assert.Zero(t, d.count("customresourcedefinitions", "*", "GET")+d.count("customresourcedefinitions", "*", "LIST"), "the CRD is read from OLM's cache")
	assert.Zero(t, d.count(doomedGVR.Resource, "*", "GET")+d.count(doomedGVR.Resource, "*", "LIST"), "the CR of an unserved version is not read")

	// The CRD deleted, and the CR with it. whenAbsent is Allow: a CR
	// that does not exist of a kind that is served would let v2 through;
	// a kind that is not installed holds.
	require.NoError(t, crds.Delete(ctx, crdName, metav1.DeleteOptions{}))
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := crds.Get(ctx, crdName, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}), "the CRD is gone")
	notInstalled := fmt.Sprintf("the CustomResourceDefinition %s of the status source is not installed: holding until it is", crdName)
	w.waitHeld(v2, notInstalled)
	_, _, msg = w.csvMessage(v2)
	w.keepsHolding(v2, msg, 3*time.Second)
}
