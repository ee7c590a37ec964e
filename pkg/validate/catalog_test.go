package validate

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/catalog/fbc"
	"github.com/statuscheck/statuscheck/pkg/result"
)

// TestCatalogEntryGetsEveryBundleCheck is issue 16's wrong answer: the
// same bundle gave two errors as a directory and none as an entry of a
// file-based catalog, whose loader skipped the kind and multiple-CSV
// checks. Both now go through bundle.FromDocuments: the findings about
// the manifests are the same, at the same lines.
func TestCatalogEntryGetsEveryBundleCheck(t *testing.T) {
	root := testutil.RepoRoot()
	good := filepath.Join(root, "testdata", "bundles", "good")
	read := func(p string) []byte {
		data, err := os.ReadFile(filepath.Join(good, p))
		require.NoError(t, err)
		return data
	}
	csv := read("manifests/cool-operator.clusterserviceversion.yaml")
	manifests := map[string][]byte{
		"cool-operator.clusterserviceversion.yaml": csv,
		"cool.operators.corp_cooloperators.yaml":   read("manifests/cool.operators.corp_cooloperators.yaml"),
		"second.clusterserviceversion.yaml":        []byte(strings.Replace(string(csv), "name: cool-operator.v0.2.0", "name: cool-operator.v0.3.0", 1)),
		"zz-deployment.yaml":                       []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: extra}\n"),
	}
	dir := t.TempDir()
	bundleDir := filepath.Join(dir, "bundle")
	require.NoError(t, os.MkdirAll(filepath.Join(bundleDir, "manifests"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(bundleDir, "metadata"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bundleDir, "metadata", "annotations.yaml"), read("metadata/annotations.yaml"), 0o644))
	var names []string
	for n := range manifests {
		names = append(names, n)
	}
	sort.Strings(names) // the order OLM and the directory loader read them in
	props := []map[string]interface{}{{"type": "olm.package", "value": map[string]string{"packageName": "cool-operator", "version": "0.2.0"}}}
	for _, n := range names {
		require.NoError(t, os.WriteFile(filepath.Join(bundleDir, "manifests", n), manifests[n], 0o644))
		props = append(props, map[string]interface{}{"type": "olm.bundle.object", "value": map[string]string{"data": base64.StdEncoding.EncodeToString(manifests[n])}})
	}
	catDir := filepath.Join(dir, "catalog", "cool-operator")
	require.NoError(t, os.MkdirAll(catDir, 0o755))
	var cat strings.Builder
	enc := json.NewEncoder(&cat)
	require.NoError(t, enc.Encode(map[string]interface{}{"schema": "olm.package", "name": "cool-operator", "defaultChannel": "stable"}))
	require.NoError(t, enc.Encode(map[string]interface{}{"schema": "olm.channel", "package": "cool-operator", "name": "stable", "entries": []map[string]string{{"name": "cool-operator.v0.2.0"}}}))
	require.NoError(t, enc.Encode(map[string]interface{}{"schema": "olm.bundle", "name": "cool-operator.v0.2.0", "package": "cool-operator", "image": "quay.io/x/cool", "properties": props}))
	require.NoError(t, os.WriteFile(filepath.Join(catDir, "catalog.json"), []byte(cat.String()), 0o644))

	fromDir := Path(bundleDir, Options{}, bundle.Options{})
	fromCatalog := Catalog(filepath.Join(dir, "catalog"), Options{Catalogs: fbc.Walk}, nil)
	require.Len(t, fromCatalog, 1)

	// A finding is the same when rule, severity, line and column agree:
	// the files are named differently (manifests/FILE and
	// catalog.json[NAME].olm.bundle.object[I]).
	type key struct {
		Rule         string
		Severity     result.Severity
		Line, Column int
	}
	keys := func(b result.Bundle) []key {
		var out []key
		for _, f := range b.Findings {
			out = append(out, key{f.Rule, f.Severity, f.Line, f.Column})
		}
		sort.Slice(out, func(i, j int) bool {
			return out[i].Rule+string(rune(out[i].Line)) < out[j].Rule+string(rune(out[j].Line))
		})
		return out
	}
	assert.Equal(t, keys(fromDir), keys(fromCatalog[0]))
	rules := map[string]bool{}
	for _, f := range fromCatalog[0].Findings {
		rules[f.Rule] = true
	}
	assert.True(t, rules["bundle-multiple-csvs"], "the catalog entry's second CSV is found: %+v", fromCatalog[0].Findings)
	assert.True(t, rules["bundle-unsupported-kind"], "the catalog entry's Deployment is found: %+v", fromCatalog[0].Findings)
}

// TestCatalogsNeedAWalker: without Options.Catalogs a catalog is an error
// of the run (exit 2 in the command), not a bundle with no findings; with
// it, the same path yields the catalog's bundles.
func TestCatalogsNeedAWalker(t *testing.T) {
	cat := filepath.Join(testutil.RepoRoot(), "testdata", "catalog")
	good := filepath.Join(testutil.RepoRoot(), "testdata", "bundles", "good")

	rep := Paths([]string{good, cat}, Options{}, bundle.Options{}, nil)
	require.Len(t, rep.Errors, 1)
	assert.Equal(t, cat, rep.Errors[0].Path)
	assert.Equal(t, cat+": "+ErrNoCatalogs.Error(), rep.Errors[0].Error)
	require.Len(t, rep.Bundles, 1, "the bundle beside it is still checked")
	assert.Equal(t, good, rep.Bundles[0].Path)

	alone := Catalog(cat, Options{}, nil)
	require.Len(t, alone, 1)
	assert.Equal(t, []string{cat + ": " + ErrNoCatalogs.Error()}, alone[0].Errors)

	rep = Paths([]string{cat}, Options{Catalogs: fbc.Walk}, bundle.Options{}, nil)
	assert.Empty(t, rep.Errors)
	assert.Len(t, rep.Bundles, 2, "testdata/catalog carries two bundles with their manifests")
}
