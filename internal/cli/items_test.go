package cli

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/internal/testutil"
)

// TestItem9GenerateOnNodeHealthCheck is issue 27, item 9, on the real
// bundle: node-healthcheck-operator-0.12.0 has no initialization
// resource, and its only NodeHealthCheck name is alm-examples'
// nodehealthcheck-sample. generate -w does not write that silently: it
// exits 2, writes nothing and offers the name as a ready-made --name;
// with it, validate says the CR may never exist.
func TestItem9GenerateOnNodeHealthCheck(t *testing.T) {
	dir := copyBundle(t, filepath.Join(testutil.CorpusDir(t), "node-healthcheck-operator-0.12.0"))
	csv := filepath.Join(dir, "manifests", "node-healthcheck-operator.clusterserviceversion.yaml")
	before, err := os.ReadFile(csv)
	require.NoError(t, err)

	code, stdout, stderr := run(t, "generate", "-w", dir)
	assert.Equal(t, 2, code, stderr)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, `the only name at hand for the NodeHealthCheck CR is "nodehealthcheck-sample", alm-examples' sample for the console`)
	assert.Contains(t, stderr, "--name nodehealthcheck-sample (alm-examples: remediation.medik8s.io/v1alpha1 NodeHealthCheck)")
	after, err := os.ReadFile(csv)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "nothing written")

	code, _, stderr = run(t, "generate", "-w", "--name", "nodehealthcheck-sample", dir)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "warning status-source-may-not-exist", "generate shows validate's warning on the value it writes")
	code, stdout, _ = run(t, "validate", dir)
	assert.NotEqual(t, 2, code)
	assert.Contains(t, stdout, `warning status-source-may-not-exist: nothing in the bundle shows that NodeHealthCheck "nodehealthcheck-sample", the CR the gate reads, is ever created`)
	assert.Contains(t, stdout, "alm-examples entry 1, a sample")
}

// TestItemPathsValidateACSVFile: validate takes a CSV file, as generate
// does: the CSV with the manifests beside it.
func TestItemPathsValidateACSVFile(t *testing.T) {
	// The same findings (place, severity, rule) as the bundle it belongs
	// to, whatever they are.
	_, whole, _ := run(t, "validate", "testdata/bundles/good")
	code, stdout, stderr := run(t, "validate", "testdata/bundles/good/manifests/cool-operator.clusterserviceversion.yaml")
	assert.NotEqual(t, 2, code, stderr)
	assert.Empty(t, stderr)
	assert.Contains(t, stdout, "1 bundle checked: ")
	findings := regexp.MustCompile(`(?m)^\S+:\d+:\d+: (error|warning|info) [a-z0-9-]+:`)
	assert.Equal(t, findings.FindAllString(whole, -1), findings.FindAllString(stdout, -1))

	code, stdout, _ = run(t, "validate", "testdata/bundles/rules/status-rbac-missing/fail/manifests/cool-operator.clusterserviceversion.yaml")
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, "error status-rbac-missing")
}

// TestItemPathsGenerateADirectoryOfBundles: generate takes a directory of
// bundles, as validate does: each bundle in it.
func TestItemPathsGenerateADirectoryOfBundles(t *testing.T) {
	parent := t.TempDir()
	for _, name := range []string{"v0.2.0", "v0.2.1"} {
		require.NoError(t, os.Rename(copyTree(t, "testdata/bundles/rules/status-source-missing/fail"), filepath.Join(parent, name)))
	}
	code, stdout, stderr := run(t, "generate", parent)
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, parent+" is a directory of 2 bundles: several paths need -w, -d or --check")

	code, _, stderr = run(t, "generate", "-w", parent)
	require.Equal(t, 0, code, stderr)
	for _, name := range []string{"v0.2.0", "v0.2.1"} {
		csv := filepath.Join(parent, name, "manifests", "cool-operator.clusterserviceversion.yaml")
		data, err := os.ReadFile(csv)
		require.NoError(t, err)
		assert.Contains(t, string(data), `operatorframework.io/status-source: '{"apiVersion":"cool.operators.corp/v1beta1","kind":"CoolOperator","name":"cool-operator"}'`, name)
		assert.Contains(t, stderr, csv+": wrote the status-source annotation")
	}
	code, stdout, _ = run(t, "validate", parent)
	assert.NotEqual(t, 2, code)
	assert.Contains(t, stdout, "2 bundles checked: ")
	assert.NotContains(t, stdout, "status-source-missing", "both written")

	// One bundle that cannot be done does not stop the other; it is named.
	require.NoError(t, os.Rename(copyTree(t, "testdata/bundles/rules/status-source-missing/fail"), filepath.Join(parent, "v0.3.0")))
	require.NoError(t, os.Remove(filepath.Join(parent, "v0.2.0", "manifests", "cool-operator.clusterserviceversion.yaml")))
	code, _, stderr = run(t, "generate", "-w", parent)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, filepath.Join(parent, "v0.2.0")+": no ClusterServiceVersion")
	assert.Contains(t, stderr, filepath.Join(parent, "v0.3.0", "manifests", "cool-operator.clusterserviceversion.yaml")+": wrote the status-source annotation")
}

// TestItemPathsValidateAGoodAndAMissingPath: `validate BUNDLE /missing`
// reports every bundle that could be checked, then names the missing path
// as an error, and exits 2, in every output format.
func TestItemPathsValidateAGoodAndAMissingPath(t *testing.T) {
	const checked = "testdata/bundles/rules/status-rbac-missing/fail"
	missing := filepath.Join(t.TempDir(), "gone")
	named := "loading bundle " + missing + ": no such file or directory"

	code, stdout, stderr := run(t, "validate", checked, missing)
	assert.Equal(t, 2, code)
	assert.Contains(t, stdout, "error status-rbac-missing", "the bundle that could be checked")
	assert.Regexp(t, `(?m)^1 bundle checked: .*; 1 path could not be read:\n  `+regexp.QuoteMeta(missing)+`$`, stdout)
	assert.Contains(t, stderr, "statuscheck: "+named)

	code, stdout, stderr = run(t, "validate", "-o", "json", checked, missing)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, named)
	var rep struct {
		Bundles []struct {
			Path     string `json:"path"`
			Findings []struct {
				Rule string `json:"rule"`
			} `json:"findings"`
		} `json:"bundles"`
		Errors []struct {
			Path  string `json:"path"`
			Error string `json:"error"`
		} `json:"errors"`
		Summary struct {
			Bundles int `json:"bundles"`
		} `json:"summary"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	require.Len(t, rep.Bundles, 1)
	assert.Equal(t, checked, rep.Bundles[0].Path)
	var rules []string
	for _, f := range rep.Bundles[0].Findings {
		rules = append(rules, f.Rule)
	}
	assert.Contains(t, rules, "status-rbac-missing")
	require.Len(t, rep.Errors, 1, "an errors list naming the path")
	assert.Equal(t, missing, rep.Errors[0].Path)
	assert.Equal(t, named, rep.Errors[0].Error)
	assert.Equal(t, 1, rep.Summary.Bundles)

	code, stdout, _ = run(t, "validate", "-o", "sarif", checked, missing)
	assert.Equal(t, 2, code)
	assert.Contains(t, stdout, `"ruleId": "status-rbac-missing"`)
	assert.Contains(t, stdout, `"executionSuccessful": false`)
	assert.Contains(t, stdout, named)

	code, stdout, _ = run(t, "validate", "-o", "junit", checked, missing)
	assert.Equal(t, 2, code)
	var suites struct {
		Errors int `xml:"errors,attr"`
		Suites []struct {
			Name string `xml:"name,attr"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal([]byte(stdout), &suites))
	require.Len(t, suites.Suites, 2)
	assert.True(t, strings.HasPrefix(suites.Suites[0].Name, checked))
	assert.Equal(t, missing, suites.Suites[1].Name)
	assert.Equal(t, 1, suites.Errors)

	code, stdout, _ = run(t, "validate", "-o", "scorecard", checked, missing)
	assert.Equal(t, 2, code)
	var st struct {
		Results []struct {
			Name   string   `json:"name"`
			State  string   `json:"state"`
			Errors []string `json:"errors"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &st), stdout)
	require.Len(t, st.Results, 2)
	assert.Equal(t, "fail", st.Results[0].State)
	assert.Equal(t, "error", st.Results[1].State)
	assert.Equal(t, []string{named}, st.Results[1].Errors)

	// manifest-result is one bundle's verdict: nothing for a missing one.
	code, stdout, stderr = run(t, "validate", "-o", "manifest-result", missing)
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, named)
}

// TestItemPathsMetadataOnlyRoot: a bundle root with only metadata/ says
// which directory is missing, to validate and to generate.
func TestItemPathsMetadataOnlyRoot(t *testing.T) {
	dir := copyTree(t, "testdata/bundles/good")
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "manifests")))
	want := "the bundle root " + dir + " has metadata/ but no manifests/ directory: " + filepath.Join(dir, "manifests") + " does not exist"
	code, stdout, _ := run(t, "validate", dir)
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, "error bundle-csv-missing: "+want)
	assert.NotContains(t, stdout, "bundle-layout", "metadata/ is not a directory among the manifests")
	code, _, stderr := run(t, "generate", dir)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, want)
}
