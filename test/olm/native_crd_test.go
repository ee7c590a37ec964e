//go:build olmnative

package olm

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
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
// why, and keeps holding. While it holds on the unserved version, OLM
// sends, counted on its side of the wire, no discovery request, no read
// of the CRD (the series has no discovery client and takes the CRD from
// OLM's CRD cache) and no request for the CR (the informer of the status
// source stops when its version is not served). Served again, the
// informer starts again; once the CRD is gone, it stops, and OLM sends no
// request for the CR either. The figure beside them is OLM's syncs of the held
// CSV a minute, each of which reset discovery in the series' previous
// revision.
func TestNativeCRDNotServedOrDeletedHolds(t *testing.T) {
	w := newWorld(t, "none")
	ctx := context.Background()
	crds := w.c.Ext.ApiextensionsV1().CustomResourceDefinitions()
	crdName := doomedGVR.Resource + "." + doomedGVR.Group
	crd := coolCRDAs(t, doomedGVR.Resource, "CoolDoomed")
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
	require.NoError(t, w.crReporting(ctx, doomedGVR, "CoolDoomed", w.ns, w.name, nil, "False", "Migrating"))
	w.installCSV(v1, "0.1.0", "")
	w.waitCSV(v1, operatorsv1alpha1.CSVPhaseSucceeded, "")
	w.installCSV(v2, "0.2.0", v1)
	t.Cleanup(func() {
		// v2 stays held for ever once the CRD is gone; held, it keeps
		// OLM's CSV queue busy for the tests that follow (OLM runs as long
		// as the test binary).
		err := w.c.OLM.OperatorsV1alpha1().ClusterServiceVersions(w.ns).Delete(context.Background(), v2, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	})
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

	// In the window, every request OLM sends is counted on OLM's side
	// (Cluster.OLMRequests): the apiserver's metric does not count
	// requests for a version it does not serve, nor legacy and
	// group-version discovery.
	_, _, held := w.csvMessage(v2)
	s0 := w.c.OLMRequests.snapshot()
	w.pokedHolding(v2, held, loadWindow)
	req := olmRequestsOf(w, s0, crdName, v1)
	logLoad(t, fmt.Sprintf("load native, version not served, %s on OLM's side: syncs of the held CSV (GETs of %s) %.0f/min (%d); discovery requests %d; GETs of the CRD %d; requests for the CR %d %v",
		loadWindow, v1, float64(req.runs)/loadWindow.Minutes(), req.runs, req.discovery, req.crd, req.cr, req.seen))
	assert.Positive(t, req.runs, "OLM synced the held CSV in the window (else the zeros below say nothing)")
	assert.Zero(t, req.discovery, "no discovery request while the version is not served: %v", req.seen)
	assert.Zero(t, req.crd, "the CRD is read from OLM's cache: %v", req.seen)
	assert.Zero(t, req.cr, "no request for the CR of an unserved version (no informer relisting it): %v", req.seen)

	// Served again: OLM holds on the CR's False again, and its informer
	// of the CR starts again (its LIST and WATCH are seen on OLM's side),
	// so that the CRD's deletion below has an informer to stop.
	s0 = w.c.OLMRequests.snapshot()
	patch, err = json.Marshal([]map[string]interface{}{{"op": "replace", "path": "/spec/versions/0/served", "value": true}})
	require.NoError(t, err)
	_, err = crds.Patch(ctx, crdName, types.JSONPatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
	w.waitHeld(v2, `"Upgradeable"="False": Migrating`)
	w.waitUntil("OLM's informer of the CR to list and watch it again", 60*time.Second, func() bool {
		return olmRequestsOf(w, s0, crdName, v1).cr > 0
	})

	// The CRD deleted, and the CR with it. whenAbsent is Allow: a CR
	// that does not exist of a kind that is served would let v2 through;
	// a kind that is not installed holds, and its informer stops.
	require.NoError(t, crds.Delete(ctx, crdName, metav1.DeleteOptions{}))
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := crds.Get(ctx, crdName, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}), "the CRD is gone")
	notInstalled := fmt.Sprintf("the CustomResourceDefinition %s of the status source is not installed: holding until it is", crdName)
	w.waitHeld(v2, notInstalled)
	_, _, held = w.csvMessage(v2)
	s0 = w.c.OLMRequests.snapshot()
	w.pokedHolding(v2, held, 5*time.Second)
	req = olmRequestsOf(w, s0, crdName, v1)
	assert.Positive(t, req.runs, "OLM synced the held CSV while the CRD was gone")
	assert.Zero(t, req.cr, "no request for the CR of a CRD that is gone: %v", req.seen)
}

// pokedHolding writes a label on csv every 100 ms for d, and fails unless
// csv is held on message after each write, and once more 300 ms after the
// last. OLM syncs a held CSV on its own (the Replacing loop, when the CSV
// it replaces has entered it) or not at all; each write syncs it, and so
// runs the gate, in either case. (Each check reads what the syncs before
// it wrote; the last one reads the answer to the last write.)
func (w *world) pokedHolding(csv, message string, d time.Duration) {
	w.t.Helper()
	ctx := context.Background()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		poke := fmt.Sprintf(`{"metadata":{"labels":{"statuscheck.test/poke":%q}}}`, time.Now().Format("150405.000000"))
		_, err := w.c.OLM.OperatorsV1alpha1().ClusterServiceVersions(w.ns).Patch(ctx, csv, types.MergePatchType, []byte(poke), metav1.PatchOptions{})
		require.NoError(w.t, err)
		w.heldOn(csv, message)
	}
	time.Sleep(300 * time.Millisecond)
	w.heldOn(csv, message)
}

// olmRequests are the requests OLM sent since a snapshot, by what they
// read.
type olmRequests struct {
	// runs are GETs of the CSV the held one replaces: OLM reads it on
	// each sync of the held CSV, before the gate runs
	// (pkg/lib/csv/replace_finder.go, IsReplacing: a live GET).
	runs int
	// discovery are GETs of /api, /apis and the group and version
	// documents under them.
	discovery int
	// crd are GETs of the status source's CRD; cr, requests of any verb
	// for resources of the status source's kind.
	crd, cr int
	seen    []string
}

func olmRequestsOf(w *world, s0 map[string]int, crdName, replaced string) olmRequests {
	var r olmRequests
	var seen []string
	r.runs, _ = w.c.OLMRequests.since(s0, func(method, path string) bool {
		return method == "GET" && path == fmt.Sprintf("/apis/operators.coreos.com/v1alpha1/namespaces/%s/clusterserviceversions/%s", w.ns, replaced)
	})
	r.discovery, seen = w.c.OLMRequests.since(s0, func(method, path string) bool {
		parts := strings.Split(strings.Trim(path, "/"), "/")
		return method == "GET" && ((parts[0] == "api" && len(parts) <= 2) || (parts[0] == "apis" && len(parts) <= 3))
	})
	r.seen = append(r.seen, seen...)
	r.crd, seen = w.c.OLMRequests.since(s0, func(method, path string) bool {
		return method == "GET" && strings.HasSuffix(path, "/customresourcedefinitions/"+crdName)
	})
	r.seen = append(r.seen, seen...)
	r.cr, seen = w.c.OLMRequests.since(s0, func(_, path string) bool {
		prefix := "/apis/" + doomedGVR.GroupVersion().String() + "/"
		return strings.HasPrefix(path, prefix) && slices.Contains(strings.Split(strings.TrimPrefix(path, prefix), "/"), doomedGVR.Resource)
	})
	r.seen = append(r.seen, seen...)
	return r
}
