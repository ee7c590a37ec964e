package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/result"
	"github.com/statuscheck/statuscheck/pkg/validate"
)

// copyTree copies a directory of the repository into a temporary one.
func copyTree(t *testing.T, rel string) string {
	t.Helper()
	src := filepath.Join(repoRoot, rel)
	dst := t.TempDir()
	require.NoError(t, filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, r), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, r), data, info.Mode().Perm())
	}))
	return dst
}

const missingCSV = "testdata/bundles/rules/status-source-missing/fail/manifests/cool-operator.clusterserviceversion.yaml"

func TestGenerate(t *testing.T) {
	t.Run("stdout", func(t *testing.T) {
		code, stdout, stderr := run(t, "generate", "testdata/bundles/rules/status-source-missing/fail")
		require.Equal(t, 0, code, stderr)
		orig, _ := os.ReadFile(filepath.Join(repoRoot, missingCSV))
		assert.Equal(t, len(strings.Split(string(orig), "\n"))+1, len(strings.Split(stdout, "\n")))
		assert.Contains(t, stdout, `    operatorframework.io/status-source: '{"apiVersion":"cool.operators.corp/v1beta1","kind":"CoolOperator","name":"cool-operator"}'`)
	})
	t.Run("write, then check", func(t *testing.T) {
		dir := copyTree(t, "testdata/bundles/rules/status-source-missing/fail")
		code, _, _ := run(t, "generate", "--check", dir)
		assert.Equal(t, 1, code, "not up to date yet")
		code, stdout, stderr := run(t, "generate", "-w", dir)
		require.Equal(t, 0, code, stderr)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, "wrote the status-source annotation (the initialization resource)")
		code, stdout, _ = run(t, "generate", "--check", dir)
		assert.Equal(t, 0, code, stdout)
		assertCleanButTheVerdict(t, dir)
		before, _ := os.ReadFile(filepath.Join(dir, "manifests/cool-operator.clusterserviceversion.yaml"))
		code, _, _ = run(t, "generate", "-w", dir)
		assert.Equal(t, 0, code)
		after, _ := os.ReadFile(filepath.Join(dir, "manifests/cool-operator.clusterserviceversion.yaml"))
		assert.Equal(t, string(before), string(after), "a second -w changes nothing")
	})
	t.Run("diff", func(t *testing.T) {
		code, stdout, _ := run(t, "generate", "-d", "testdata/bundles/rules/status-source-missing/fail")
		require.Equal(t, 0, code)
		assert.Contains(t, stdout, "--- "+missingCSV)
		assert.Contains(t, stdout, "\n+    operatorframework.io/status-source: ")
		assert.Equal(t, 1, strings.Count(stdout, "\n+ "), "one added line")
		assert.Equal(t, 0, strings.Count(stdout, "\n-    "), "no removed line")
		code, stdout, _ = run(t, "generate", "-d", "testdata/bundles/good")
		assert.Equal(t, 0, code)
		assert.Empty(t, stdout, "nothing to change, no diff")
	})
	t.Run("check prints what is stale", func(t *testing.T) {
		code, stdout, _ := run(t, "generate", "--check", missingCSV)
		assert.Equal(t, 1, code)
		assert.Contains(t, stdout, missingCSV+": the status-source annotation is not up to date; run: statuscheck generate -w "+missingCSV)
	})
	t.Run("flags change the value", func(t *testing.T) {
		code, stdout, stderr := run(t, "generate", "--when-absent", "Block", "--handshake", "RequestAck", "--request-spec-path", ".spec.upgradeRequest", "testdata/bundles/good")
		require.Equal(t, 0, code, stderr)
		assert.Contains(t, stdout, `"whenAbsent":"Block","handshake":{"mode":"RequestAck","request":{"specPath":".spec.upgradeRequest"}}}'`)
	})
	t.Run("the operator-sdk base CSV with --crd", func(t *testing.T) {
		code, stdout, stderr := run(t, "generate", "--name", "cool-operator", "--crd", "testdata/operator-sdk/config/crd/bases",
			"testdata/operator-sdk/config/manifests/bases/cool-operator.clusterserviceversion.yaml")
		require.Equal(t, 0, code, stderr)
		assert.Contains(t, stdout, "operatorframework.io/status-source: ")
		assert.Contains(t, strings.Join(strings.Fields(stderr), " "), "RBAC was not checked", "the note, wrapped for a terminal")
	})
}

// assertPatchMakes applies generate's -o patch to the original CSV with
// evanphx/json-patch, as kustomize would, and compares it with what
// generate writes.
func assertPatchMakes(t *testing.T, patch string, orig, want []byte) {
	t.Helper()
	origJSON, err := yaml.YAMLToJSON(orig)
	require.NoError(t, err)
	p, err := jsonpatch.DecodePatch([]byte(patch))
	require.NoError(t, err, patch)
	patched, err := p.Apply(origJSON)
	require.NoError(t, err)
	wantJSON, err := yaml.YAMLToJSON(want)
	require.NoError(t, err)
	assert.JSONEq(t, string(wantJSON), string(patched), "the patch does what -w does")
}

func TestGeneratePatch(t *testing.T) {
	for _, bundle := range []string{"testdata/bundles/rules/status-source-missing/fail", "testdata/bundles/rules/status-source-invalid/fail"} {
		t.Run(bundle, func(t *testing.T) {
			code, patch, stderr := run(t, "generate", "-o", "patch", bundle)
			require.Equal(t, 0, code, stderr)
			_, want, _ := run(t, "generate", bundle)
			csvPath, _ := filepath.Glob(filepath.Join(repoRoot, bundle, "manifests", "*clusterserviceversion*"))
			require.Len(t, csvPath, 1)
			orig, err := os.ReadFile(csvPath[0])
			require.NoError(t, err)
			assertPatchMakes(t, patch, orig, []byte(want))
			var ops []map[string]interface{}
			require.NoError(t, json.Unmarshal([]byte(patch), &ops))
			assert.Equal(t, "/metadata/annotations/operatorframework.io~1status-source", ops[0]["path"])
		})
	}
	t.Run("a CSV without annotations", func(t *testing.T) {
		code, patch, _ := run(t, "generate", "-o", "patch", "--force", "testdata/generate/no-annotations/in.yaml", "--api-version", "a.io/v1", "--kind", "K", "--name", "n")
		require.Equal(t, 0, code)
		assert.Contains(t, patch, `"path": "/metadata/annotations"`)
		assert.Contains(t, patch, `"operatorframework.io/status-source": "{\"apiVersion\":\"a.io/v1\",\"kind\":\"K\",\"name\":\"n\"}"`)
	})
}

func TestGenerateRefusesInvalidValues(t *testing.T) {
	dir := copyTree(t, "testdata/bundles/rules/status-source-missing/fail")
	csv := filepath.Join(dir, "manifests/cool-operator.clusterserviceversion.yaml")
	before, _ := os.ReadFile(csv)
	code, stdout, stderr := run(t, "generate", "-w", "--api-version", "cool.operators.corp/v2", dir)
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "error status-source-version-not-served: in the lines generate would write: CRD cooloperators.cool.operators.corp has no version v2")
	assert.Contains(t, stderr, "nothing written (--force writes it anyway)")
	after, _ := os.ReadFile(csv)
	assert.Equal(t, string(before), string(after))

	code, _, _ = run(t, "generate", "-w", "--force", "--api-version", "cool.operators.corp/v2", dir)
	assert.Equal(t, 0, code)
	after, _ = os.ReadFile(csv)
	assert.Contains(t, string(after), `"apiVersion":"cool.operators.corp/v2"`)

	code, stdout, _ = run(t, "generate", "--conditions", "Upgradable", dir)
	assert.Equal(t, 1, code, "a misspelt condition is invalid")
	assert.Empty(t, stdout)
}

func TestGenerateBadInput(t *testing.T) {
	readOnly := copyTree(t, "testdata/bundles/rules/status-source-missing/fail")
	roCSV := filepath.Join(readOnly, "manifests/cool-operator.clusterserviceversion.yaml")
	require.NoError(t, os.Chmod(roCSV, 0o444))
	broken := filepath.Join(t.TempDir(), "broken.clusterserviceversion.yaml")
	require.NoError(t, os.WriteFile(broken, []byte("apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: x\n   bad: indent\n"), 0o644))
	dirCSV := filepath.Join(t.TempDir(), "x.clusterserviceversion.yaml")
	require.NoError(t, os.Mkdir(dirCSV, 0o755))
	notCSV := filepath.Join(t.TempDir(), "configmap.yaml")
	require.NoError(t, os.WriteFile(notCSV, []byte("apiVersion: v1\nkind: ConfigMap\n"), 0o644))

	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{name: "an unparsable CSV", args: []string{"generate", broken}, stderr: broken + ":5:7: invalid YAML: mapping values are not allowed"},
		{name: "a CSV that is a directory", args: []string{"generate", dirCSV}, stderr: dirCSV + ": an empty directory"},
		{name: "a file that is no CSV", args: []string{"generate", notCSV}, stderr: notCSV + ": no ClusterServiceVersion in the file"},
		{name: "a missing path", args: []string{"generate", "testdata/nope"}, stderr: "reading testdata/nope: no such file or directory"},
		{name: "a read-only file with -w", args: []string{"generate", "-w", readOnly}, stderr: roCSV + ": the file is read-only"},
		{name: "-w with --check", args: []string{"generate", "-w", "--check", readOnly}, stderr: "--check and -w do not go together"},
		{name: "-o patch with -d", args: []string{"generate", "-o", "patch", "-d", readOnly}, stderr: "-o patch prints a patch"},
		{name: "both request places", args: []string{"generate", "--handshake", "RequestAck", "--request-spec-path", ".spec.a", "--request-annotation", "a/b", readOnly}, stderr: "do not go together"},
		{name: "a request without RequestAck", args: []string{"generate", "--handshake", "None", "--request-spec-path", ".spec.a", readOnly}, stderr: "need --handshake RequestAck, not None"},
		{name: "RequestAck without a request", args: []string{"generate", "--handshake", "RequestAck", readOnly}, stderr: "needs --request-spec-path or --request-annotation"},
		{name: "a bad --handshake", args: []string{"generate", "--handshake", "Lock", readOnly}, stderr: `"Lock" is not one of None, OperatorCondition, RequestAck`},
		{name: "a bad --when-absent", args: []string{"generate", "--when-absent", "block", readOnly}, stderr: `"block" is not one of Allow, Block`},
		{name: "two paths to stdout", args: []string{"generate", readOnly, readOnly}, stderr: "several paths need -w, -d or --check"},
		{name: "--bridge without an image", args: []string{"generate", "--bridge", "", readOnly}, stderr: "--bridge needs the image"},
		{name: "--bridge-deployment alone", args: []string{"generate", "--bridge-deployment", "x", readOnly}, stderr: "--bridge-deployment goes with --bridge IMAGE"},
		{name: "--bridge into a deployment the CSV lacks", args: []string{"generate", "--bridge", "img:1", "--bridge-deployment", "nope", readOnly}, stderr: `the install strategy has no deployment "nope" (it has "cool-operator")`},
		{name: "--bridge on a base CSV", args: []string{"generate", "--bridge", "img:1", "--name", "cool-operator", "--crd", "testdata/operator-sdk/config/crd/bases",
			"testdata/operator-sdk/config/manifests/bases/cool-operator.clusterserviceversion.yaml"}, stderr: "the CSV has no deployments in its install strategy (an operator-sdk base CSV?)"},
		{name: "a --crd file without CRDs", args: []string{"generate", "--crd", notCSV, readOnly}, stderr: "--crd " + notCSV + " holds no CustomResourceDefinition"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tt.args...)
			assert.Equal(t, 2, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			assert.Contains(t, stderr, tt.stderr)
			assert.Empty(t, stdout)
		})
	}
	data, _ := os.ReadFile(roCSV)
	assert.NotContains(t, string(data), v1alpha1.AnnotationKey, "the read-only file is untouched")
}

func TestGenerateAmbiguousListsCandidates(t *testing.T) {
	dir := t.TempDir()
	csv := `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: op.v1
  annotations:
    alm-examples: '[{"apiVersion":"a.io/v1","kind":"A","metadata":{"name":"a1"}},{"apiVersion":"b.io/v1","kind":"B","metadata":{"name":"b1"}}]'
spec:
  customresourcedefinitions:
    owned:
    - {name: as.a.io, version: v1, kind: A}
    - {name: bs.b.io, version: v1, kind: B}
`
	p := filepath.Join(dir, "op.clusterserviceversion.yaml")
	require.NoError(t, os.WriteFile(p, []byte(csv), 0o644))
	code, _, stderr := run(t, "generate", p)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "the CSV owns 2 kinds and no initialization resource names one of them; pass --kind (and --name); candidates:")
	assert.Contains(t, stderr, "--kind A --api-version a.io/v1 --name a1")
	assert.Contains(t, stderr, "--kind B --api-version b.io/v1 --name b1")
	// Issue 27, item 9: b1 is only alm-examples' sample, so --kind alone
	// is not enough: the sample is offered as --name, which accepts it.
	code, stdout, stderr := run(t, "generate", "--kind", "B", p)
	assert.Equal(t, 2, code, stderr)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "--name b1 (alm-examples: b.io/v1 B)")
	code, stdout, stderr = run(t, "generate", "--kind", "B", "--name", "b1", p)
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, `{"apiVersion":"b.io/v1","kind":"B","name":"b1"}`)
}

// TestGenerateBridgeRulesByName: where the operator's own rules do not
// cover the status source, generate adds the bridge's rule by name: in
// clusterPermissions for a pinned namespace, and never a CSV rule in
// freshness mode; validate accepts the result with no bridge finding.
func TestGenerateBridgeRulesByName(t *testing.T) {
	dir := copyTree(t, "testdata/bundles/good")
	code, _, stderr := run(t, "generate", "-w", "--bridge", "img:1", "--namespace", "elsewhere", dir)
	require.Equal(t, 0, code, stderr)
	written, err := os.ReadFile(filepath.Join(dir, "manifests", "cool-operator.clusterserviceversion.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(written), "      clusterPermissions:\n      - serviceAccountName: cool-operator\n        rules:\n        - apiGroups:\n          - cool.operators.corp\n          resources:\n          - cooloperators\n          resourceNames:\n          - cool-operator\n          verbs:\n          - get\n          - watch\n")
	assert.NotContains(t, string(written), "clusterserviceversions")
	_, b := validateJSON(t, dir)
	for _, f := range b.Findings {
		assert.NotContains(t, f.Rule, "bridge-", f.Message)
		if f.Severity == result.Error {
			assert.True(t, validate.VerdictRule(f.Rule), "%s: %s", f.Rule, f.Message)
		}
	}
}

// TestGenerateBridgeMovesAnOlderContainerToTheDownwardAPI: a container an
// older generate wrote reads the running CSV, which its account may not
// (bridge-rbac-missing); a second generate gives it the status source
// from the downward API instead of a CSV rule, and validate is satisfied.
func TestGenerateBridgeMovesAnOlderContainerToTheDownwardAPI(t *testing.T) {
	dir := copyTree(t, "testdata/bundles/rules/bridge-rbac-missing/fail")
	code, stdout, _ := run(t, "validate", dir)
	require.Equal(t, 1, code)
	require.Contains(t, stdout, "error bridge-rbac-missing")
	code, _, stderr := run(t, "generate", "-w", "--bridge", "quay.io/statuscheck/statuscheck:v0.1.0", dir)
	require.Equal(t, 0, code, stderr)
	written, err := os.ReadFile(filepath.Join(dir, "manifests", "cool-operator.clusterserviceversion.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(written), "                args: [bridge]\n                env:\n                - name: STATUSCHECK_STATUS_SOURCE\n")
	assert.NotContains(t, string(written), "clusterserviceversions")
	assertCleanButTheVerdict(t, dir)
}

// TestGenerateBridgeMetricsSecure: --bridge-metrics-secure serves the
// metrics off localhost on a named port, behind the apiserver's
// authentication and authorization, and adds the reviews that needs.
func TestGenerateBridgeMetricsSecure(t *testing.T) {
	dir := copyTree(t, "testdata/bundles/good")
	code, _, stderr := run(t, "generate", "-w", "--bridge", "img:1", "--bridge-metrics-secure", dir)
	require.Equal(t, 0, code, stderr)
	written, err := os.ReadFile(filepath.Join(dir, "manifests", "cool-operator.clusterserviceversion.yaml"))
	require.NoError(t, err)
	for _, want := range []string{"- --metrics-secure\n", "- --metrics-bind-address=:8385\n", "                - name: metrics\n                  containerPort: 8385\n",
		"          - tokenreviews\n          verbs:\n          - create\n", "          - subjectaccessreviews\n          verbs:\n          - create\n"} {
		assert.Contains(t, string(written), want)
	}
	assertCleanButTheVerdict(t, dir)
	code, _, stderr = run(t, "generate", "--bridge-metrics-secure", dir)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--bridge-metrics-secure goes with --bridge IMAGE")
}

// TestDefect4GenerateRefusesTheOperatorConditionHandshake: with the
// OperatorCondition handshake the operator writes the OperatorCondition
// itself, so generate --bridge refuses (exit 2, nothing written), whether
// the handshake comes from the flags or from the CSV's annotation.
func TestDefect4GenerateRefusesTheOperatorConditionHandshake(t *testing.T) {
	tests := []struct {
		name   string
		bundle string
		args   []string
	}{
		{name: "from the flags", bundle: "testdata/bundles/good", args: []string{"--handshake", "OperatorCondition"}},
		{name: "from the annotation", bundle: "testdata/bundles/handshake/operatorcondition"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyTree(t, tt.bundle)
			csvFile := filepath.Join(dir, "manifests", "cool-operator.clusterserviceversion.yaml")
			orig, err := os.ReadFile(csvFile)
			require.NoError(t, err)
			code, stdout, stderr := run(t, append(append([]string{"generate", "-w", "--bridge", "img:1"}, tt.args...), dir)...)
			assert.Equal(t, 2, code, stderr)
			assert.Empty(t, stdout)
			assert.Contains(t, stderr, "the bridge and the operator would both write it")
			assert.Contains(t, stderr, "use handshake None or RequestAck with the bridge, or drop the bridge")
			now, err := os.ReadFile(csvFile)
			require.NoError(t, err)
			assert.Equal(t, string(orig), string(now), "nothing written")
		})
	}
}

// TestGenerateBridge: -w adds the sidecar, its RBAC and the declaration,
// validate accepts the result (and rejects it with the container taken
// out), --check passes on it and fails on another image, -o patch does
// what -w does, and RequestAck adds the list, watch and patch it needs.
func TestGenerateBridge(t *testing.T) {
	const image = "quay.io/statuscheck/statuscheck:v0.1.0"
	dir := copyTree(t, "testdata/bundles/good")
	csvFile := filepath.Join(dir, "manifests", "cool-operator.clusterserviceversion.yaml")
	orig, err := os.ReadFile(csvFile)
	require.NoError(t, err)

	code, patch, stderr := run(t, "generate", "-o", "patch", "--bridge", image, dir)
	require.Equal(t, 0, code, stderr)
	code, stdout, stderr := run(t, "generate", "-w", "--bridge", image, dir)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "and the bridge (cool-operator/statuscheck-bridge)")
	written, err := os.ReadFile(csvFile)
	require.NoError(t, err)
	for _, want := range []string{"statuscheck.operatorframework.io/bridge: 'cool-operator/statuscheck-bridge'", "- name: statuscheck-bridge\n                image: " + image, "fieldPath: metadata.namespace",
		"                - name: STATUSCHECK_STATUS_SOURCE\n                  valueFrom:\n                    fieldRef:\n                      fieldPath: metadata.annotations['operatorframework.io/status-source']\n",
		"- --metrics-bind-address=127.0.0.1:8385\n", "                - name: health\n                  containerPort: 8384\n                  protocol: TCP\n"} {
		assert.Contains(t, string(written), want)
	}
	assert.NotContains(t, string(written), "clusterserviceversions", "freshness mode: the status source comes from the downward API, no CSV is read")
	assert.NotContains(t, string(written), "readinessProbe")

	assertPatchMakes(t, patch, orig, written)

	assertCleanButTheVerdict(t, dir)
	code, stdout, _ = run(t, "generate", "--check", "--bridge", image, dir)
	assert.Equal(t, 0, code, stdout)
	assert.Empty(t, stdout)
	code, stdout, _ = run(t, "generate", "--check", "--bridge", "quay.io/statuscheck/statuscheck:v0.2.0", dir)
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, "the status-source annotation or the bridge is not up to date; run: statuscheck generate -w --bridge quay.io/statuscheck/statuscheck:v0.2.0")

	code, _, stderr = run(t, "generate", "-w", "--bridge", image, "--handshake", "RequestAck", "--request-spec-path", ".spec.upgradeRequest", dir)
	require.Equal(t, 0, code, stderr)
	code, stdout, _ = run(t, "validate", "--fail-on", "info", dir)
	assert.Equal(t, 0, code, stdout)
	acked, err := os.ReadFile(csvFile)
	require.NoError(t, err)
	assert.Contains(t, string(acked), "          - clusterserviceversions\n          verbs:\n          - list\n          - watch\n", "RequestAck lists and watches CSVs")

	// The container taken out again: validate says the bridge lacks it.
	broken := strings.Replace(string(acked), "              - name: statuscheck-bridge\n", "              - name: other\n", 1)
	require.NoError(t, os.WriteFile(csvFile, []byte(broken), 0o644))
	code, stdout, _ = run(t, "validate", dir)
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, `error bridge-container-missing: deployment "cool-operator" has no container "statuscheck-bridge"`)
}
