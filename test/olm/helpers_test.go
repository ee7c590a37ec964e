package olm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/statuscheck/statuscheck/internal/testutil"
)

// later says resourceVersion a comes after b (the etcd3 store's
// revisions; resourceversion.CompareResourceVersion).
func later(a, b string) bool {
	c, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && c > 0
}

// noSubGVR is a copy of the handshake CRD without the status
// subresource, under a kind of its own (installed once per cluster).
var noSubGVR = schema.GroupVersionResource{Group: "cool.operators.corp", Version: "v1beta1", Resource: "coolnosubs"}

var (
	noSubOnce sync.Once
	noSubFile string
)

// coolCRDAs is the CoolOperator CRD of the status-source bundle made into
// a kind of its own (plural, kind), for a test that changes its CRD
// without touching the kind the other tests share.
func coolCRDAs(t testing.TB, plural, kind string) *apiextv1.CustomResourceDefinition {
	t.Helper()
	crd := testutil.ReadCRD(t, filepath.Join("testdata", "bundles", "handshake", "none", "manifests", "cool.operators.corp_cooloperators.yaml"))
	crd.Name = plural + "." + crd.Spec.Group
	crd.Spec.Names = apiextv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"}
	crd.ResourceVersion, crd.UID = "", ""
	return crd
}

// crReporting makes a CR of gvr (kind) named name in ns, with labels, as a
// user does (field manager kubectl-create), and then writes an
// Upgradeable condition of status and reason for its generation in its
// status, as its operator does (field manager cool-operator).
func (w *world) crReporting(ctx context.Context, gvr schema.GroupVersionResource, kind, ns, name string, labels map[string]interface{}, status, reason string) error {
	res := w.c.Dyn.Resource(gvr).Namespace(ns)
	md := map[string]interface{}{"name": name, "namespace": ns}
	if labels != nil {
		md["labels"] = labels
	}
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": gvr.GroupVersion().String(), "kind": kind, "metadata": md,
		"spec": map[string]interface{}{"storageLayer": "PostgreSQL"}}}
	out, err := res.Create(ctx, obj, metav1.CreateOptions{FieldManager: "kubectl-create"})
	if err != nil {
		return err
	}
	out.Object["status"] = map[string]interface{}{"conditions": []interface{}{map[string]interface{}{
		"type": "Upgradeable", "status": status, "reason": reason, "message": reason, "observedGeneration": out.GetGeneration(),
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}}
	_, err = res.UpdateStatus(ctx, out, metav1.UpdateOptions{FieldManager: "cool-operator"})
	return err
}

// installNoSubresourceCRD installs the CRD without a status subresource
// and returns its file (for --crd) and the status source's reference in
// the world's namespace (for --source).
func (w *world) installNoSubresourceCRD() (file, ref string) {
	w.t.Helper()
	noSubOnce.Do(func() {
		crd := coolCRDAs(w.t, noSubGVR.Resource, "CoolNoSub")
		for i := range crd.Spec.Versions {
			crd.Spec.Versions[i].Subresources = nil
		}
		data, err := yaml.Marshal(crd)
		if err != nil {
			w.t.Fatal(err)
		}
		dir, err := os.MkdirTemp("", "statuscheck-olm-crd")
		if err != nil {
			w.t.Fatal(err)
		}
		noSubFile = filepath.Join(dir, "coolnosubs.yaml")
		if err := os.WriteFile(noSubFile, data, 0o644); err != nil {
			w.t.Fatal(err)
		}
		if err := w.c.installCRD(crd); err != nil {
			w.t.Fatal(err)
		}
	})
	if noSubFile == "" {
		w.t.Fatal("the CRD without a status subresource was not installed")
	}
	return noSubFile, noSubGVR.Group + "/" + noSubGVR.Version + "/CoolNoSub/" + w.ns + "/" + w.name
}

func (w *world) noSub() dynamic.ResourceInterface { return w.c.Dyn.Resource(noSubGVR).Namespace(w.ns) }
