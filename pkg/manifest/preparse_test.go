package manifest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/internal/testutil"
)

// preparseDir writes files (name: content) into a temporary directory and
// returns their paths by name.
func preparseDir(t *testing.T, files map[string]string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	paths := map[string]string{}
	for name, content := range files {
		paths[name] = filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(paths[name], []byte(content), 0o644))
	}
	return paths
}

// newPreparsed is Preparse without its goroutine: the test runs
// parseGroup itself, so that what the set holds is known.
func newPreparsed(lim Limits) *Preparsed {
	return &Preparsed{lim: lim, files: map[string]*preparse{}}
}

const twoDocs = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n"

// TestPreparsedServesWhatItParsed: a file the background parsed is given
// to the first caller with the same bytes and limits, the very documents
// parsed; a second caller gets a parse of its own.
func TestPreparsedServesWhatItParsed(t *testing.T) {
	paths := preparseDir(t, map[string]string{"a.yaml": twoDocs, "b.yaml": "kind: X\n"})
	p := newPreparsed(DefaultLimits)
	require.True(t, p.parseGroup([]string{paths["b.yaml"], paths["a.yaml"]}))
	held := p.files[paths["a.yaml"]]
	require.NotNil(t, held)
	require.Len(t, held.docs, 2)

	docs, err := p.Parse(paths["a.yaml"], []byte(twoDocs), DefaultLimits)
	require.NoError(t, err)
	assert.Same(t, held.docs[0], docs[0], "the first caller gets the documents the background parsed")
	again, err := p.Parse(paths["a.yaml"], []byte(twoDocs), DefaultLimits)
	require.NoError(t, err)
	assert.NotSame(t, docs[0], again[0], "a second caller gets a parse of its own")
	assert.Equal(t, docs[0].Value, again[0].Value)
}

// TestPreparsedIsParse: whatever the set holds, Preparsed.Parse returns
// what Parse returns for the caller's bytes and limits.
func TestPreparsedIsParse(t *testing.T) {
	oneDoc := DefaultLimits
	oneDoc.MaxDocuments = 1
	for _, tc := range []struct {
		name    string
		onDisk  string // what the background parsed
		given   string // what the caller read
		lim     Limits // the caller's limits
		wantErr string
	}{
		{name: "same bytes", onDisk: twoDocs, given: twoDocs, lim: DefaultLimits},
		{name: "the file changed since", onDisk: twoDocs, given: "kind: Changed\n", lim: DefaultLimits},
		{name: "other limits", onDisk: twoDocs, given: twoDocs, lim: oneDoc, wantErr: "more than 1 documents"},
		{name: "a syntax error", onDisk: "a: [\n", given: "a: [\n", lim: DefaultLimits, wantErr: "did not find expected node content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			paths := preparseDir(t, map[string]string{"f.yaml": tc.onDisk})
			p := newPreparsed(DefaultLimits)
			require.True(t, p.parseGroup([]string{paths["f.yaml"]}))
			got, gotErr := p.Parse(paths["f.yaml"], []byte(tc.given), tc.lim)
			want, wantErr := Parse(paths["f.yaml"], []byte(tc.given), tc.lim)
			assert.Equal(t, wantErr, gotErr)
			if tc.wantErr != "" {
				require.Error(t, gotErr)
				assert.Contains(t, gotErr.Error(), tc.wantErr)
			}
			require.Len(t, got, len(want))
			for i := range want {
				assert.Equal(t, want[i].Value, got[i].Value)
				assert.Equal(t, want[i].Pos(), got[i].Pos())
			}
		})
	}
	var none *Preparsed
	docs, err := none.Parse("x.yaml", []byte("kind: X\n"), DefaultLimits)
	require.NoError(t, err)
	assert.Equal(t, map[string]interface{}{"kind": "X"}, docs[0].Value, "a nil set parses")
}

// TestPreparseReadsOnlyRegularFiles: a FIFO (whose open would block), a
// symlink and a file over the size limit are left to the caller's loader.
func TestPreparseReadsOnlyRegularFiles(t *testing.T) {
	paths := preparseDir(t, map[string]string{"ok.yaml": "kind: X\n", "big.yaml": strings.Repeat("#", 100) + "\nkind: X\n"})
	dir := filepath.Dir(paths["ok.yaml"])
	fifo, link := filepath.Join(dir, "fifo.yaml"), filepath.Join(dir, "link.yaml")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	require.NoError(t, os.Symlink(paths["ok.yaml"], link))
	lim := DefaultLimits
	lim.MaxFileSize = 50
	p := newPreparsed(lim)
	require.True(t, p.parseGroup([]string{fifo, link, paths["big.yaml"], paths["ok.yaml"]}))
	var read []string
	for f := range p.files {
		read = append(read, filepath.Base(f))
	}
	assert.Equal(t, []string{"ok.yaml"}, read)
}

// TestPreparseStopsAtTheFirstMiss: once a caller asks for a file the set
// does not hold, the background starts no other.
func TestPreparseStopsAtTheFirstMiss(t *testing.T) {
	paths := preparseDir(t, map[string]string{"a.yaml": "kind: A\n", "b.yaml": "kind: B\n"})
	p := newPreparsed(DefaultLimits)
	_, err := p.Parse(paths["a.yaml"], []byte("kind: A\n"), DefaultLimits)
	require.NoError(t, err)
	assert.False(t, p.parseGroup([]string{paths["b.yaml"]}), "the background goes on after a miss")
	assert.NotContains(t, p.files, paths["b.yaml"], "the background parsed a file after a miss")
}

// TestPreparseCorpus: over every manifest of the corpus's bundles, parsed
// ahead in the background, each caller gets what Parse gives.
func TestPreparseCorpus(t *testing.T) {
	var groups [][]string
	for _, b := range testutil.CorpusBundles(t) {
		files, err := filepath.Glob(filepath.Join(b, "manifests", "*"))
		require.NoError(t, err)
		groups = append(groups, files)
	}
	p := Preparse(slices.Values(groups), DefaultLimits)
	for _, g := range groups {
		for _, f := range g {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			got, gotErr := p.Parse(f, data, DefaultLimits)
			want, wantErr := Parse(f, data, DefaultLimits)
			require.Equal(t, wantErr, gotErr, f)
			require.Len(t, got, len(want), f)
			for i := range want {
				require.Equal(t, want[i].Value, got[i].Value, f)
				require.Equal(t, want[i].Pos(), got[i].Pos(), f)
			}
		}
	}
}
