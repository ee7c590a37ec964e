package validate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/guard"
	"github.com/statuscheck/statuscheck/pkg/result"
)

// TestVerdictWithGuards: the admission policy and the hook generate
// prints hold the upgrade without OLM (the policy under OLM v1 too), each
// with what it still does not hold; guards of another CR or Deployment
// change nothing; OLM v0's verdict is never theirs.
func TestVerdictWithGuards(t *testing.T) {
	dir := filepath.Join(testutil.RepoRoot(), "testdata", "bundles", "handshake", "none")
	b, err := bundle.Load(dir, bundle.Options{})
	require.NoError(t, err)
	csv := b.CSV()
	src := NewContext(b, Options{}).Source
	require.NotNil(t, src)
	tg, err := guard.Resolve(csv.Obj, csv.Doc.File, src, "cooloperators", true, "cool-system", "")
	require.NoError(t, err)
	p, bd := guard.AdmissionPolicy(tg)
	policyYAML, err := guard.YAML(p, bd)
	require.NoError(t, err)
	hookYAML, err := guard.YAML(guard.UpgradeHook(tg, guard.Hook{Image: "img"})...)
	require.NoError(t, err)
	parse := func(file string, data []byte) []guard.Found {
		f, err := guard.Parse(file, data)
		require.NoError(t, err)
		return f
	}
	policy, hook := parse("policy.yaml", policyYAML), parse("hook.yaml", hookYAML)
	argoOnly := append([]guard.Found{}, hook...)
	argoOnly[0].Tools = []string{"Argo CD"}
	other := parse("other.yaml", policyYAML)
	other[0].Deployments = []string{"warm-operator"}

	tests := []struct {
		name             string
		guards           []guard.Found
		v1, none         bool
		by               string
		reason, noReason []string
	}{
		{name: "none shipped"},
		{name: "the policy", guards: policy, v1: true, none: true, by: "admission-policy",
			reason: []string{"policy.yaml denies an image change of Deployment cool-operator", "renames the Deployment", "changes no image", "informer", "applied around the denied Deployment"}},
		{name: "the hook", guards: hook, none: true, by: "upgrade-hook",
			reason: []string{"hook.yaml runs statuscheck gate, which fails an upgrade by Helm or Argo CD before", "holds only the tool that runs the hook"}, noReason: []string{"renames"}},
		{name: "an Argo CD hook only", guards: argoOnly, none: true, by: "upgrade-hook",
			reason: []string{"hook.yaml runs statuscheck gate, which fails an upgrade by Argo CD before"}, noReason: []string{"Helm or"}},
		{name: "both", guards: append(append([]guard.Found{}, hook...), policy...), v1: true, none: true, by: "upgrade-hook+admission-policy"},
		{name: "a policy of another Deployment", guards: other},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := NewContext(b, Options{Guards: tt.guards})
			ps := Protection(ctx)
			require.Len(t, ps, 3)
			got := map[string]result.Protection{}
			for _, p := range ps {
				got[p.Manager] = p
			}
			assert.False(t, got[result.ManagerOLMv0].Held)
			assert.Empty(t, got[result.ManagerOLMv0].By)
			assert.Equal(t, tt.v1, got[result.ManagerOLMv1].Held)
			assert.Equal(t, tt.none, got[result.ManagerNone].Held)
			assert.Equal(t, tt.by, got[result.ManagerNone].By)
			if !tt.none {
				assert.NotEmpty(t, got[result.ManagerNone].Remedy)
			}
			for _, r := range tt.reason {
				assert.Contains(t, got[result.ManagerNone].Reason, r)
			}
			for _, r := range tt.noReason {
				assert.NotContains(t, got[result.ManagerNone].Reason, r)
			}
		})
	}
}

// TestGuardsShareTheCRsDoubts: the admission policy and the hook read the
// CR's condition as OLM's gate does, so what puts that CR in doubt (two
// conditions of one type accepted) or stops it from working (the
// apiserver prunes the conditions) makes their verdicts "no" as it makes
// OLM v0's; what only OLM reads (the console's alm-examples) leaves them
// held.
func TestGuardsShareTheCRsDoubts(t *testing.T) {
	src := filepath.Join(testutil.RepoRoot(), "testdata", "bundles", "handshake", "none")
	const crdName, csvName = "manifests/cool.operators.corp_cooloperators.yaml", "manifests/cool-operator.clusterserviceversion.yaml"
	tests := []struct {
		name      string
		file      string
		old, new  string
		finding   string // the rule the edit makes fire
		held      bool
		reasonHas string
	}{
		{name: "two conditions of one type accepted", file: crdName,
			old: "x-kubernetes-list-type: map\n                x-kubernetes-list-map-keys:\n                - type\n", new: "x-kubernetes-list-type: atomic\n",
			finding: "conditions-list-type", reasonHas: "the gate may not hold as declared: conditions-list-type"},
		{name: "the conditions pruned", file: crdName,
			old: "              conditions:\n", new: "              otherConditions:\n",
			finding: "conditions-schema-missing", reasonHas: "cannot work as declared: conditions-schema-missing"},
		{name: "the console's examples broken", file: csvName,
			old: `"spec": {"storageLayer": "PostgreSQL"}}]`, new: `"spec": {"storageLayer": "PostgreSQL"}}`,
			finding: "alm-examples-invalid", held: true},
		// The guards fall back to status.observedGeneration, which the
		// CRD keeps: only OLM's gate, which reads the condition's own,
		// never opens.
		{name: "the condition's observedGeneration pruned, status's kept", file: crdName,
			old: "                    observedGeneration:\n                      type: integer\n                      format: int64\n                      minimum: 0\n", new: "",
			finding: "conditions-observedgeneration-missing", held: true},
		{name: "the console's example refused", file: csvName,
			old:     `'{"apiVersion": "cool.operators.corp/v1beta1", "kind": "CoolOperator", "metadata": {"name": "cool-operator"}, "spec": {"storageLayer": "PostgreSQL"}}'`,
			new:     `'{"apiVersion": "cool.operators.corp/v1beta1", "kind": "CoolOperator", "metadata": {"name": "cool-operator"}, "spec": {"storageLayer": "Oracle"}}'`,
			finding: "status-source-example-invalid", held: true},
		{name: "a manifest OLM's bundle format refuses", file: "manifests/webhook.deployment.yaml",
			new:     "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: webhook\nspec:\n  selector:\n    matchLabels: {app: webhook}\n  template:\n    metadata:\n      labels: {app: webhook}\n    spec:\n      containers:\n      - name: webhook\n        image: quay.io/cool/webhook:v1\n",
			finding: "bundle-unsupported-kind", held: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.CopyFS(dir, os.DirFS(src)))
			p := filepath.Join(dir, tt.file)
			data, err := os.ReadFile(p)
			if tt.old == "" {
				require.ErrorIs(t, err, os.ErrNotExist, "a new file")
			} else {
				require.NoError(t, err)
				require.Contains(t, string(data), tt.old)
			}
			require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(data), tt.old, tt.new, 1)), 0o644))
			b, err := bundle.Load(dir, bundle.Options{})
			require.NoError(t, err)
			csv := b.CSV()
			tg, err := guard.Resolve(csv.Obj, csv.Doc.File, NewContext(b, Options{}).Source, "cooloperators", true, "cool-system", "")
			require.NoError(t, err)
			pol, bd := guard.AdmissionPolicy(tg)
			policyYAML, err := guard.YAML(pol, bd)
			require.NoError(t, err)
			found, err := guard.Parse("policy.yaml", policyYAML)
			require.NoError(t, err)

			res := Check(b, Options{Guards: found})
			got := map[string]result.Protection{}
			for _, p := range res.Protection {
				got[p.Manager] = p
			}
			var rules []string
			for _, f := range res.Findings {
				rules = append(rules, f.Rule)
			}
			require.Contains(t, rules, tt.finding)
			for _, m := range []string{result.ManagerOLMv1, result.ManagerNone} {
				assert.Equal(t, tt.held, got[m].Held, "%s: %s", m, got[m].Reason)
				if !tt.held {
					assert.Contains(t, got[m].Reason, tt.reasonHas, m)
					assert.NotEmpty(t, got[m].Remedy, m)
				}
			}
		})
	}
}
