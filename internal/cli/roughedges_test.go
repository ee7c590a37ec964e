package cli

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"github.com/statuscheck/statuscheck/internal/testutil"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/shlex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The rough edges of issue 18, each a test named after its item.

// yamlErrorBundle is the good bundle with a YAML error at the end of its
// CSV (line 77).
func yamlErrorBundle(t *testing.T) (dir, csv string) {
	t.Helper()
	dir = copyTree(t, "testdata/bundles/good")
	csv = filepath.Join(dir, "manifests", "cool-operator.clusterserviceversion.yaml")
	f, err := os.OpenFile(csv, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("apiVersion: v1\nkind: [\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return dir, csv
}

func TestBundleWithAYAMLErrorSaysWhatValidateSays(t *testing.T) {
	dir, csv := yamlErrorBundle(t)
	_, vout, _ := run(t, "validate", dir)
	require.Contains(t, vout, csv+":77:1: error manifest-parse: invalid YAML")
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	for _, args := range [][]string{
		{"simulate", "--bundle", dir, "testdata/traces/seed.yaml"},
		{"simulate", "--explore", "--bundle", dir},
	} {
		t.Run(args[0]+" "+args[1], func(t *testing.T) {
			code, stdout, stderr := run(t, args...)
			assert.Equal(t, 2, code)
			assert.Empty(t, stdout)
			assert.Contains(t, stderr, csv+":77:1: error manifest-parse: invalid YAML", "what validate says")
			assert.NotContains(t, stderr, "no ClusterServiceVersion")
		})
	}
}

func TestSourceMismatchNamesWhatDiffers(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "testdata/traces/fidelity/5-pruned-and-defaulted-writes.yaml"))
	require.NoError(t, err)
	tr := filepath.Join(t.TempDir(), "t.yaml")
	s := strings.Replace(string(data), "name: cool-operator}\nstatusSubresource", "name: cool-operator, namespace: cool-system}\nstatusSubresource", 1)
	require.NoError(t, os.WriteFile(tr, []byte(s), 0o644))
	code, stdout, stderr := run(t, "simulate", "--crd", "testdata/traces/crds/cooloperators-defaults.yaml",
		"--source", "cool.operators.corp/v1beta1/CoolOperator/other-ns/cool-operator", tr)
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "the trace's statusSource is CoolOperator cool.operators.corp cool-system/cool-operator, but --source cool.operators.corp/v1beta1/CoolOperator/other-ns/cool-operator names CoolOperator cool.operators.corp other-ns/cool-operator")
	assert.NotContains(t, stderr, "--crd cooloperators-defaults.yaml names", "--source was wrong, not --crd")
}

// runLine runs a command line statuscheck printed, as a shell splits it.
func runLine(t *testing.T, line string) (int, string, string) {
	t.Helper()
	words, err := shlex.Split(line)
	require.NoError(t, err)
	require.Equal(t, "statuscheck", words[0])
	return run(t, words[1:]...)
}

func TestGenerateCheckSuggestsTheFlagsItWasGiven(t *testing.T) {
	dir := copyTree(t, "testdata/bundles/handshake/none")
	args := []string{"generate", "--check", "--conditions", "Upgradeable,Ready", "--when-absent", "Block", dir}
	code, stdout, _ := run(t, args...)
	require.Equal(t, 1, code)
	_, suggestion, ok := strings.Cut(strings.TrimSpace(stdout), "run: ")
	require.True(t, ok, stdout)
	assert.Contains(t, suggestion, "--when-absent Block")
	code, _, stderr := runLine(t, suggestion)
	require.Equal(t, 0, code, stderr)
	code, stdout, stderr = run(t, args...)
	assert.Equal(t, 0, code, "the suggestion brings the file up to date: %s%s", stdout, stderr)
}

func TestGenerateCheckIsSilentOnPass(t *testing.T) {
	// A real bundle whose generate notes a namespace and whose CRD has a
	// warning: up to date, --check says nothing.
	// Through the corpus helper: a clone without ../shared skips.
	rel, err := filepath.Rel(repoRoot, filepath.Join(testutil.CorpusDir(t), "kubevirt-hyperconverged-1.20.0"))
	require.NoError(t, err)
	dir := copyTree(t, rel)
	require.NoError(t, filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil {
			err = os.Chmod(p, info.Mode()|0o200)
		}
		return err
	}))
	code, _, stderr := run(t, "generate", "-w", dir)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stderr, "note:", "generate has something to say about this bundle")
	code, stdout, stderr := run(t, "generate", "--check", dir)
	assert.Equal(t, 0, code)
	assert.Empty(t, stdout)
	assert.Empty(t, stderr)
}

func TestValidateAFolderOfBundles(t *testing.T) {
	parent := t.TempDir()
	require.NoError(t, os.Rename(copyTree(t, "testdata/bundles/protected"), filepath.Join(parent, "a")))
	require.NoError(t, os.Rename(protectedWithWarning(t), filepath.Join(parent, "b")))
	t.Run("each bundle in it", func(t *testing.T) {
		code, stdout, stderr := run(t, "validate", parent)
		// b's warning leaves OLM v0's verdict at no, and a verdict of no
		// is exit 1: a CI job that checks the exit code must not pass it.
		assert.Equal(t, 1, code, "%s%s", stdout, stderr)
		assert.Contains(t, stdout, "but the gate may not hold as declared")
		assert.NotContains(t, stdout, "bundle-layout")
		assert.Contains(t, stdout, "2 bundles checked")
	})
	t.Run("a path that does not exist", func(t *testing.T) {
		code, stdout, stderr := run(t, "validate", filepath.Join(parent, "nope"))
		assert.Equal(t, 2, code)
		assert.Empty(t, stdout, "not \"1 bundle checked\"")
		assert.Contains(t, stderr, "no such file or directory")
	})
	t.Run("an empty directory", func(t *testing.T) {
		empty := t.TempDir()
		code, stdout, stderr := run(t, "validate", empty)
		assert.Equal(t, 2, code)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, "an empty directory")
	})
}

func TestCRDWithoutSourceTakesTheTracesStatusSource(t *testing.T) {
	// The fidelity traces say "Replay with --crd ...": that works.
	for _, name := range []string{"5-pruned-and-defaulted-writes.yaml", "6-refused-writes-change-nothing.yaml"} {
		t.Run(name, func(t *testing.T) {
			tr := filepath.Join("testdata/traces/fidelity", name)
			data, err := os.ReadFile(filepath.Join(repoRoot, tr))
			require.NoError(t, err)
			// The comment's hint, joined across its lines.
			text := strings.ReplaceAll(string(data), "\n# ", " ")
			_, hint, ok := strings.Cut(text, "Replay with ")
			require.True(t, ok)
			hint = strings.TrimSuffix(strings.Fields(strings.SplitN(hint, "\n", 2)[0])[0]+" "+strings.Fields(hint)[1], ".")
			code, stdout, stderr := runLine(t, "statuscheck simulate "+hint+" "+tr)
			assert.NotEqual(t, 2, code, "%s%s", stdout, stderr)
			assert.Contains(t, stdout, "steps")
		})
	}
	t.Run("a trace that declares none", func(t *testing.T) {
		code, stdout, stderr := run(t, "simulate", "--crd", "testdata/traces/crds/cooloperators-defaults.yaml", "testdata/traces/snapshots.yaml")
		assert.Equal(t, 2, code)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, "--crd needs --source GROUP/VERSION/KIND/NAME: testdata/traces/snapshots.yaml declares no statusSource")
	})
}

func TestNothingOnStdoutBeforeExit2(t *testing.T) {
	// A trace whose fourth step makes no sense: the first three rows are
	// not printed before the exit 2.
	tr := filepath.Join(t.TempDir(), "late.yaml")
	require.NoError(t, os.WriteFile(tr, []byte(`apiVersion: statuscheck.operatorframework.io/v1alpha1
kind: StatusTrace
statusSource: {apiVersion: cool.operators.corp/v1beta1, kind: CoolOperator, name: cool-operator}
initial:
  apiVersion: cool.operators.corp/v1beta1
  kind: CoolOperator
  metadata: {name: cool-operator, generation: 1}
  status: {conditions: [{type: Upgradeable, status: "True", reason: Idle, message: "", lastTransitionTime: "2024-01-01T00:00:00Z", observedGeneration: 1}]}
steps:
- {actor: olm, check: {}}
- {actor: user, update: {spec: {storageLayer: MariaDB}}}
- {actor: olm, check: {}}
- {actor: olm, request: {}}
`), 0o644))
	code, stdout, stderr := run(t, "simulate", tr)
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "step 4: OLM request, but the status source declares no RequestAck handshake")
	t.Run("a CSV given as a trace points at --bundle", func(t *testing.T) {
		csv := "testdata/bundles/good/manifests/cool-operator.clusterserviceversion.yaml"
		for _, args := range [][]string{{"simulate", csv}, {"simulate", "--bundle", "testdata/bundles/good", csv}} {
			code, stdout, stderr := run(t, args...)
			assert.Equal(t, 2, code)
			assert.Empty(t, stdout)
			assert.Contains(t, stderr, "a ClusterServiceVersion is not a trace: give its bundle with --bundle DIR")
		}
	})
}

func TestVersionCompletionAndTheSDKValidator(t *testing.T) {
	code, stdout, _ := run(t, "version")
	assert.Equal(t, 0, code)
	assert.Regexp(t, `^statuscheck \S+ \(go1\.\d+\S* \w+/\w+\)\n$`, stdout)
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		code, stdout, _ := run(t, "completion", shell)
		assert.Equal(t, 0, code, shell)
		assert.Contains(t, stdout, "statuscheck", shell)
	}
	var out, errb bytes.Buffer
	assert.Equal(t, 0, SDKValidator([]string{"--help"}, "", &out, &errb))
	assert.Contains(t, out.String(), "operator-sdk external validator")
	assert.Contains(t, out.String(), "STATUSCHECK_ARGS")
	// STATUSCHECK_ARGS is split as a shell splits words: a quoted value
	// with a space stays one word (here an --fail-on value validate then
	// refuses by name), an unclosed quote is an exit 2 that says so.
	out.Reset()
	errb.Reset()
	assert.Equal(t, 2, SDKValidator([]string{filepath.Join(repoRoot, "testdata/bundles/good")}, `--fail-on 'warn ing'`, &out, &errb))
	assert.Contains(t, errb.String(), `"warn ing" is not one of`)
	errb.Reset()
	assert.Equal(t, 2, SDKValidator([]string{filepath.Join(repoRoot, "testdata/bundles/good")}, `--fail-on 'warning`, &out, &errb))
	assert.Contains(t, errb.String(), "STATUSCHECK_ARGS")
	// A file-based catalog is not a bundle root: said so, exit 2,
	// nothing on stdout.
	out.Reset()
	errb.Reset()
	cat := filepath.Join(repoRoot, "testdata/catalog/cool-operator/catalog.json")
	assert.Equal(t, 2, SDKValidator([]string{cat}, "", &out, &errb))
	assert.Empty(t, out.String())
	assert.Equal(t, "statuscheck-sdk-validator: "+cat+" is a file-based catalog, not a bundle root: operator-sdk bundle validate gives a bundle; validate a catalog with statuscheck validate\n", errb.String())
	// The binary's --help describes it.
	cmd := exec.Command(sdkValidator(t), "--help")
	got, err := cmd.Output()
	require.NoError(t, err)
	assert.Contains(t, string(got), "operator-sdk external validator")
}

// TestTimelineColumnsFitAndShowWhatTheGateReads: a generation near the
// last int64 and OLM's "updateStatus OperatorCondition" stay in their
// columns; in the OperatorCondition flow UPGRADEABLE is OLM's copy on
// the OperatorCondition (what isOperatorUpgradeable reads), with its
// generation; the violations are listed by step, the end of the run last.
func TestTimelineColumnsFitAndShowWhatTheGateReads(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "testdata/traces/handshake-operatorcondition.yaml"))
	require.NoError(t, err)
	s := strings.ReplaceAll(string(data), "generation: 3}", "generation: 9223372036854775000}")
	s = strings.ReplaceAll(s, "observedGeneration: 3}", "observedGeneration: 9223372036854775000}")
	s = strings.ReplaceAll(s, "observedGeneration: 4}", "observedGeneration: 9223372036854775001}")
	tr := filepath.Join(t.TempDir(), "big.yaml")
	require.NoError(t, os.WriteFile(tr, []byte(s), 0o644))
	code, stdout, stderr := run(t, "simulate", tr)
	require.Equal(t, 0, code, "%s%s", stdout, stderr)
	lines := strings.Split(stdout, "\n")
	h := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "STEP ") {
			h = i
		}
	}
	require.GreaterOrEqual(t, h, 0, stdout)
	header := lines[h]
	assert.Contains(t, header, "UPGRADEABLE (OC)")
	var starts []int
	for i := range header {
		if header[i] != ' ' && (i == 0 || header[i-1] == ' ') && !strings.HasPrefix(header[i:], "(OC)") {
			starts = append(starts, i)
		}
	}
	rows := 0
	for _, row := range lines[h+1:] {
		if row == "" {
			break
		}
		rows++
		for _, c := range starts[:len(starts)-2] { // VIOLATIONS and WHY may be empty
			require.Greater(t, len(row), c, "row %q ends before column %d", row, c)
			assert.True(t, c == 0 || (row[c] != ' ' && row[c-1] == ' '), "row %q: no cell starts at column %d of %q", row, c, header)
		}
	}
	assert.Equal(t, 12, rows)
	assert.Contains(t, stdout, "olm      updateStatus OperatorCondition 9223372036854775001 OC gen=2 False og=2 -\n")
	assert.Contains(t, stdout, "olm      check (expect Allow)           9223372036854775001 OC gen=3 True og=3  Allow             OperatorCondition: Upgradeable=True (observedGeneration 3, generation 3)\n")

	// Violations by step, the end of the run last.
	code, stdout, _ = run(t, "simulate", "--policy", "all", "testdata/traces/future-observed-generation.yaml")
	require.Equal(t, 1, code)
	var order []string
	for _, l := range strings.Split(stdout, "\n") {
		switch {
		case strings.Contains(l, " at step ") && strings.HasPrefix(l, "end of trace"):
			order = append(order, "end")
		case strings.Contains(l, " at step "):
			order = append(order, l[strings.Index(l, " at step ")+9:][:1])
		}
	}
	assert.Equal(t, []string{"2", "3", "end", "end"}, order)
}

// editBundle copies the good bundle and applies old→new edits to a file
// of its manifests.
func editBundle(t *testing.T, file string, edits ...[2]string) string {
	t.Helper()
	return editedCopy(t, "testdata/bundles/good", file, edits...)
}

// editedCopy copies the bundle at rel and applies old→new edits, each
// once, to its manifest file.
func editedCopy(t *testing.T, rel, file string, edits ...[2]string) string {
	t.Helper()
	dir := copyTree(t, rel)
	p := filepath.Join(dir, "manifests", file)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	s := string(data)
	for _, e := range edits {
		require.Contains(t, s, e[0])
		s = strings.Replace(s, e[0], e[1], 1)
	}
	require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
	return dir
}

const (
	goodCSVFile = "cool-operator.clusterserviceversion.yaml"
	goodCRDFile = "cool.operators.corp_cooloperators.yaml"
	goodSource  = `'{"apiVersion":"cool.operators.corp/v1beta1","kind":"CoolOperator","name":"cool-operator"}'`
)

func TestInvalidAnnotationIsNotProbed(t *testing.T) {
	// A condition type metav1.Condition does not allow, on a CRD that
	// gives condition types metav1.Condition's pattern: one
	// status-source-invalid, no status-write-rejected from probing it.
	dir := editBundle(t, goodCRDFile, [2]string{"                      maxLength: 316\n", "                      maxLength: 316\n                      pattern: ^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$\n"})
	csv := filepath.Join(dir, "manifests", goodCSVFile)
	data, err := os.ReadFile(csv)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(csv, []byte(strings.Replace(string(data), goodSource,
		`'{"apiVersion":"cool.operators.corp/v1beta1","kind":"CoolOperator","name":"cool-operator","conditions":["Upgradeable","Ready!"]}'`, 1)), 0o644))
	code, stdout, _ := run(t, "validate", dir)
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, `error status-source-invalid: status-source annotation: conditions[1]: "Ready!" is not a condition type metav1.Condition allows`)
	assert.NotContains(t, stdout, "status-write-rejected")
	assert.Contains(t, stdout, "1 error,")
}

func TestCRDStorageVersionsAreOneFinding(t *testing.T) {
	tests := []struct {
		name  string
		edits [][2]string
	}{
		{name: "no storage version", edits: [][2]string{{"storage: true", "storage: false"}}},
		{name: "two storage versions", edits: [][2]string{{"  versions:\n  - name: v1beta1\n", "  versions:\n  - name: v1alpha1\n    served: false\n    storage: true\n    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}\n  - name: v1beta1\n"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The protected bundle: its CRD's error is the one finding.
			dir := editedCopy(t, "testdata/bundles/protected", goodCRDFile, tt.edits...)
			code, stdout, _ := run(t, "validate", dir)
			assert.Equal(t, 1, code, stdout)
			crdFile := filepath.Join(dir, "manifests", goodCRDFile)
			assert.Contains(t, stdout, crdFile+":14:3: error status-source-crd-invalid: the apiserver refuses CRD cooloperators.cool.operators.corp: spec.versions: must have exactly one version marked as storage version\n", "at the versions, the apiserver's words")
			assert.NotContains(t, stdout, "status.storedVersions")
			assert.NotContains(t, stdout, `"Name":`, "no struct dump")
			assert.Contains(t, stdout, "1 bundle checked: 1 error,")
		})
	}
}

func TestAnnotationDecodeErrorsAtTheAnnotation(t *testing.T) {
	tests := []struct {
		name, value, words string
	}{
		{name: "a YAML list", value: "[1, 2]", words: "an array"},
		{name: "a YAML mapping", value: "{a: 1}", words: "an object"},
		{name: "an unquoted number", value: "5", words: "a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := editBundle(t, goodCSVFile, [2]string{goodSource, tt.value})
			code, stdout, _ := run(t, "validate", dir)
			assert.Equal(t, 1, code)
			csv := filepath.Join(dir, "manifests", goodCSVFile)
			assert.Contains(t, stdout, csv+":11:41: error manifest-parse: decoding ClusterServiceVersion: field metadata.annotations: the value of operatorframework.io/status-source is "+tt.words+"; it must be a string")
		})
	}
}

func TestJUnitSuitesByPathAndSARIFFileLocations(t *testing.T) {
	// Two paths holding the same CSV: two suites, named by path, with
	// the file they are about.
	a, b := copyTree(t, "testdata/bundles/protected"), copyTree(t, "testdata/bundles/protected")
	code, stdout, _ := run(t, "validate", "-o", "junit", a, b)
	assert.Equal(t, 0, code)
	var doc struct {
		Suites []struct {
			Name  string `xml:"name,attr"`
			File  string `xml:"file,attr"`
			Cases []struct {
				File string `xml:"file,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal([]byte(stdout), &doc))
	require.Len(t, doc.Suites, 2)
	assert.Equal(t, a+" (cool-operator.v0.2.0)", doc.Suites[0].Name)
	assert.Equal(t, b+" (cool-operator.v0.2.0)", doc.Suites[1].Name)
	assert.Equal(t, filepath.Join(a, "manifests", goodCSVFile), doc.Suites[0].File)
	for _, c := range doc.Suites[1].Cases {
		assert.Equal(t, filepath.Join(b, "manifests", goodCSVFile), c.File)
	}
	// A finding about a directory (no metadata/) is placed in the CSV.
	noMeta := copyTree(t, "testdata/bundles/good")
	require.NoError(t, os.RemoveAll(filepath.Join(noMeta, "metadata")))
	code, stdout, _ = run(t, "validate", "-o", "sarif", "--fail-on", "warning", noMeta)
	assert.Equal(t, 1, code)
	var log struct {
		Runs []struct {
			Results []struct {
				RuleID    string `json:"ruleId"`
				Message   struct{ Text string }
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string } `json:"artifactLocation"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &log))
	found := false
	for _, r := range log.Runs[0].Results {
		if r.RuleID != "bundle-metadata-missing" {
			continue
		}
		found = true
		uri := r.Locations[0].PhysicalLocation.ArtifactLocation.URI
		assert.True(t, strings.HasSuffix(uri, "manifests/"+goodCSVFile), "a file, not the directory: %s", uri)
		assert.Contains(t, r.Message.Text, noMeta+": ")
	}
	assert.True(t, found, stdout)
}
