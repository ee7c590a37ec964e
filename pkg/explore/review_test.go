package explore

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/simulate"
	"github.com/statuscheck/statuscheck/pkg/source"
)

// editedBundle copies testdata/bundles/<name> into a temporary directory
// with its CRD's text edited (each old string must be there), and returns
// the copy's directory.
func editedBundle(t testing.TB, name string, edits ...string) string {
	t.Helper()
	src := filepath.Join(testutil.RepoRoot(), "testdata", "bundles", name)
	dst := t.TempDir()
	for _, sub := range []string{"manifests", "metadata"} {
		entries, err := os.ReadDir(filepath.Join(src, sub))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(dst, sub), 0o755))
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(src, sub, e.Name()))
			require.NoError(t, err)
			text := string(data)
			if strings.HasSuffix(e.Name(), "_cooloperators.yaml") {
				for i := 0; i+1 < len(edits); i += 2 {
					require.Contains(t, text, edits[i])
					text = strings.Replace(text, edits[i], edits[i+1], 1)
				}
			}
			require.NoError(t, os.WriteFile(filepath.Join(dst, sub, e.Name()), []byte(text), 0o644))
		}
	}
	return dst
}

// conditionOG is the condition's observedGeneration in the cool
// operator's CRD; without it the CRD keeps only status.observedGeneration,
// as Strimzi's CRDs do.
const conditionOG = `                    observedGeneration:
                      type: integer
                      format: int64
                      minimum: 0
`

// statusOG is status.observedGeneration in the cool operator's CRD.
const statusOG = `              observedGeneration:
                type: integer
                format: int64
              observedUpgradeRequest:`

// celTransitionRule adds, on the CRD's root, a transition rule that
// refuses a change of spec.storageLayer while the status the CR had does
// not say Upgradeable=True.
var celTransitionRule = []string{
	"        description: CoolOperator is the operator's singleton configuration.\n        type: object\n",
	"        description: CoolOperator is the operator's singleton configuration.\n        type: object\n" +
		"        x-kubernetes-validations:\n" +
		"        - rule: \"!has(oldSelf.spec.storageLayer) || !has(self.spec.storageLayer) || self.spec.storageLayer == oldSelf.spec.storageLayer || !has(oldSelf.status) || !has(oldSelf.status.conditions) || oldSelf.status.conditions.exists(c, c.type == 'Upgradeable' && c.status == 'True')\"\n" +
		"          message: spec.storageLayer cannot change while status Upgradeable != True\n",
}

// TestOperatorWritesStatusObservedGeneration: the model's operator writes
// status.observedGeneration beside each condition's, as real operators
// commonly do. On a CRD that prunes the condition's observedGeneration
// and keeps status.observedGeneration (Strimzi's style), the bridge judges
// the CR under the strict policy, which falls back to
// status.observedGeneration: upgrades get through, and Quick (validate's
// search) reports no never-upgradeable for a bundle that declares the
// bridge. Without the bridge the olm gate reads only the condition's
// observedGeneration, so never-upgradeable stays under olm, not under
// strict.
func TestOperatorWritesStatusObservedGeneration(t *testing.T) {
	neverUpgradeable := func(t *testing.T, dir string, p contract.Policy, bridge *bool) *Counterexample {
		sctx, err := source.FromBundle(dir)
		require.NoError(t, err)
		cfg := simulate.ContextConfig(sctx, []contract.Policy{p}, p)
		if bridge != nil {
			cfg.Bridge = *bridge
		}
		res, err := Quick(context.Background(), cfg, sctx.Example)
		require.NoError(t, err)
		// The status the traces start from keeps status.observedGeneration
		// and not the condition's.
		status := res.Initial["status"].(map[string]interface{})
		assert.Equal(t, int64(1), status["observedGeneration"], "status: %v", status)
		assert.Zero(t, reportOG(status), "the CRD prunes the condition's observedGeneration")
		return counterexample(res, simulate.RuleNeverUpgradeable)
	}
	off := false
	for _, name := range []string{"protected", "good"} {
		strimzi := editedBundle(t, name, conditionOG, "")
		t.Run(name+"/bridge declared or on, olm", func(t *testing.T) {
			on := true
			bridge := &on
			if name == "protected" {
				bridge = nil // the bundle declares it: ContextConfig sets it
			}
			c := neverUpgradeable(t, strimzi, contract.PolicyOLM, bridge)
			assert.Nil(t, c, "the bridge reads status.observedGeneration (strict): %v", c)
		})
		t.Run(name+"/no bridge, olm", func(t *testing.T) {
			c := neverUpgradeable(t, strimzi, contract.PolicyOLM, &off)
			if name == "protected" {
				// RequestAck's gate (the contract's, which OLM v0 does
				// not run) reads an answer's generation with the
				// fallback under every policy.
				assert.Nil(t, c)
				return
			}
			require.NotNil(t, c, "OLM's freshness gate reads only the condition's observedGeneration")
			assert.Contains(t, c.Violation.Message, "OLM does not read status.observedGeneration")
		})
		t.Run(name+"/no bridge, strict", func(t *testing.T) {
			assert.Nil(t, neverUpgradeable(t, strimzi, contract.PolicyStrict, &off))
		})
	}
}

// TestNeverUpgradeableSaysItsBounds: never-upgradeable says how far the
// search went: all states reachable with at most K spec changes when the
// user is bounded, and the step it points at is a step of the trace it
// returns (the bridge's reads and OLM's making of the replacing CSV are
// moves that traces leave out).
func TestNeverUpgradeableSaysItsBounds(t *testing.T) {
	noOG := rulesBundle("conditions-observedgeneration-missing", "fail")
	sctx, err := source.FromBundle(noOG)
	require.NoError(t, err)
	// The protected bundle (a spec request, the bridge declared) with a
	// CRD that keeps no observedGeneration: the bridge's reads and OLM's
	// making of the replacing CSV come before the check.
	protected, err := source.FromBundle(editedBundle(t, "protected", conditionOG, "", statusOG, "              observedUpgradeRequest:"))
	require.NoError(t, err)
	stepOf := regexp.MustCompile(`at best, step ([0-9]+),`)
	for _, tc := range []struct {
		name   string
		sctx   *source.Context
		bridge bool
	}{{"freshness", sctx, false}, {"freshness", sctx, true}, {"protected", protected, true}} {
		cfg := simulate.ContextConfig(tc.sctx, []contract.Policy{contract.PolicyOLM}, contract.PolicyOLM)
		cfg.Bridge = tc.bridge
		sctx := tc.sctx
		t.Run(tc.name+"/quick/bridge="+strconv.FormatBool(tc.bridge), func(t *testing.T) {
			res, err := Quick(context.Background(), cfg, sctx.Example)
			require.NoError(t, err)
			c := counterexample(res, simulate.RuleNeverUpgradeable)
			require.NotNil(t, c, "found %v", rules(res))
			msg := c.Violation.Message
			if res.Exhausted {
				assert.Contains(t, msg, "in all "+strconv.Itoa(res.States)+" states reachable with at most "+strconv.Itoa(QuickMaxUserChanges)+" spec changes by the user")
			} else {
				assert.Contains(t, msg, "to depth "+strconv.Itoa(res.Depth)+" with at most "+strconv.Itoa(QuickMaxUserChanges)+" spec changes")
			}
			assert.NotContains(t, msg, "in all "+strconv.Itoa(res.States)+" reachable states")
			m := stepOf.FindStringSubmatch(msg)
			require.NotNil(t, m, msg)
			assert.Equal(t, strconv.Itoa(len(c.Steps)), m[1], "the step named is the last of the trace returned (%d steps): %s", len(c.Steps), msg)
		})
	}
	t.Run("unbounded user", func(t *testing.T) {
		cfg := simulate.ContextConfig(sctx, []contract.Policy{contract.PolicyOLM}, contract.PolicyOLM)
		res, err := Run(context.Background(), cfg, Options{Depth: 8, Example: sctx.Example})
		require.NoError(t, err)
		c := counterexample(res, simulate.RuleNeverUpgradeable)
		require.NotNil(t, c)
		assert.NotContains(t, c.Violation.Message, "spec changes")
	})
}

// TestQuickFindsTwoChangeWriteRejected: a CRD whose transition rule
// refuses a spec change while the status says Upgradeable is not True
// refuses the user's second change, made while the operator migrates:
// write-rejected in three steps (user update, operator updateStatus
// False, user update), which needs two spec changes in a trace.
func TestQuickFindsTwoChangeWriteRejected(t *testing.T) {
	dir := editedBundle(t, "good", celTransitionRule...)
	sctx, err := source.FromBundle(dir)
	require.NoError(t, err)
	cfg := simulate.ContextConfig(sctx, []contract.Policy{contract.PolicyOLM}, contract.PolicyOLM)
	res, err := Quick(context.Background(), cfg, sctx.Example)
	require.NoError(t, err)
	c := counterexample(res, simulate.RuleWriteRejected)
	require.NotNil(t, c, "found %v", rules(res))
	assert.Equal(t, []string{"user update", "operator updateStatus", "user update"}, steps(*c))
	assert.Contains(t, c.Violation.Message, "spec.storageLayer cannot change while status Upgradeable != True")
}
