package warmstart

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBundles: the manifest files validate's arguments name, a bundle at
// a time, whatever flags stand among them.
func TestBundles(t *testing.T) {
	dir := t.TempDir()
	mk := func(rel string) string {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("kind: X\n"), 0o644))
		return p
	}
	aCSV, aCRD := mk("a/manifests/csv.yaml"), mk("a/manifests/crd.yaml")
	mk("a/metadata/annotations.yaml")
	bCSV := mk("bundles/b/manifests/csv.yaml")
	cCSV := mk("bundles/c/manifests/csv.yaml")
	mk("bundles/README.md")
	mk("bundles/.hidden/manifests/csv.yaml")
	mk("a/manifests/.hidden.yaml")
	mk("-x/manifests/csv.yaml")
	guard := mk("guard.yaml")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "a/manifests/sub"), 0o755))
	a, bundles := filepath.Join(dir, "a"), filepath.Join(dir, "bundles")
	for _, tc := range []struct {
		name string
		args []string
		want [][]string
	}{
		{name: "a bundle root", args: []string{"validate", a}, want: [][]string{{aCRD, aCSV}}},
		{name: "a directory of bundles", args: []string{"validate", bundles}, want: [][]string{{bCSV}, {cCSV}}},
		{name: "flags and their values", args: []string{"validate", "-o", "json", "--fail-on=warning", "--guards", guard, a}, want: [][]string{{aCRD, aCSV}}},
		{name: "after --", args: []string{"validate", "--", a}, want: [][]string{{aCRD, aCSV}}},
		{name: "a path like a flag after --", args: []string{"validate", "--", "-x"}, want: [][]string{{"-x/manifests/csv.yaml"}}},
		{name: "a path like a flag before --", args: []string{"validate", "-x"}},
		{name: "a manifests directory is left to the loader", args: []string{"validate", filepath.Join(a, "manifests")}},
		{name: "a path that does not exist", args: []string{"validate", filepath.Join(dir, "nothing")}},
		{name: "another command", args: []string{"generate", a}},
		{name: "no arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(dir)
			assert.Equal(t, tc.want, slices.Collect(Bundles(tc.args)))
		})
	}
}

// TestBundlesDrawnLazily: the sequence reads no further than it is drawn.
func TestBundlesDrawnLazily(t *testing.T) {
	dir := t.TempDir()
	for _, b := range []string{"b1", "b2"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, b, "manifests"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, b, "manifests", "csv.yaml"), nil, 0o644))
	}
	var got [][]string
	for files := range Bundles([]string{"validate", dir}) {
		// The second bundle's manifests go away before it is drawn.
		require.NoError(t, os.RemoveAll(filepath.Join(dir, "b2")))
		got = append(got, files)
	}
	assert.Equal(t, [][]string{{filepath.Join(dir, "b1", "manifests", "csv.yaml")}}, got)
}

// TestNothingStartedInATest: a process whose first argument is not
// validate (this test binary's) parses nothing ahead.
func TestNothingStartedInATest(t *testing.T) {
	assert.Nil(t, Parsed())
}
