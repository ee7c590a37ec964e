package cli

import (
	"encoding/json"
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

// validateJSON runs validate -o json and decodes its report.
func validateJSON(t *testing.T, dir string) (int, result.Bundle) {
	t.Helper()
	code, js, stderr := run(t, "validate", "-o", "json", dir)
	var rep struct {
		Bundles []result.Bundle `json:"bundles"`
	}
	require.NoError(t, json.Unmarshal([]byte(js), &rep), stderr)
	require.Len(t, rep.Bundles, 1)
	return code, rep.Bundles[0]
}

func protection(b result.Bundle, manager string) result.Protection {
	for _, p := range b.Protection {
		if p.Manager == manager {
			return p
		}
	}
	return result.Protection{}
}

// TestItem1GenerateThenValidateSaysOLMv0DoesNotHoldIt is issue 27, item 1,
// on the bundle it was found on: `generate -w` then `validate` on
// kubevirt-hyperconverged-1.20.0 was 0 findings and exit 0, although with
// handshake None and no bridge OLM v0 reads only the (empty)
// OperatorCondition. Now generate says so in a note (and still writes), and
// validate reports upgrade-not-held-olm-v0 with both fixes as commands,
// exit 1; the root --help no longer says OLM reads the CR.
func TestItem1GenerateThenValidateSaysOLMv0DoesNotHoldIt(t *testing.T) {
	dir := copyBundle(t, filepath.Join(testutil.CorpusDir(t), "kubevirt-hyperconverged-1.20.0"))
	code, _, stderr := run(t, "generate", "-w", dir)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "upgrade-not-held-olm-v0", "generate says it in a note")

	code, b := validateJSON(t, dir)
	assert.Equal(t, result.ExitFindings, code)
	var found *result.Finding
	for i, f := range b.Findings {
		if f.Rule == "upgrade-not-held-olm-v0" {
			found = &b.Findings[i]
		}
	}
	require.NotNil(t, found, "%+v", b.Findings)
	assert.Equal(t, result.Error, found.Severity)
	assert.Contains(t, found.Message, "statuscheck generate -w --bridge IMAGE --bridge-deployment hco-operator --request-spec-path .spec.upgradeRequest "+dir)
	assert.Contains(t, found.Message, "--handshake OperatorCondition")
	assert.NotZero(t, found.Line)
	assert.False(t, protection(b, result.ManagerOLMv0).Held)
	assert.False(t, protection(b, result.ManagerOLMv1).Held)
	assert.False(t, protection(b, result.ManagerNone).Held)

	_, help, _ := run(t, "--help")
	assert.NotContains(t, help, "OLM reads the\nUpgradeable condition from the operator's own custom resource")
	assert.Contains(t, help, "does not read the annotation")
}

// TestItem2OperatorConditionHandshakeAndBridgeAreNotClean is issue 27,
// item 2: `generate -w --handshake OperatorCondition`, then `generate -w
// --bridge img:1 --bridge-deployment hco-operator` on
// kubevirt-hyperconverged-1.20.0 gave a bundle validate called clean while
// `simulate --explore --bridge` refused it (two writers of one entry; HCO
// writes its OperatorCondition). generate now refuses the second step and
// writes nothing; the bundle as the first step left it is held on OLM v0 by
// the operator's own writes, and validate says which writer holds it.
func TestItem2OperatorConditionHandshakeAndBridgeAreNotClean(t *testing.T) {
	dir := copyBundle(t, filepath.Join(testutil.CorpusDir(t), "kubevirt-hyperconverged-1.20.0"))
	code, _, stderr := run(t, "generate", "-w", "--handshake", "OperatorCondition", dir)
	require.Equal(t, 0, code, stderr)
	csv := filepath.Join(dir, "manifests", "kubevirt-hyperconverged-operator.v1.20.0.clusterserviceversion.yaml")
	before, err := os.ReadFile(csv)
	require.NoError(t, err)

	code, stdout, stderr := run(t, "generate", "-w", "--bridge", "img:1", "--bridge-deployment", "hco-operator", dir)
	assert.Equal(t, result.ExitFailure, code, stderr)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "the bridge and the operator would both write it")
	after, err := os.ReadFile(csv)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "nothing written")

	_, b := validateJSON(t, dir)
	for _, f := range b.Findings {
		assert.NotEqual(t, "upgrade-not-held-olm-v0", f.Rule, f.Message)
	}
	assert.Equal(t, result.HeldByOperatorCondition, protection(b, result.ManagerOLMv0).By)
}

// assertCleanButTheVerdict asserts that validate finds nothing in dir but
// the verdict's findings (Rule.Verdict): what generate writes under
// handshake None passes every rule on its fields, while the protocol search
// finds OLM's race between its check and the replacement, and without the
// bridge nothing holds the upgrade on OLM v0.
func assertCleanButTheVerdict(t *testing.T, dir string) {
	t.Helper()
	_, b := validateJSON(t, dir)
	assert.Empty(t, b.Errors)
	for _, f := range b.Findings {
		assert.True(t, validate.VerdictRule(f.Rule), "%s %s: %s", f.Severity, f.Rule, f.Message)
	}
}

// protectedWithWarning is the protected bundle with one warning,
// conditions-list-type (two conditions of one type accepted): a bundle with
// a warning and no error (the rule fixtures carry the verdict's errors, as
// the good bundle they are made from does).
func protectedWithWarning(t *testing.T) string {
	t.Helper()
	dir := copyTree(t, "testdata/bundles/protected")
	crdFile := filepath.Join(dir, "manifests", "cool.operators.corp_cooloperators.yaml")
	crd, err := os.ReadFile(crdFile)
	require.NoError(t, err)
	edited := strings.Replace(string(crd), "x-kubernetes-list-type: map\n                x-kubernetes-list-map-keys:\n                - type\n", "x-kubernetes-list-type: atomic\n", 1)
	require.NotEqual(t, string(crd), edited)
	require.NoError(t, os.WriteFile(crdFile, []byte(edited), 0o644))
	return dir
}

// TestItem6ExploreNaiveDoesNotSetTheExitCode is issue 27, item 6, for
// --explore as for a replay: under --policy all the naive gate's
// violations are shown, marked historical, and do not set the exit code;
// --policy naive alone still exits 1 on them.
func TestItem6ExploreNaiveDoesNotSetTheExitCode(t *testing.T) {
	code, stdout, stderr := run(t, "simulate", "--explore", "--policy", "all", "--bundle", "testdata/bundles/handshake/request-spec")
	assert.Equal(t, result.ExitOK, code, "%s%s", stdout, stderr)
	assert.Contains(t, stdout, "policy naive (the historical gate: shown, not in the exit code)")
	assert.Contains(t, stdout, "error upgrade-while-blocked [naive]")

	code, js, _ := run(t, "simulate", "--explore", "--policy", "all", "-o", "json", "--bundle", "testdata/bundles/handshake/request-spec")
	assert.Equal(t, result.ExitOK, code)
	var out struct {
		Results []struct {
			Policy          string `json:"policy"`
			Counterexamples []struct {
				Violation struct {
					Historical bool `json:"historical"`
				} `json:"violation"`
			} `json:"counterexamples"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal([]byte(js), &out))
	for _, r := range out.Results {
		for _, c := range r.Counterexamples {
			assert.Equal(t, r.Policy == "naive", c.Violation.Historical, r.Policy)
		}
	}

	code, _, _ = run(t, "simulate", "--explore", "--policy", "naive", "--bundle", "testdata/bundles/handshake/request-spec")
	assert.Equal(t, result.ExitFindings, code)
}
