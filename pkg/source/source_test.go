package source

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/testutil"
)

func repo(p string) string { return filepath.Join(testutil.RepoRoot(), p) }

func TestFromBundle(t *testing.T) {
	ctx, err := FromBundle(repo("testdata/bundles/handshake/request-spec"))
	require.NoError(t, err)
	assert.Equal(t, "CoolOperator", ctx.Source.Kind)
	assert.Equal(t, v1alpha1.HandshakeRequestAck, ctx.Source.Mode())
	assert.True(t, *ctx.StatusSubresource)
	assert.Equal(t, "cooloperators", ctx.Plural)
	assert.True(t, ctx.Namespaced)
	require.NotNil(t, ctx.Resource, "the CRD version is served")
	assert.NotNil(t, ctx.Example, "the CSV's example of the kind")
	assert.NotNil(t, ctx.Bundle)

	tests := []struct {
		name, dir, msg string
	}{
		{"no annotation", "testdata/bundles/rules/status-source-missing/fail", "declares no status source (run statuscheck generate)"},
		{"an invalid annotation", "testdata/bundles/rules/status-source-invalid/fail", "the status-source annotation is invalid"},
		{"two CSVs", "testdata/bundles/rules/bundle-multiple-csvs/fail", "holds 2 ClusterServiceVersions"},
		{"no CRD", "testdata/bundles/rules/status-source-crd-missing/fail", "no CRD in the bundle defines CoolOperator"},
		{"not there", "testdata/bundles/nope", "no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromBundle(repo(tt.dir))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestFromCRD(t *testing.T) {
	crdFile := repo("testdata/bundles/good/manifests/cool.operators.corp_cooloperators.yaml")
	ctx, err := FromCRD(crdFile, "cool.operators.corp/v1beta1/CoolOperator/cool-system/cool-operator")
	require.NoError(t, err)
	assert.Equal(t, "cool-system", ctx.Source.Namespace)
	assert.Equal(t, "--source cool.operators.corp/v1beta1/CoolOperator/cool-system/cool-operator", ctx.From)

	// A directory of CRDs, as config/crd/bases, with other files beside.
	dir := t.TempDir()
	data, err := os.ReadFile(crdFile)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cool.yaml"), data, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("resources: [cool.yaml]\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("# not a manifest\n"), 0o644))
	ctx, err = FromCRD(dir, "cool.operators.corp/v1beta1/CoolOperator/cool-operator")
	require.NoError(t, err)
	assert.Equal(t, "--source cool.operators.corp/v1beta1/CoolOperator/cool-operator", ctx.From)
	crds, err := LoadCRDs(dir)
	require.NoError(t, err)
	assert.Len(t, crds, 1)

	tests := []struct {
		name, path, ref, msg string
	}{
		{"another kind", crdFile, "cool.operators.corp/v1beta1/HotOperator/x", "defines no HotOperator in group cool.operators.corp (it has CoolOperator.cool.operators.corp)"},
		{"a file without CRDs", repo("testdata/bundles/good/manifests/cool-operator.clusterserviceversion.yaml"), "cool.operators.corp/v1beta1/CoolOperator/x", "holds no CustomResourceDefinition (it holds ClusterServiceVersion)"},
		{"a version the CRD lacks", crdFile, "cool.operators.corp/v9/CoolOperator/x", "has no version v9"},
		{"a bad reference", crdFile, "CoolOperator/x", "is not GROUP/VERSION/KIND/NAME"},
		{"a reference with a bad name", crdFile, "cool.operators.corp/v1beta1/CoolOperator/Not_A_Name", `--source "cool.operators.corp/v1beta1/CoolOperator/Not_A_Name": name:`},
		{"no such file", filepath.Join(dir, "nope.yaml"), "cool.operators.corp/v1beta1/CoolOperator/x", "reading --crd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromCRD(tt.path, tt.ref)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
	_, err = LoadCRDs(repo("testdata/bundles/good/manifests/cool-operator.clusterserviceversion.yaml"))
	assert.ErrorContains(t, err, "holds no CustomResourceDefinition")
}
