package bundle

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/manifest"
)

// TestLoadReportsInFileOrder: the loader parses the largest files first,
// and reports what it found in file-name order all the same.
func TestLoadReportsInFileOrder(t *testing.T) {
	dir := t.TempDir()
	doc := func(name, pad string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\ndata: {pad: '" + pad + "'}\n---\nkind: Extra\n"
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(doc("a", "")), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.yaml"), []byte(doc("b", strings.Repeat("x", 64<<10))), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(doc("c", strings.Repeat("x", 8<<10))), 0o644))
	b, err := Load(dir, Options{})
	require.NoError(t, err)
	var files []string
	for _, p := range b.Problems {
		if p.Code == CodeMultiDocument {
			files = append(files, filepath.Base(p.Pos.File))
		}
	}
	assert.Equal(t, []string{"a.yaml", "b.yaml", "c.yaml"}, files)
}

// TestLoadThroughPreparsed: a bundle loaded through manifests parsed
// ahead (manifest.Preparse, as statuscheck validate does while it starts)
// is the bundle loaded without them, for every bundle of the testdata.
func TestLoadThroughPreparsed(t *testing.T) {
	roots, err := filepath.Glob("../../testdata/bundles/*/*")
	require.NoError(t, err)
	assert.Greater(t, loadThroughPreparsed(t, roots), 10)
}

// TestLoadThroughPreparsedCorpus: the same for the corpus's bundles.
func TestLoadThroughPreparsedCorpus(t *testing.T) {
	roots := testutil.CorpusBundles(t)
	assert.Equal(t, len(roots), loadThroughPreparsed(t, roots))
}

// loadThroughPreparsed loads each directory among roots with and without
// their manifests parsed ahead, requires the same, and says how many
// directories it loaded.
func loadThroughPreparsed(t *testing.T, roots []string) int {
	var groups [][]string
	for _, r := range roots {
		files, _ := filepath.Glob(filepath.Join(r, "manifests", "*"))
		groups = append(groups, files)
	}
	parsed := manifest.Preparse(slices.Values(groups), manifest.DefaultLimits)
	n := 0
	for _, r := range roots {
		if st, err := os.Stat(r); err != nil || !st.IsDir() {
			continue
		}
		got, gotErr := Load(r, Options{Parsed: parsed})
		want, wantErr := Load(r, Options{})
		require.Equal(t, wantErr, gotErr, r)
		require.Equal(t, want, got, r)
		n++
	}
	return n
}
