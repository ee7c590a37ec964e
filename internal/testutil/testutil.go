// Package testutil finds the shared test data: the repository root and the
// corpus of real bundles beside the project (../shared/corpus/bundles).
package testutil

import (
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"testing"
)

// RepoRoot is the absolute path of the repository checkout.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// CorpusDir returns the directory of real bundles: $STATUSCHECK_CORPUS, or
// ../shared/corpus/bundles beside the checkout, as every developer machine
// and CI run has it. A checkout without it (a clone in a temporary folder)
// skips the corpus tests rather than failing them.
func CorpusDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("STATUSCHECK_CORPUS")
	if dir == "" {
		dir = filepath.Join(RepoRoot(), "..", "shared", "corpus", "bundles")
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		tb.Skipf("corpus of real bundles not found at %s (set STATUSCHECK_CORPUS)", dir)
	}
	return dir
}

// CorpusBundles lists the corpus bundle directories, sorted.
func CorpusBundles(tb testing.TB) []string {
	tb.Helper()
	dir := CorpusDir(tb)
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatalf("reading corpus: %v", err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		tb.Fatalf("corpus %s holds no bundles", dir)
	}
	return out
}
