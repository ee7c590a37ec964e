package explore

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/internal/jsonobj"
	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/simulate"
	"github.com/statuscheck/statuscheck/pkg/source"
	"github.com/statuscheck/statuscheck/pkg/trace"
)

// The items of issue 27, each a test named after its item.

func rulesBundle(rule, which string) string {
	return filepath.Join(testutil.RepoRoot(), "testdata", "bundles", "rules", rule, which)
}

// TestItem3ReachableInitialState: every explored trace starts from a
// state the apiserver model gives for the bundle's CRD: the CR created
// from the example, then the operator's status write, both through the
// core. Without the status subresource that write moves generation, so
// the search starts from an outdated True, no upgrade ever gets through
// the olm or strict gate, and explore says so (never-upgradeable, with a
// trace that replays to it against the bundle). With the subresource the
// start is the fresh True at generation 1 it always was.
func TestItem3ReachableInitialState(t *testing.T) {
	run := func(t *testing.T, dir string, p contract.Policy) (*Config, *Result) {
		sctx, err := source.FromBundle(dir)
		require.NoError(t, err)
		cfg := simulate.ContextConfig(sctx, []contract.Policy{p}, p)
		res, err := Run(context.Background(), cfg, Options{Depth: DefaultDepth, Example: sctx.Example})
		require.NoError(t, err)
		return cfg, res
	}
	initialGenerations := func(res *Result) (gen, og int64) {
		g, ok := jsonobj.Int(res.Initial["metadata"].(map[string]interface{})["generation"])
		require.True(t, ok)
		return g, reportOG(res.Initial["status"].(map[string]interface{}))
	}
	fail := rulesBundle("status-subresource-disabled", "fail")
	for _, p := range []contract.Policy{contract.PolicyOLM, contract.PolicyStrict} {
		t.Run("no status subresource, "+string(p), func(t *testing.T) {
			cfg, res := run(t, fail, p)
			gen, og := initialGenerations(res)
			assert.Equal(t, int64(2), gen, "the operator's status write is a main-resource write: generation moved")
			assert.Equal(t, int64(1), og, "the operator reported for the generation the create gave")
			c := counterexample(res, simulate.RuleNeverUpgradeable)
			require.NotNil(t, c, "found %v", rules(res))
			assert.Equal(t, simulate.KindUnreachable, c.Violation.Kind)
			assert.Contains(t, c.Violation.Message, "no upgrade gets through the "+string(p)+" gate")
			assert.Nil(t, counterexample(res, simulate.RuleUpgradeWhileBlocked), "no check ever allows, so nothing races it")
			// The trace replays, against the bundle, to the same violation.
			files, err := WriteCounterexamples(t.TempDir(), cfg, &Result{Policy: res.Policy, Initial: res.Initial, OperatorCondition: res.OperatorCondition, Counterexamples: []Counterexample{*c}})
			require.NoError(t, err)
			tr, err := trace.Open(files[0], trace.OpenOptions{})
			require.NoError(t, err)
			defer tr.Close()
			sctx, err := source.FromBundle(fail)
			require.NoError(t, err)
			rcfg, _, err := simulate.NewConfig(sctx, tr, []contract.Policy{p}, p)
			require.NoError(t, err)
			sum, err := simulate.Replay(tr, rcfg, nil)
			require.NoError(t, err)
			var replayed []string
			for _, v := range sum.Violations {
				replayed = append(replayed, v.Rule)
			}
			assert.Contains(t, replayed, simulate.RuleNeverUpgradeable)
		})
	}
	t.Run("no status subresource, naive", func(t *testing.T) {
		_, res := run(t, fail, contract.PolicyNaive)
		assert.Nil(t, counterexample(res, simulate.RuleNeverUpgradeable), "naive ignores observedGeneration: upgrades get through")
		assert.NotNil(t, counterexample(res, simulate.RuleUnsafeApproval), "on the outdated True")
	})
	t.Run("with the status subresource", func(t *testing.T) {
		_, res := run(t, rulesBundle("status-subresource-disabled", "pass"), contract.PolicyOLM)
		gen, og := initialGenerations(res)
		assert.Equal(t, int64(1), gen)
		assert.Equal(t, int64(1), og, "a fresh True, as before")
		assert.Nil(t, counterexample(res, simulate.RuleNeverUpgradeable))
		md := res.Initial["metadata"].(map[string]interface{})
		assert.NotContains(t, md, "uid", "the apiserver's identity is left out: a recreate makes a new UID")
	})
	t.Run("created in the example's namespace", func(t *testing.T) {
		// HyperConverged's v1alpha1 CRD pins the namespace (and the
		// name) its singleton lives in: created in the apiserver's
		// default namespace, the CR is refused; the console creates it
		// where the example says.
		crd := filepath.Join(t.TempDir(), "crd.yaml")
		require.NoError(t, os.WriteFile(crd, []byte(`apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: hyperconvergeds.hco.kubevirt.io}
spec:
  group: hco.kubevirt.io
  names: {kind: HyperConverged, plural: hyperconvergeds, singular: hyperconverged, listKind: HyperConvergedList}
  scope: Namespaced
  subresources: {status: {}}
  validation:
    openAPIV3Schema:
      properties:
        metadata:
          properties:
            name: {type: string, pattern: kubevirt-hyperconverged}
            namespace: {type: string, pattern: kubevirt-hyperconverged}
  version: v1alpha1
  versions:
  - {name: v1alpha1, served: true, storage: true}
`), 0o644))
		sctx, err := source.FromCRD(crd, "hco.kubevirt.io/v1alpha1/HyperConverged/kubevirt-hyperconverged")
		require.NoError(t, err)
		cfg := simulate.ContextConfig(sctx, []contract.Policy{contract.PolicyOLM}, contract.PolicyOLM)
		example := map[string]interface{}{"apiVersion": "hco.kubevirt.io/v1alpha1", "kind": "HyperConverged",
			"metadata": map[string]interface{}{"name": "kubevirt-hyperconverged", "namespace": "kubevirt-hyperconverged"}, "spec": map[string]interface{}{}}
		res, err := Run(context.Background(), cfg, Options{Depth: 6, Example: example})
		require.NoError(t, err)
		assert.NotContains(t, res.Initial["metadata"], "namespace", "the trace's object names no namespace, as the annotation does not")
		_, err = Run(context.Background(), cfg, Options{Depth: 6})
		assert.ErrorContains(t, err, "the apiserver refuses to create the HyperConverged the traces start from")
	})
}
