package bundle

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const crdName = "manifests/cool.operators.corp_cooloperators.yaml"

// TestItemPathsLoadACSVFile is issue 27's path item: a CSV file, which
// generate takes, is a bundle to validate too: that CSV with the
// manifests beside it (and, in a bundle's manifests/, its metadata/).
// Another CSV in the same directory is not this bundle's.
func TestItemPathsLoadACSVFile(t *testing.T) {
	dir := writeBundle(t, map[string]string{csvName: readGood(t, csvName), crdName: readGood(t, crdName), "metadata/annotations.yaml": readGood(t, "metadata/annotations.yaml")})
	file := filepath.Join(dir, csvName)
	b, err := Load(file, Options{})
	require.NoError(t, err)
	assert.Equal(t, file, b.Path)
	require.Len(t, b.CSVs, 1)
	assert.Equal(t, file, b.CSV().Doc.File)
	assert.Len(t, b.CRDs, 1, "the CRD beside it")
	assert.NotNil(t, b.Metadata, "the bundle's metadata/")
	assert.Empty(t, b.Problems)
	assert.Equal(t, "cool-operator.v0.2.0", b.Name())

	// A second CSV beside it (a package-manifest directory of versions).
	older := filepath.Join(dir, "manifests", "cool-operator.v0.1.0.clusterserviceversion.yaml")
	require.NoError(t, os.WriteFile(older, []byte("apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: cool-operator.v0.1.0\n"), 0o644))
	for _, f := range []string{file, older} {
		b, err = Load(f, Options{})
		require.NoError(t, err)
		require.Len(t, b.CSVs, 1, f)
		assert.Equal(t, f, b.CSV().Doc.File)
		assert.NotContains(t, codes(b), CodeMultipleCSVs, "the other CSV is not this bundle's")
	}

	// A CSV that does not parse is read, and its problem reported.
	broken := filepath.Join(t.TempDir(), "x.clusterserviceversion.yaml")
	require.NoError(t, os.WriteFile(broken, []byte("apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: x\n   bad: indent\n"), 0o644))
	b, err = Load(broken, Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{CodeParse}, codes(b))
}

// TestItemPathsMetadataOnlyRoot: a bundle root with metadata/ and no
// manifests/ says so, naming the directory that is missing, instead of
// calling metadata/ a directory among the manifests.
func TestItemPathsMetadataOnlyRoot(t *testing.T) {
	dir := writeBundle(t, map[string]string{"metadata/annotations.yaml": readGood(t, "metadata/annotations.yaml")})
	b, err := Load(dir, Options{})
	require.NoError(t, err)
	require.Equal(t, []string{CodeCSVMissing}, codes(b))
	assert.Contains(t, b.Problems[0].Message, "the bundle root "+dir+" has metadata/ but no manifests/ directory: "+filepath.Join(dir, "manifests")+" does not exist")
	assert.NotNil(t, b.Metadata, "the metadata is read")
}
