package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/result"
	"github.com/statuscheck/statuscheck/pkg/validate"
)

// A second trial as a new user (wrong answers, advice that did not work
// when pasted), each test named after what it found.

func corpusCopy(t *testing.T, name string) string {
	t.Helper()
	return copyBundle(t, filepath.Join(testutil.CorpusDir(t), name))
}

func csvOf(t *testing.T, dir string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "manifests", "*clusterserviceversion*"))
	require.NoError(t, err)
	require.Len(t, m, 1)
	return m[0]
}

func editFile(t *testing.T, file, old, new string) {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Contains(t, string(data), old)
	require.NoError(t, os.WriteFile(file, []byte(strings.Replace(string(data), old, new, 1)), 0o644))
}

// addHCORequestField is the CRD change RequestAck needs on HCO: a string
// spec.upgradeRequest in every version's schema.
func addHCORequestField(t *testing.T, crd string) {
	t.Helper()
	data, err := os.ReadFile(crd)
	require.NoError(t, err)
	parts := strings.Split(string(data), "\n          spec:\n")
	require.Greater(t, len(parts), 1)
	for i := 1; i < len(parts); i++ {
		before, after, ok := strings.Cut(parts[i], "\n            properties:\n")
		require.True(t, ok)
		parts[i] = before + "\n            properties:\n              upgradeRequest:\n                type: string\n" + after
	}
	require.NoError(t, os.WriteFile(crd, []byte(strings.Join(parts, "\n          spec:\n")), 0o644))
}

func findingsOf(b result.Bundle, rule string) []result.Finding {
	var out []result.Finding
	for _, f := range b.Findings {
		if f.Rule == rule {
			out = append(out, f)
		}
	}
	return out
}

func TestWithoutOLMSaysHowKubectlWaitComparesGenerations(t *testing.T) {
	_, b := validateJSON(t, filepath.Join(repoRoot, "testdata/bundles/protected"))
	none := protection(b, result.ManagerNone)
	assert.NotContains(t, none.Remedy, "does not compare generations")
	assert.Contains(t, none.Remedy, "kubectl wait --for=condition=Upgradeable=True cooloperator.cool.operators.corp/cool-operator")
	assert.Contains(t, none.Remedy, "below metadata.generation")
	assert.Contains(t, none.Remedy, "skips the comparison when neither is set")
}

func TestBridgeImageThatCannotBePulledIsNotHeld(t *testing.T) {
	for _, image := range []string{"IMAGE", "not a valid image ref!!"} {
		t.Run(image, func(t *testing.T) {
			dir := copyTree(t, "testdata/bundles/protected")
			editFile(t, csvOf(t, dir), "image: quay.io/statuscheck/statuscheck:v0.1.0", "image: "+shellQuote(image))
			code, b := validateJSON(t, dir)
			assert.Equal(t, result.ExitFindings, code)
			assert.False(t, protection(b, result.ManagerOLMv0).Held)
			require.Len(t, findingsOf(b, "bridge-container-missing"), 1, "%+v", b.Findings)
			assert.Contains(t, findingsOf(b, "bridge-container-missing")[0].Message, "cannot pull its image")
		})
		t.Run("generate --bridge "+image, func(t *testing.T) {
			dir := copyTree(t, "testdata/bundles/good")
			code, stdout, stderr := run(t, "generate", "-w", "--bridge", image, dir)
			assert.Equal(t, 2, code, stdout+stderr)
			assert.Contains(t, stderr, "nothing written")
			_, b := validateJSON(t, dir)
			assert.Empty(t, findingsOf(b, "bridge-container-missing"), "nothing was written")
		})
	}
}

func TestOperatorThatWritesItsOperatorConditionDecides(t *testing.T) {
	dir := corpusCopy(t, "kubevirt-hyperconverged-1.20.0")
	// The CRD change RequestAck needs, then the bridge.
	crd := filepath.Join(dir, "manifests", "hco00.crd.yaml")
	addHCORequestField(t, crd)
	code, _, stderr := run(t, "generate", "-w", "--bridge", "quay.io/x/statuscheck:v1", "--bridge-deployment", "hco-operator",
		"--request-spec-path", ".spec.upgradeRequest", dir)
	require.NotEqual(t, 2, code, stderr)
	_, b := validateJSON(t, dir)
	v0 := protection(b, result.ManagerOLMv0)
	assert.False(t, v0.Held, "%+v", v0)
	assert.Contains(t, v0.Reason, "the operator writes its OperatorCondition itself")
	assert.Contains(t, v0.Reason, "the operator decides")
}

func TestRequestFieldThatMeansSomethingIsNotHeld(t *testing.T) {
	dir := corpusCopy(t, "korrel8r-0.1.8")
	code, _, stderr := run(t, "generate", "-w", "--bridge", "quay.io/x/statuscheck:v1", "--request-spec-path", ".spec.serviceAccountName", dir)
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "handshake-request-not-reserved")
	code, _, stderr = run(t, "generate", "-w", "--force", "--bridge", "quay.io/x/statuscheck:v1", "--request-spec-path", ".spec.serviceAccountName", dir)
	require.Equal(t, 0, code, stderr)
	code, b := validateJSON(t, dir)
	assert.Equal(t, result.ExitFindings, code)
	assert.False(t, protection(b, result.ManagerOLMv0).Held)
	assert.Len(t, findingsOf(b, "handshake-request-not-reserved"), 1)
	for _, r := range validate.Rules() {
		assert.NotContains(t, r.Remediation, "point the path at an existing field", r.ID)
	}
}

func TestSuggestedFixWorksWhenPasted(t *testing.T) {
	dir := corpusCopy(t, "kubevirt-hyperconverged-1.20.0")
	code, _, stderr := run(t, "generate", "-w", dir)
	require.Equal(t, 0, code, stderr)
	_, b := validateJSON(t, dir)
	v0 := protection(b, result.ManagerOLMv0)
	// HCO writes its OperatorCondition: the verdict says so, and the
	// command it gives still names the deployment and the request field.
	fix := v0.Remedy
	_, cmd, ok := strings.Cut(fix, "`statuscheck generate -w --bridge IMAGE")
	require.True(t, ok, fix)
	cmd, _, _ = strings.Cut(cmd, "`")
	assert.Contains(t, cmd, "--bridge-deployment hco-operator")
	assert.Contains(t, cmd, "--request-spec-path .spec.upgradeRequest")
	assert.Contains(t, fix, "RequestAck needs a CRD change", "said in the text, not only in rules -o json")
	assert.NotContains(t, fix, ".spec.FIELD")

	t.Run("pasted literally, IMAGE is refused", func(t *testing.T) {
		code, _, stderr := runLine(t, "statuscheck generate -w --bridge IMAGE"+cmd)
		assert.Equal(t, 2, code)
		assert.Contains(t, stderr, "placeholder")
	})
	t.Run(".spec.FIELD is refused", func(t *testing.T) {
		code, _, stderr := run(t, "generate", "-w", "--bridge", "quay.io/x/statuscheck:v1", "--bridge-deployment", "hco-operator", "--request-spec-path", ".spec.FIELD", dir)
		assert.Equal(t, 2, code)
		assert.Contains(t, stderr, "placeholder")
	})
	t.Run("several deployments: the flag to add", func(t *testing.T) {
		code, _, stderr := run(t, "generate", "-w", "--bridge", "quay.io/x/statuscheck:v1", dir)
		assert.Equal(t, 2, code)
		assert.Contains(t, stderr, "--bridge-deployment hco-operator")
	})
	t.Run("with IMAGE set, it works once the CRD has the field", func(t *testing.T) {
		addHCORequestField(t, filepath.Join(dir, "manifests", "hco00.crd.yaml"))
		code, _, stderr := runLine(t, "statuscheck generate -w --bridge quay.io/x/statuscheck:v1"+cmd)
		assert.Equal(t, 0, code, stderr)
	})
}

func TestGenerateSaysWhatAVerdictErrorMeans(t *testing.T) {
	dir := corpusCopy(t, "kubevirt-hyperconverged-1.20.0")
	code, _, stderr := run(t, "generate", "-w", dir)
	assert.Equal(t, 0, code, "the value is valid and written: %s", stderr)
	assert.NotContains(t, stderr, "note: error")
	assert.Contains(t, stderr, "the upgrade is not held yet; validate will report error upgrade-not-held-olm-v0")
	_, help, _ := run(t, "generate", "--help")
	assert.Contains(t, help, "exits 0")
}

func TestNamespaceNoteDoesNotSuggestPinning(t *testing.T) {
	dir := corpusCopy(t, "kubevirt-hyperconverged-1.20.0")
	_, _, stderr := run(t, "generate", "-d", dir)
	assert.Contains(t, stderr, `namespace "kubevirt-hyperconverged"`)
	assert.NotContains(t, stderr, "to pin it")
}

func TestInitializationResourceGenerateRefusesIsNotACandidate(t *testing.T) {
	for _, name := range []string{"community-kubevirt-hyperconverged-1.3.0", "koku-metrics-operator-4.4.1", "opendatahub-operator-2.9.0"} {
		t.Run(name, func(t *testing.T) {
			dir := corpusCopy(t, name)
			_, b := validateJSON(t, dir)
			missing := findingsOf(b, "status-source-missing")
			require.Len(t, missing, 1)
			assert.NotContains(t, missing[0].Message, "is a candidate")
			assert.Contains(t, missing[0].Message, "generate refuses it")
		})
	}
	t.Run("after generate -w --force the verdict does not send the user to the bridge", func(t *testing.T) {
		dir := corpusCopy(t, "community-kubevirt-hyperconverged-1.3.0")
		code, _, stderr := run(t, "generate", "-w", "--force", dir)
		require.Equal(t, 0, code, stderr)
		_, b := validateJSON(t, dir)
		v0 := protection(b, result.ManagerOLMv0)
		assert.NotContains(t, v0.Remedy, "--bridge")
		assert.Contains(t, v0.Reason, "conditions-observedgeneration-missing")
		f := findingsOf(b, "upgrade-not-held-olm-v0")
		require.Len(t, f, 1)
		assert.NotContains(t, f[0].Message, "--bridge IMAGE")
	})
}

func TestRequestAckHintAfterTheBridgeNamesTheBridge(t *testing.T) {
	dir := copyTree(t, "testdata/bundles/good")
	code, _, stderr := run(t, "generate", "-w", "--bridge", "quay.io/x/statuscheck:v1", dir)
	require.Equal(t, 0, code, stderr)
	_, b := validateJSON(t, dir)
	v0 := protection(b, result.ManagerOLMv0)
	if !v0.Held {
		assert.Contains(t, v0.Remedy, "--bridge quay.io/x/statuscheck:v1", "the hint names the bridge's image: %s", v0.Remedy)
	}
	// What a user types from memory: the request without --bridge.
	code, _, stderr = run(t, "generate", "-w", "--request-spec-path", ".spec.upgradeRequest", dir)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "--bridge quay.io/x/statuscheck:v1")
}

func TestVerdictNoIsNotExit0(t *testing.T) {
	dir := corpusCopy(t, "forklift-operator-2.6.3")
	code, _, stderr := run(t, "generate", "-w", "--force", dir)
	if code == 2 {
		t.Skipf("generate derives no status source here: %s", stderr)
	}
	code, b := validateJSON(t, dir)
	if !protection(b, result.ManagerOLMv0).Held {
		assert.Equal(t, result.ExitFindings, code, "%+v", b.Findings)
	}
	// The result model decides, whatever the findings' severities.
	rep := result.Report{Bundles: []result.Bundle{{Findings: []result.Finding{{Severity: result.Warning}}, Protection: []result.Protection{{Manager: result.ManagerOLMv0}}}}}
	assert.Equal(t, result.ExitFindings, rep.ExitCode(result.Error))
}

func TestUnownedKindIsRefusedTheSameWay(t *testing.T) {
	dir := copyTree(t, "testdata/bundles/good")
	code1, _, stderr1 := run(t, "generate", "-d", "--kind", "Kafka", dir)
	code2, _, stderr2 := run(t, "generate", "-d", "--kind", "Foo", "--api-version", "foo.io/v1", "--name", "x", dir)
	assert.Equal(t, 2, code1, stderr1)
	assert.Equal(t, 2, code2, stderr2)
	assert.Contains(t, stderr1, "is not an owned kind")
	assert.Contains(t, stderr2, "is not an owned kind")
	t.Run("an annotation naming an unowned kind: the verdict does not recommend the bridge", func(t *testing.T) {
		editFile(t, csvOf(t, dir), `"kind":"CoolOperator"`, `"kind":"Foo"`)
		_, b := validateJSON(t, dir)
		assert.NotContains(t, protection(b, result.ManagerOLMv0).Remedy, "--bridge")
	})
}

func TestValidateTheMetadataDirectorySaysPointAtTheRoot(t *testing.T) {
	code, stdout, stderr := run(t, "validate", filepath.Join(repoRoot, "testdata/bundles/good/metadata"))
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "point at the bundle root")
	assert.NotContains(t, stderr, "not a Kubernetes object")
}

func TestStatusRBACWithoutStatusSubresource(t *testing.T) {
	dir := corpusCopy(t, "etcd-0.9.4-clusterwide")
	code, _, stderr := run(t, "generate", "-w", "--force", "--kind", "EtcdCluster", "--name", "example", dir)
	require.NotEqual(t, 2, code, stderr)
	_, b := validateJSON(t, dir)
	assert.Empty(t, findingsOf(b, "status-rbac-missing"), "its service account has * on etcdclusters, and there is no /status")
	assert.NotEmpty(t, findingsOf(b, "status-subresource-disabled"))
}

func TestExampleTracesNameTheFlagTheyNeed(t *testing.T) {
	t.Run("a trace that needs its CRD", func(t *testing.T) {
		tr := "testdata/traces/fidelity/5-pruned-and-defaulted-writes.yaml"
		code, stdout, stderr := run(t, "simulate", tr)
		assert.Equal(t, 2, code)
		assert.Empty(t, stdout, "no replay that reports violations the trace does not have")
		assert.Contains(t, stderr, tr+" needs --crd testdata/traces/crds/cooloperators-defaults.yaml")
	})
	t.Run("an audit log", func(t *testing.T) {
		code, stdout, stderr := run(t, "simulate", "testdata/traces/audit.jsonl")
		assert.Equal(t, 2, code)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, "cooloperators.cool.operators.corp cool-system/cool-operator")
		assert.Contains(t, stderr, "--bundle with the bundle whose CSV owns cooloperators.cool.operators.corp")
	})
}
