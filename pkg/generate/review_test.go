package generate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/result"
	"github.com/statuscheck/statuscheck/pkg/validate"
)

// TestReviewBridgeRBACFollowsInstallModes: the bridge's RBAC is judged
// with the install-mode logic the operator's /status rule is
// (sidecar.Modes): OLM v0 lifts permissions to ClusterRoles under
// AllNamespaces (operatorgroup.go, ensureRBACInTargetNamespace,
// ensureSingletonRBAC), so with AllNamespaces the only install mode the
// bridge's rules in permissions count for a cluster-scoped kind, as the
// operator's do (status-rbac-missing, status-rbac-install-mode), and
// bridge-rbac-broad does not call them, or the clusterPermissions an
// older generate wrote, too broad; with another mode beside it they stay
// Roles there, and bridge-rbac-missing says so, as status-rbac-install-mode
// does for the operator. generate --bridge writes the bridge's rules where
// that logic puts them, and validate accepts them. Each bundle is the good
// one with the edits listed.
func TestReviewBridgeRBACFollowsInstallModes(t *testing.T) {
	const (
		csvFile = "manifests/cool-operator.clusterserviceversion.yaml"
		crdFile = "manifests/cool.operators.corp_cooloperators.yaml"

		goodAnnotation = `    operatorframework.io/status-source: '{"apiVersion":"cool.operators.corp/v1beta1","kind":"CoolOperator","name":"cool-operator"}'`
		requestAck     = `    operatorframework.io/status-source: '{"apiVersion":"cool.operators.corp/v1beta1","kind":"CoolOperator","name":"cool-operator","handshake":{"mode":"RequestAck","request":{"specPath":".spec.upgradeRequest"}}}'`
		goodModes      = "  - type: OwnNamespace\n    supported: true\n  - type: SingleNamespace\n    supported: true\n  - type: MultiNamespace\n    supported: false\n  - type: AllNamespaces\n    supported: false\n"
		image          = "quay.io/statuscheck/statuscheck:v0.1.0"
		// operatorRule is the good CSV's own rule on the CR: it grants
		// the bridge get, watch and patch too.
		operatorRule = "          - get\n          - list\n          - watch\n          - update\n          - patch\n"
		listWatchCSV = "        - apiGroups:\n          - operators.coreos.com\n          resources:\n          - clusterserviceversions\n          verbs:\n          - list\n          - watch\n"
		statusRule   = "        - apiGroups:\n          - cool.operators.corp\n          resources:\n          - cooloperators/status\n          verbs:\n          - get\n          - update\n          - patch\n"
		container    = "                image: quay.io/cool-operators-corp/cool-operator:v0.2.0\n"
		bridge       = container + "              - name: statuscheck-bridge\n                image: " + image + "\n                args: [bridge]\n" +
			"                env:\n                - name: STATUSCHECK_STATUS_SOURCE\n                  valueFrom:\n                    fieldRef:\n                      fieldPath: metadata.annotations['operatorframework.io/status-source']\n"
	)
	type edit struct{ file, old, new string }
	modes := func(own, all bool) edit {
		b := map[bool]string{true: "true", false: "false"}
		return edit{csvFile, goodModes, "  - type: OwnNamespace\n    supported: " + b[own] + "\n  - type: SingleNamespace\n    supported: false\n  - type: MultiNamespace\n    supported: false\n  - type: AllNamespaces\n    supported: " + b[all] + "\n"}
	}
	var (
		clusterScoped = edit{crdFile, "  scope: Namespaced", "  scope: Cluster"}
		ack           = edit{csvFile, goodAnnotation, requestAck}
		declared      = edit{csvFile, requestAck + "\n", requestAck + "\n    statuscheck.operatorframework.io/bridge: cool-operator/statuscheck-bridge\n"}
		withBridge    = edit{csvFile, container, bridge}
		csvRule       = edit{csvFile, statusRule, statusRule + listWatchCSV}
		// olderClusterRule is the bridge's rule on the CR where an older
		// generate put it for a cluster-scoped kind: by name, in
		// clusterPermissions (the operator's own rule lists and updates,
		// but no longer patches).
		olderClusterRule = []edit{{csvFile, operatorRule, "          - get\n          - list\n          - watch\n          - update\n"},
			{csvFile, "      deployments:\n", "      clusterPermissions:\n      - serviceAccountName: cool-operator\n        rules:\n        - apiGroups:\n          - cool.operators.corp\n          resources:\n          - cooloperators\n          resourceNames:\n          - cool-operator\n          verbs:\n          - get\n          - watch\n          - patch\n      deployments:\n"}}
	)
	build := func(t *testing.T, edits ...edit) string {
		t.Helper()
		dir := t.TempDir()
		require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join(testutil.RepoRoot(), "testdata", "bundles", "good"))))
		for _, e := range edits {
			p := filepath.Join(dir, filepath.FromSlash(e.file))
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			require.Equal(t, 1, strings.Count(string(data), e.old), "edit must match %s exactly once: %q", e.file, e.old)
			require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(data), e.old, e.new, 1)), 0o644))
		}
		return dir
	}
	// rbac lists the RBAC rules' findings as "rule(severity): message".
	rbac := func(t *testing.T, dir string) []string {
		t.Helper()
		res := validate.Path(dir, validate.Options{}, bundle.Options{})
		require.Empty(t, res.Errors)
		var out []string
		for _, f := range res.Findings {
			switch f.Rule {
			case "bridge-rbac-missing", "bridge-rbac-broad", "status-rbac-missing", "status-rbac-install-mode":
				out = append(out, f.Rule+"("+f.Severity.String()+"): "+f.Message)
			}
		}
		return out
	}
	ruleOf := func(findings []string) []string {
		var out []string
		for _, f := range findings {
			out = append(out, f[:strings.Index(f, ":")])
		}
		return out
	}

	t.Run("AllNamespaces only: the bridge's rules in permissions count, as the operator's do", func(t *testing.T) {
		dir := build(t, clusterScoped, modes(false, true), ack, declared, withBridge, csvRule)
		assert.Empty(t, rbac(t, dir))
	})

	t.Run("AllNamespaces only: the clusterPermissions an older generate wrote are not too broad", func(t *testing.T) {
		dir := build(t, append([]edit{clusterScoped, modes(false, true), ack, declared, withBridge, csvRule}, olderClusterRule...)...)
		assert.Empty(t, rbac(t, dir))
	})

	t.Run("AllNamespaces beside OwnNamespace: Roles under OwnNamespace, for the bridge as for the operator", func(t *testing.T) {
		dir := build(t, clusterScoped, modes(true, true), ack, declared, withBridge, csvRule)
		got := rbac(t, dir)
		assert.ElementsMatch(t, []string{"status-rbac-install-mode(error)", "bridge-rbac-missing(error)"}, ruleOf(got), "%q", got)
		for _, f := range got {
			if strings.HasPrefix(f, "bridge-rbac-missing") {
				assert.Contains(t, f, `get, watch, patch on cooloperators.cool.operators.corp ("cool-operator") in the install strategy's clusterPermissions`)
				assert.Contains(t, f, "installed in OwnNamespace mode, which the CSV supports too, they stay Roles")
			}
		}
	})

	t.Run("the same operator's rule in a namespaced kind's permissions is the bridge's under every mode", func(t *testing.T) {
		dir := build(t, modes(true, false), ack, declared, withBridge, csvRule)
		assert.Empty(t, rbac(t, dir))
	})

	// generate --bridge on the bundle without the bridge, the operator's
	// rule not patching (so the bridge's patch must be written).
	for _, tt := range []struct {
		name string
		own  bool
		// crRule is the bridge's rule on the CR that generate writes, by
		// name: only what permissions are granted already where they
		// count, and in clusterPermissions whether it does.
		crRule  string
		cluster bool
		want    []string
	}{
		{name: "generate, AllNamespaces only: the bridge's rules go to permissions, beside the operator's",
			crRule: "          resourceNames:\n          - cool-operator\n          verbs:\n          - patch\n"},
		{name: "generate, AllNamespaces and OwnNamespace: the CR's rule goes to clusterPermissions", own: true, cluster: true,
			crRule: "          resourceNames:\n          - cool-operator\n          verbs:\n          - get\n          - watch\n          - patch\n",
			want:   []string{"status-rbac-install-mode(error)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := build(t, clusterScoped, modes(tt.own, true), ack, olderClusterRule[0])
			res, err := Run(dir, Options{Bridge: &Bridge{Image: image}})
			require.NoError(t, err)
			written := string(res.New)
			cr, cluster := strings.Index(written, tt.crRule), strings.Index(written, "      clusterPermissions:\n")
			require.GreaterOrEqual(t, cr, 0, "the bridge's rule on the CR, by name:\n%s", written)
			if tt.cluster {
				assert.Greater(t, cr, cluster, "in clusterPermissions")
			} else {
				assert.Equal(t, -1, cluster, "no clusterPermissions: the rule is in permissions")
			}
			assert.Less(t, strings.Index(written, listWatchCSV), strings.Index(written, "      deployments:\n"), "the CSV rule in permissions")
			require.NoError(t, os.WriteFile(filepath.Join(dir, csvFile), res.New, 0o644))
			assert.Equal(t, tt.want, ruleOf(rbac(t, dir)), "validate on what generate wrote")
			var bridgeFindings []result.Finding
			for _, f := range res.Findings {
				if strings.HasPrefix(f.Rule, "bridge-") {
					bridgeFindings = append(bridgeFindings, f)
				}
			}
			assert.Empty(t, bridgeFindings)
		})
	}
}
