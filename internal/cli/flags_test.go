package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFlagsAndMessages pins issue 11's items 10 to 13: bad flag values are
// refused, a flag combination is judged one way, errors name the right
// help and read right.
func TestFlagsAndMessages(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string // "" when stderr is not pinned
		stdout string
	}{
		{name: "--depth 0", args: []string{"simulate", "--explore", "--bundle", "testdata/bundles/handshake/none", "--depth", "0"}, code: 2,
			stderr: "--depth must be at least 1, not 0\nRun 'statuscheck simulate --help' for usage."},
		{name: "--depth -5", args: []string{"simulate", "--explore", "--bundle", "testdata/bundles/handshake/none", "--depth", "-5"}, code: 2,
			stderr: "--depth must be at least 1, not -5"},
		{name: "--timeout -1s", args: []string{"simulate", "--explore", "--bundle", "testdata/bundles/handshake/none", "--timeout", "-1s"}, code: 2,
			stderr: "--timeout cannot be negative (-1s); 0 means no limit"},
		{name: "a request path implies RequestAck", args: []string{"generate", "--request-spec-path", ".spec.upgradeRequest", "testdata/bundles/good"}, code: 0,
			stdout: `"handshake":{"mode":"RequestAck","request":{"specPath":".spec.upgradeRequest"}}`},
		{name: "a request path against another handshake is a usage error", args: []string{"generate", "--handshake", "None", "--request-spec-path", ".spec.upgradeRequest", "testdata/bundles/good"}, code: 2,
			stderr: "need --handshake RequestAck, not None\nRun 'statuscheck generate --help' for usage."},
		{name: "an ack path against another handshake is the same usage error", args: []string{"generate", "--handshake", "OperatorCondition", "--ack-status-path", ".status.x", "testdata/bundles/good"}, code: 2,
			stderr: "need --handshake RequestAck, not OperatorCondition"},
		{name: "--crd a directory", args: []string{"simulate", "--crd", "testdata/bundles/good/manifests", "--source", "cool.operators.corp/v1beta1/CoolOperator/cool-operator", "testdata/traces/seed.yaml"}, code: 1,
			stdout: "4 steps, 1 violation"},
		{name: "--crd a CSV", args: []string{"simulate", "--crd", "testdata/bundles/good/manifests/cool-operator.clusterserviceversion.yaml", "--source", "cool.operators.corp/v1beta1/CoolOperator/cool-operator", "testdata/traces/seed.yaml"}, code: 2,
			stderr: "holds no CustomResourceDefinition (it holds ClusterServiceVersion); give the CRD of CoolOperator"},
		{name: "--kind in the wrong case", args: []string{"generate", "--kind", "cooloperator", "testdata/bundles/good"}, code: 2,
			stderr: "--kind cooloperator is not an owned kind of the CSV (status-source-not-owned: add its CRD to spec.customresourcedefinitions.owned, or pick one it owns); did you mean CoolOperator?"},
		{name: "a usage error names the subcommand's help", args: []string{"validate", "--fail-on", "never", "testdata/bundles/good"}, code: 2,
			stderr: "Run 'statuscheck validate --help' for usage."},
		// Item 11: generate --check agrees with validate on a missing CRD.
		{name: "generate --check with the CRD missing", args: []string{"generate", "--check", "testdata/bundles/rules/status-source-crd-missing/fail"}, code: 1,
			stderr: "error status-source-crd-missing"},
		{name: "validate with the CRD missing", args: []string{"validate", "testdata/bundles/rules/status-source-crd-missing/fail"}, code: 1,
			stdout: "error status-source-crd-missing"},
		// Item 13: counts agree with their nouns; a violation about the
		// starting state has no step.
		{name: "two steps", args: []string{"simulate", "testdata/traces/fidelity/4-orphan-marks-deleting.yaml"}, code: 0, stdout: "2 steps, "}, // a replay that ends blocked is a warning; --explore's never-upgradeable is the error
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tt.args...)
			assert.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			if tt.stderr != "" {
				assert.Contains(t, stderr, tt.stderr)
			}
			if tt.stdout != "" {
				assert.Contains(t, stdout, tt.stdout)
			}
		})
	}
}

func TestWording(t *testing.T) {
	_, stdout, _ := run(t, "simulate", "testdata/traces/fidelity/2-operatorcondition-sync-last-wins.yaml")
	assert.Contains(t, stdout, "the operator's last report (in the starting state) is Upgradeable=True")
	assert.NotContains(t, stdout, "at step 0")
	assert.NotContains(t, stdout, " 1 steps")
	_, help, _ := run(t, "simulate", "--help")
	assert.Contains(t, help, "GROUP/VERSION/KIND[/NAMESPACE]/NAME")
	assert.Contains(t, strings.Join(strings.Fields(help), " "), "--explore writes text or json", "wrapped at helpWidth")
	_, help, _ = run(t, "validate", "--help")
	assert.Contains(t, strings.Join(strings.Fields(help), " "), "manifest-result and scorecard exit 0 with findings")
	for _, args := range [][]string{{"validate", "testdata/bundles/good"}, {"simulate", "testdata/traces/seed.yaml"}} {
		_, out, errs := run(t, args...)
		for _, bad := range []string{" a alias", " 1 steps", " 1 violations", " 1 errors", " 1 warnings", " 1 bundles"} {
			assert.NotContains(t, out+errs, bad)
		}
	}
	assert.False(t, strings.Contains(help, "is a alias"))
}
