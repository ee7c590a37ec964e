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
	parsed, taken := p.Stats()
	assert.Equal(t, [2]int{2, 1}, [2]int{parsed, taken}, "files parsed ahead, and taken")
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

// TestPreparseStop: after Stop the background starts no other file.
func TestPreparseStop(t *testing.T) {
	paths := preparseDir(t, map[string]string{"a.yaml": "kind: A\n"})
	p := newPreparsed(DefaultLimits)
	p.Stop()
	assert.False(t, p.parseGroup([]string{paths["a.yaml"]}))
	assert.Empty(t, p.files)
	(*Preparsed)(nil).Stop() // a nil set: nothing to stop
}

// TestPreparseNeverWaitsOnARead: a file listed as regular and a FIFO
// when the background opens it blocks the background's read, not a
// caller: the file is not the set's until it is read.
func TestPreparseNeverWaitsOnARead(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "swapped.yaml")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	p := newPreparsed(DefaultLimits)
	read := make(chan bool)
	go func() { read <- p.parseFile(fifo) }()
	docs, err := p.Parse(fifo, []byte("kind: X\n"), DefaultLimits)
	require.NoError(t, err)
	assert.Equal(t, map[string]interface{}{"kind": "X"}, docs[0].Value)
	// Let the background's open return, if it got that far (a FIFO opened
	// for reading and writing, which on Linux does not block, comes and
	// goes): it holds nothing for the file.
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	assert.False(t, <-read, "the background goes on after the caller's miss")
	parsed, _ := p.Stats()
	assert.Zero(t, parsed)
}

// TestPreparseCorpus: every manifest of the corpus's bundles, parsed
// ahead (all of them, before any is asked for), is given to its caller
// as Parse gives it.
func TestPreparseCorpus(t *testing.T) {
	var groups [][]string
	for _, b := range testutil.CorpusBundles(t) {
		files, err := filepath.Glob(filepath.Join(b, "manifests", "*"))
		require.NoError(t, err)
		groups = append(groups, files)
	}
	p := newPreparsed(DefaultLimits)
	for _, g := range groups {
		require.True(t, p.parseGroup(g))
	}
	all, _ := p.Stats()
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
	parsed, taken := p.Stats()
	assert.Equal(t, len(slices.Concat(groups...)), parsed, "every file parsed ahead")
	assert.Equal(t, all, taken, "every file parsed ahead taken")
}

// TestPreparseInTheBackground: Preparse parses in a goroutine of its own
// what Parse gives.
func TestPreparseInTheBackground(t *testing.T) {
	paths := preparseDir(t, map[string]string{"a.yaml": twoDocs, "b.yaml": "kind: B\n"})
	p := Preparse(slices.Values([][]string{{paths["a.yaml"], paths["b.yaml"]}}), DefaultLimits)
	for _, f := range []string{"a.yaml", "b.yaml"} {
		data, err := os.ReadFile(paths[f])
		require.NoError(t, err)
		got, err := p.Parse(paths[f], data, DefaultLimits)
		require.NoError(t, err)
		want, err := Parse(paths[f], data, DefaultLimits)
		require.NoError(t, err)
		require.Len(t, got, len(want))
		for i := range want {
			assert.Equal(t, want[i].Value, got[i].Value)
		}
	}
}

// TestParseOrder: a CSV by its name first, then the files before it,
// then the others, each the largest first, ties in order.
func TestParseOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
		sizes []int64
		want  []int
	}{
		{name: "none", want: []int{}},
		{name: "no CSV: the largest first, ties keep their order", files: []string{"a", "b", "c", "d"}, sizes: []int64{1, 5, 5, 3}, want: []int{1, 2, 3, 0}},
		{name: "already largest first", files: []string{"a", "b"}, sizes: []int64{9, 2}, want: []int{0, 1}},
		{name: "the CSV first, however small, then the files before it", files: []string{"m/a.yaml", "m/b.yaml", "m/op.clusterserviceversion.yaml", "m/x.yaml", "m/y.yaml"}, sizes: []int64{10, 20, 1, 900, 50}, want: []int{2, 1, 0, 3, 4}},
		{name: "the name in any case", files: []string{"m/a.yaml", "m/Op.ClusterServiceVersion.yml"}, sizes: []int64{2, 1}, want: []int{1, 0}},
		{name: "two CSVs: the larger first, then what is before the first", files: []string{"0.yaml", "a.clusterserviceversion.yaml", "b.clusterserviceversion.yaml", "c.yaml"}, sizes: []int64{1, 1, 3, 9}, want: []int{2, 1, 0, 3}},
		{name: "a directory named so is not the file", files: []string{"clusterserviceversion/crd.yaml", "x/csv.yaml"}, sizes: []int64{1, 2}, want: []int{1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, ParseOrder(tc.files, tc.sizes)) })
	}
}
