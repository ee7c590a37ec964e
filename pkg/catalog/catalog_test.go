package catalog

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/internal/testutil"
)

func TestIsCatalog(t *testing.T) {
	root := testutil.RepoRoot()
	assert.True(t, IsCatalog(filepath.Join(root, "testdata/catalog")))
	assert.True(t, IsCatalog(filepath.Join(root, "testdata/catalog/cool-operator/catalog.json")))
	assert.False(t, IsCatalog(filepath.Join(root, "testdata/bundles/good")))
	assert.False(t, IsCatalog(filepath.Join(root, "testdata/bundles/good/manifests")))
	assert.False(t, IsCatalog(filepath.Join(root, "testdata/nope")))
	yamlCat := filepath.Join(t.TempDir(), "index.yaml")
	require.NoError(t, os.WriteFile(yamlCat, []byte("---\nschema: olm.package\nname: x\n"), 0o644))
	assert.True(t, IsCatalog(yamlCat))
}

// TestIsCatalogReadsOnlyRegularFiles: a FIFO, whose open blocks until
// something writes to it, is not sniffed, given on its own or met in a
// directory (a bundle's manifests/ given as the path, with a FIFO in it).
func TestIsCatalogReadsOnlyRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.yaml")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte("kind: ConfigMap\n"), 0o644))
	assert.False(t, IsCatalog(fifo))
	assert.False(t, IsCatalog(dir))
}
