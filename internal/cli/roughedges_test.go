package cli

import (
	"bytes"
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
		{"record", "--bundle", dir},
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
	dir := copyTree(t, "../shared/corpus/bundles/kubevirt-hyperconverged-1.20.0")
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

func TestRecordKubeconfigProblemsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	noCurrent := filepath.Join(dir, "no-current")
	require.NoError(t, os.WriteFile(noCurrent, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://127.0.0.1:1\"}\ncontexts:\n- name: dev\n  context: {cluster: c, user: u}\n- name: prod\n  context: {cluster: c, user: u}\nusers:\n- name: u\n  user: {}\n"), 0o600))
	bundleArgs := []string{"record", "--bundle", "testdata/bundles/good"}
	tests := []struct {
		name       string
		kubeconfig string
		args       []string
		want       string
	}{
		{name: "KUBECONFIG names a file that does not exist", kubeconfig: filepath.Join(dir, "nonexistent"),
			want: "no kubeconfig: KUBECONFIG " + filepath.Join(dir, "nonexistent") + " does not exist (pass --kubeconfig FILE, set KUBECONFIG, or create ~/.kube/config)"},
		{name: "an empty kubeconfig", kubeconfig: empty,
			want: "the kubeconfig " + empty + " (from KUBECONFIG) is empty: no clusters, users or contexts"},
		{name: "no current context", kubeconfig: noCurrent,
			want: "the kubeconfig " + noCurrent + " (from KUBECONFIG) has no current-context: pass --context NAME (it has dev, prod)"},
		{name: "-o in a directory that does not exist, before connecting", kubeconfig: noCurrent, args: []string{"-o", filepath.Join(dir, "missing", "x.yaml")},
			want: "-o " + filepath.Join(dir, "missing", "x.yaml") + ": the directory " + filepath.Join(dir, "missing") + " does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tt.kubeconfig)
			code, stdout, stderr := run(t, append(bundleArgs, tt.args...)...)
			assert.Equal(t, 2, code)
			assert.Empty(t, stdout)
			assert.Equal(t, "statuscheck: "+tt.want, strings.SplitN(strings.TrimSpace(stderr), "\n", 2)[0])
			assert.NotContains(t, stderr, "no kubeconfig: pass")
		})
	}
}

func TestValidateAFolderOfBundles(t *testing.T) {
	parent := t.TempDir()
	for name, src := range map[string]string{"a": "testdata/bundles/good", "b": "testdata/bundles/handshake/none"} {
		require.NoError(t, os.Rename(copyTree(t, src), filepath.Join(parent, name)))
	}
	t.Run("each bundle in it", func(t *testing.T) {
		code, stdout, stderr := run(t, "validate", parent)
		assert.Equal(t, 0, code, "%s%s", stdout, stderr)
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
	// The binary's --help describes it.
	cmd := exec.Command(sdkValidator(t), "--help")
	got, err := cmd.Output()
	require.NoError(t, err)
	assert.Contains(t, string(got), "operator-sdk external validator")
}
