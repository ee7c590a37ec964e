package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"
)

// TestGenerateGuardsBadInput: what generate --admission-policy and
// --upgrade-hook cannot do is exit 2 with the file named and nothing on
// stdout.
func TestGenerateGuardsBadInput(t *testing.T) {
	none := filepath.Join(repoRoot, "testdata", "bundles", "handshake", "none")
	csv := filepath.Join(none, "manifests", "cool-operator.clusterserviceversion.yaml")
	tests := []struct {
		name string
		args []string
		err  string
	}{
		{name: "a kind the bundle does not own", args: []string{"--admission-policy", "--install-namespace", "ns", "--kind", "WarmOperator", none}, err: csv + ": --kind WarmOperator is not an owned kind of the CSV"},
		{name: "a cluster-scoped kind with a namespace", args: []string{"--admission-policy", "--install-namespace", "ns", filepath.Join(repoRoot, "testdata", "bundles", "rules", "status-source-scope-mismatch", "fail")}, err: "CoolOperator is cluster-scoped, but the status source names namespace cool-system"},
		{name: "an unknown deployment", args: []string{"--admission-policy", "--install-namespace", "ns", "--deployment", "warm", none}, err: csv + `: the CSV cool-operator.v0.2.0 has no deployment "warm"`},
		{name: "no namespace", args: []string{"--upgrade-hook", "img", none}, err: "pass --install-namespace NS"},
		{name: "the hook without its image", args: []string{"--upgrade-hook", "", "--install-namespace", "ns", none}, err: "--upgrade-hook needs the image"},
		{name: "the hook with the placeholder IMAGE", args: []string{"--upgrade-hook", "IMAGE", "--install-namespace", "ns", none}, err: `--upgrade-hook: "IMAGE" is a placeholder, not an image`},
		{name: "the hook with an image that does not parse", args: []string{"--upgrade-hook", "not a valid image ref!!", "--install-namespace", "ns", none}, err: `--upgrade-hook: "not a valid image ref!!" is not an image reference`},
		{name: "with -w", args: []string{"--admission-policy", "-w", "--install-namespace", "ns", none}, err: "--write does not go with --admission-policy"},
		{name: "two bundles", args: []string{"--admission-policy", "--install-namespace", "ns", none, none}, err: "take one bundle or CSV"},
		{name: "a guard flag alone", args: []string{"--install-namespace", "ns", none}, err: "--install-namespace goes with --admission-policy or --upgrade-hook"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, append([]string{"generate"}, tt.args...)...)
			assert.Equal(t, 2, code)
			assert.Empty(t, stdout)
			assert.Contains(t, stderr, tt.err)
		})
	}
}

// TestGenerateAdmissionPolicy: the policy and its binding on stdout, as
// typed objects decode them.
func TestGenerateAdmissionPolicy(t *testing.T) {
	code, stdout, stderr := run(t, "generate", "--admission-policy", "--install-namespace", "cool-system", "--when-absent", "Block", filepath.Join(repoRoot, "testdata", "bundles", "handshake", "none"))
	require.Equal(t, 0, code, stderr)
	docs := strings.Split(stdout, "\n---\n")
	require.Len(t, docs, 2)
	p, b := &admissionv1.ValidatingAdmissionPolicy{}, &admissionv1.ValidatingAdmissionPolicyBinding{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[0]), p))
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[1]), b))
	assert.Equal(t, admissionv1.Fail, *p.Spec.FailurePolicy)
	assert.Equal(t, admissionv1.DenyAction, *b.Spec.ParamRef.ParameterNotFoundAction)
	assert.Equal(t, "cool-operator", b.Spec.ParamRef.Name)
}
