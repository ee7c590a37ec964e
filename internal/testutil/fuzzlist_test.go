package testutil

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMakeFuzzRunsEveryFuzzTarget holds the Makefile's fuzz target to the
// fuzz targets the module has: each func FuzzX in a _test.go file of the
// main module (not the nested modules under test/ nor testdata) has its
// `.ci/fuzz ./PKG FuzzX` line, so that CI fuzzes every parser, and no line
// names a target that is gone.
func TestMakeFuzzRunsEveryFuzzTarget(t *testing.T) {
	root := RepoRoot()
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\t.*\.ci/fuzz (\./\S+) (Fuzz\w+) `).FindAllStringSubmatch(string(makefile), -1) {
		listed[m[1]+" "+m[2]] = true
	}
	require.NotEmpty(t, listed, "the Makefile's fuzz target lists no .ci/fuzz line")

	found := map[string]bool{}
	fuzzFunc := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(\w+ \*testing\.F\)`)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != root || rel == "test" || rel == "olm" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range fuzzFunc.FindAllStringSubmatch(string(src), -1) {
			found["./"+filepath.ToSlash(filepath.Dir(rel))+" "+m[1]] = true
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, found)
	for k := range found {
		assert.True(t, listed[k], "make fuzz does not run %s: add `GO=$(GO) .ci/fuzz %s $(FUZZTIME)` to the Makefile's fuzz target", k, k)
	}
	for k := range listed {
		assert.True(t, found[k], "make fuzz runs %s, which is no fuzz target of the module", k)
	}
}
