package kubetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/statuscheck/statuscheck/internal/testutil"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func goodCRD(t *testing.T) *apiextv1.CustomResourceDefinition {
	data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "testdata/bundles/good/manifests/cool.operators.corp_cooloperators.yaml"))
	require.NoError(t, err)
	crd := &apiextv1.CustomResourceDefinition{}
	require.NoError(t, yaml.Unmarshal(data, crd))
	return crd
}

// TestServer starts the server, serves a CRD and writes through a
// kubeconfig as the real binary would.
func TestServer(t *testing.T) {
	s := Get(t)
	t.Logf("server started in %v", s.Started)
	c, err := s.InstallCRD(t, goodCRD(t))
	require.NoError(t, err)
	ns := Namespace("server")
	obj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": c.APIVersion("v1beta1"), "kind": "CoolOperator",
		"metadata": map[string]interface{}{"name": "cool"}, "spec": map[string]interface{}{"storageLayer": "PostgreSQL"},
		"status": map[string]interface{}{"observedGeneration": int64(5)}}}
	got, err := s.Dynamic.Resource(c.GVR("v1beta1")).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), got.GetGeneration())
	assert.NotContains(t, got.Object, "status", "the status subresource drops status on create")

	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	list, err := dyn.Resource(c.GVR("v1beta1")).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err, "the kubeconfig reaches the server")
	assert.Len(t, list.Items, 1)
}

// TestRemovedCRDsAreEachServedAsThemselves installs three
// apiextensions.k8s.io/v1beta1 CRDs, two that keep unknown fields and one
// that prunes them, and then writes a CR of each: each is served under
// its own group and with its own pruning. The apiserver keeps a CRD's
// storage by its UID, which a CRD written to etcd has only if it is given
// one.
func TestRemovedCRDsAreEachServedAsThemselves(t *testing.T) {
	s := Get(t)
	data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "testdata/bundles/rules/status-subresource-disabled/pass/manifests/cooloperators.crd.yaml"))
	require.NoError(t, err)
	no, yes := false, true
	tests := []struct {
		name string
		// preserve is spec.preserveUnknownFields.
		preserve *bool
		// kept: an unknown spec field survives the create.
		kept bool
	}{
		{name: "preserveUnknownFields not set", kept: true},
		{name: "preserveUnknownFields false", preserve: &no},
		{name: "preserveUnknownFields true", preserve: &yes, kept: true},
	}
	installed := make([]*InstalledCRD, len(tests))
	for i, tt := range tests {
		crd := &apiextv1beta1.CustomResourceDefinition{}
		require.NoError(t, yaml.Unmarshal(data, crd))
		crd.Spec.PreserveUnknownFields = tt.preserve
		installed[i], err = s.InstallRemovedCRD(t, crd)
		require.NoError(t, err)
		assert.NotEmpty(t, installed[i].CRD.UID, tt.name)
	}
	for i, tt := range tests {
		c := installed[i]
		obj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": c.APIVersion("v1beta1"), "kind": "CoolOperator",
			"metadata": map[string]interface{}{"name": "cool"}, "spec": map[string]interface{}{"storageLayer": "PostgreSQL", "unknown": "x"}}}
		got, err := s.Dynamic.Resource(c.GVR("v1beta1")).Namespace(Namespace("removed")).Create(context.Background(), obj, metav1.CreateOptions{})
		if !assert.NoError(t, err, tt.name) {
			continue
		}
		_, kept, _ := unstructured.NestedString(got.Object, "spec", "unknown")
		assert.Equal(t, tt.kept, kept, "%s: the unknown field kept", tt.name)
	}
}
