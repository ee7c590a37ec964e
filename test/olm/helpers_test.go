package olm

import (
	"os"
	"path/filepath"
	"sync"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
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

// installNoSubresourceCRD installs the CRD without a status subresource
// and returns its file (for --crd) and the status source's reference in
// the world's namespace (for --source).
func (w *world) installNoSubresourceCRD() (file, ref string) {
	w.t.Helper()
	noSubOnce.Do(func() {
		crd := testutil.ReadCRD(w.t, filepath.Join("testdata", "bundles", "handshake", "none", "manifests", "cool.operators.corp_cooloperators.yaml"))
		crd.Name = noSubGVR.Resource + "." + noSubGVR.Group
		crd.Spec.Names = apiextv1.CustomResourceDefinitionNames{Plural: noSubGVR.Resource, Singular: "coolnosub", Kind: "CoolNoSub", ListKind: "CoolNoSubList"}
		for i := range crd.Spec.Versions {
			crd.Spec.Versions[i].Subresources = nil
		}
		crd.ResourceVersion, crd.UID = "", ""
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
