package generate

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/bridge/sidecar"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/crd"
	"github.com/statuscheck/statuscheck/pkg/manifest"
	"github.com/statuscheck/statuscheck/pkg/result"
	"github.com/statuscheck/statuscheck/pkg/source"
)

// TestCorpusRoundTrip adds the annotation to every real CSV: the parsed new
// CSV equals the parsed old one plus the annotation, the textual diff
// touches only the annotation's lines, and a second run is byte-identical.
func TestCorpusRoundTrip(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testutil.CorpusDir(t), "*", "manifests", "*clusterserviceversion*"))
	require.NoError(t, err)
	require.Len(t, files, 27)
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(f))), func(t *testing.T) {
			old, err := os.ReadFile(f)
			require.NoError(t, err)
			_, oldCSV, err := parseCSV(f, old)
			require.NoError(t, err)
			kind, group, version := "Widget", "example.com", "v1"
			if owned := oldCSV.Spec.CustomResourceDefinitions.Owned; len(owned) > 0 {
				kind, version = owned[0].Kind, owned[0].Version
				_, group, _ = strings.Cut(owned[0].Name, ".")
			}
			value := (&v1alpha1.StatusSource{APIVersion: group + "/" + version, Kind: kind, Name: "the-singleton"}).Marshal()

			edit, err := SetAnnotation(old, v1alpha1.AnnotationKey, value)
			require.NoError(t, err)
			new := edit.Apply(old)
			require.NoError(t, Verify(f, old, new, v1alpha1.AnnotationKey, value))

			_, newCSV, err := parseCSV(f, new)
			require.NoError(t, err)
			want := oldCSV.DeepCopy()
			if want.Annotations == nil {
				want.Annotations = map[string]string{}
			}
			want.Annotations[v1alpha1.AnnotationKey] = value
			assert.Equal(t, want, newCSV, "the typed CSV changes only by the annotation")

			assertOnlyAnnotationLinesFor(t, old, new, value)

			again, err := SetAnnotation(new, v1alpha1.AnnotationKey, value)
			require.NoError(t, err)
			assert.Equal(t, string(new), string(again.Apply(new)), "a second run is byte-identical")
		})
	}
}

func assertOnlyAnnotationLinesFor(t *testing.T, old, new []byte, value string) {
	t.Helper()
	oldLines := strings.SplitAfter(string(old), "\n")
	newLines := strings.SplitAfter(string(new), "\n")
	require.Equal(t, len(oldLines)+1, len(newLines), "exactly one line is added")
	added := -1
	for i, j := 0, 0; j < len(newLines); j++ {
		if i < len(oldLines) && oldLines[i] == newLines[j] {
			i++
			continue
		}
		require.Equal(t, -1, added, "more than one line differs")
		added = j
	}
	require.NotEqual(t, -1, added)
	assert.Contains(t, newLines[added], v1alpha1.AnnotationKey+": ")
	assert.Contains(t, newLines[added], value)
}

// editorInput says whether a fuzz input is one the editors are asked to
// edit (small enough, and YAML Kubernetes reads), and arms a watchdog for
// the test: a hang is a bug too, so the input is reported rather than
// stalling.
func editorInput(t *testing.T, data []byte) bool {
	if len(data) > 1<<16 {
		return false
	}
	wd := time.AfterFunc(30*time.Second, func() { panic(fmt.Sprintf("WATCHDOG: no answer in 30s for %q", data)) })
	t.Cleanup(func() { wd.Stop() })
	_, err := manifest.Parse("in.yaml", data, manifest.DefaultLimits)
	return err == nil
}

// FuzzSetAnnotation edits arbitrary YAML: whenever the editor accepts the
// input, the result must differ from it in the annotation only, keep every
// byte outside the edit, and a second edit must change nothing.
func FuzzSetAnnotation(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(testutil.RepoRoot(), "testdata", "generate", "*", "in.yaml"))
	for _, s := range seeds {
		data, _ := os.ReadFile(s)
		f.Add(data, coolValue)
	}
	f.Add([]byte("kind: ClusterServiceVersion\nmetadata:\n  annotations:\n    x: |\n      a\n\n    y: b # c\n"), "v'\"\\\n")
	f.Add([]byte("kind: ClusterServiceVersion\nmetadata: &m\n  annotations: {a: [1, {b: c}], d: \"e, }\"}\n"), "{}")
	f.Fuzz(func(t *testing.T, data []byte, value string) {
		if !editorInput(t, data) {
			return
		}
		edit, err := SetAnnotation(data, v1alpha1.AnnotationKey, value)
		if err != nil {
			return
		}
		if edit.Start < 0 || edit.End < edit.Start || edit.End > len(data) {
			t.Fatalf("edit out of range: %+v", edit)
		}
		out := edit.Apply(data)
		if err := Verify("in.yaml", data, out, v1alpha1.AnnotationKey, value); err != nil {
			// The editor may meet YAML it cannot edit safely; it must then
			// be Verify that stops it, never a changed file. Record it.
			t.Fatalf("edit of %q with %q: %v\nresult: %q", data, value, err, out)
		}
		again, err := SetAnnotation(out, v1alpha1.AnnotationKey, value)
		if err != nil {
			t.Fatalf("second edit failed: %v\non %q", err, out)
		}
		if err := Verify("in.yaml", out, again.Apply(out), v1alpha1.AnnotationKey, value); err != nil {
			t.Fatalf("second edit: %v", err)
		}
	})
}

var _ = operatorsv1alpha1.ClusterServiceVersion{}

// TestCorpusBridgeRoundTrip adds the status source and the bridge to every
// real bundle with Run, as `generate --bridge` does: the edit is proven by
// evanphx/json-patch to be the ops and nothing else (ApplyOps), every line
// of the old file is still there in order (the `[]` an empty rules or
// permissions list becomes is the one line that may go), the bridge's
// container and every rule it needs are in the typed CSV, validate finds
// exactly what it finds without the bridge, and a second run is
// byte-identical.
func TestCorpusBridgeRoundTrip(t *testing.T) {
	roots, err := filepath.Glob(filepath.Join(testutil.CorpusDir(t), "*"))
	require.NoError(t, err)
	n := 0
	for _, root := range roots {
		if _, err := os.Stat(filepath.Join(root, "manifests")); err != nil {
			continue
		}
		n++
		t.Run(filepath.Base(root), func(t *testing.T) {
			files, _ := filepath.Glob(filepath.Join(root, "manifests", "*clusterserviceversion*"))
			require.Len(t, files, 1)
			old, err := os.ReadFile(files[0])
			require.NoError(t, err)
			_, oldCSV, err := parseCSV(files[0], old)
			require.NoError(t, err)
			owned := oldCSV.Spec.CustomResourceDefinitions.Owned
			require.NotEmpty(t, owned)
			_, group, _ := strings.Cut(owned[0].Name, ".")
			apiVersion, kind, name := group+"/"+owned[0].Version, owned[0].Kind, "the-singleton"
			values := Values{APIVersion: &apiVersion, Kind: &kind, Name: &name}
			const image = "quay.io/statuscheck/statuscheck:v0.1.0"
			bridge := &Bridge{Image: image}
			if deps := oldCSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs; len(deps) > 1 {
				bridge.Deployment = deps[len(deps)-1].Name
			}

			plain, err := Run(root, Options{Values: values})
			require.NoError(t, err)
			res, err := Run(root, Options{Values: values, Bridge: bridge})
			require.NoError(t, err)
			require.NotNil(t, res.Bridge)
			assert.Equal(t, bridge.Deployment == "", res.Bridge.Deployment == oldCSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Name)

			assertOldLinesKept(t, old, res.New)

			_, newCSV, err := parseCSV(files[0], res.New)
			require.NoError(t, err)
			install := newCSV.Spec.InstallStrategy.StrategySpec
			dep, ctr := sidecar.Find(install, *res.Bridge)
			require.GreaterOrEqual(t, ctr, 0, "the container is in the deployment")
			assert.Equal(t, image, install.DeploymentSpecs[dep].Spec.Template.Spec.Containers[ctr].Image)
			assert.Equal(t, res.Bridge.String(), newCSV.Annotations[sidecar.AnnotationKey])
			c := findCRD(mustCRDs(t, root), group, kind)
			require.NotNil(t, c)
			b := sidecar.Bridge{Source: res.Derivation.Source, CSV: newCSV.Name, Plural: c.Plural(), Namespaced: c.Namespaced(),
				Container: install.DeploymentSpecs[dep].Spec.Template.Spec.Containers[ctr], InstallModes: newCSV.Spec.InstallModes}
			sa := bundle.ServiceAccount(install.DeploymentSpecs[dep])
			assert.Empty(t, sidecar.Missing(install, sa, b.Needs()), "every rule the bridge needs is granted")
			assert.Empty(t, b.Broad(install, sa), "no rule is broader than the bridge needs")

			// validate says the same with the bridge as without it, but of
			// a condition whose observedGeneration only status keeps: the
			// bridge reads status.observedGeneration (the strict policy),
			// so that is info with it (issue 27's review).
			statusOnly := func(fs []result.Finding) []result.Finding {
				return slices.DeleteFunc(slices.Clone(fs), func(f result.Finding) bool {
					return f.Rule == "conditions-observedgeneration-missing" && strings.Contains(f.Message, "keeps status.observedGeneration")
				})
			}
			assert.Equal(t, findingSet(statusOnly(plain.Findings)), findingSet(statusOnly(res.Findings)), "validate says the same with the bridge as without it")
			for _, f := range res.Findings {
				if f.Rule == "conditions-observedgeneration-missing" && strings.Contains(f.Message, "keeps status.observedGeneration") {
					assert.Equal(t, result.Info, f.Severity, f.Message)
				}
			}
			for _, f := range res.Findings {
				assert.NotContains(t, f.Rule, "bridge-", "%s", f)
			}

			// A second run on the result plans nothing.
			dir := t.TempDir()
			copyBundle(t, root, dir)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "manifests", filepath.Base(files[0])), res.New, 0o644))
			again, err := Run(dir, Options{Values: values, Bridge: bridge})
			require.NoError(t, err)
			assert.Empty(t, again.BridgeOps)
			assert.Equal(t, string(res.New), string(again.New), "a second run is byte-identical")
		})
	}
	require.Equal(t, 27, n)
}

// assertOldLinesKept checks that new is old with lines inserted: every old
// line is in new, in order, but for an emptied flow list ("rules: []"),
// whose line loses its "[]".
func assertOldLinesKept(t *testing.T, old, new []byte) {
	t.Helper()
	oldLines := strings.SplitAfter(string(old), "\n")
	newLines := strings.SplitAfter(string(new), "\n")
	j := 0
	for _, l := range oldLines {
		for j < len(newLines) && newLines[j] != l && !(strings.HasSuffix(strings.TrimRight(l, "\r\n"), ": []") && strings.TrimRight(newLines[j], "\r\n") == strings.TrimSuffix(strings.TrimRight(l, "\r\n"), " []")) {
			j++
		}
		if !assert.Less(t, j, len(newLines), "old line %q is gone", l) {
			return
		}
		j++
	}
}

func findingSet(fs []result.Finding) []string {
	var out []string
	for _, f := range fs {
		// A finding may point at a line the bridge added (a
		// clusterPermissions key that was not there): it says so.
		out = append(out, f.Rule+": "+strings.TrimPrefix(f.Message, ProposedPrefix))
	}
	sort.Strings(out)
	return out
}

func mustCRDs(t *testing.T, root string) []*crd.CRD {
	t.Helper()
	crds, err := source.LoadCRDs(filepath.Join(root, "manifests"))
	require.NoError(t, err)
	return crds
}

func copyBundle(t *testing.T, from, to string) {
	t.Helper()
	require.NoError(t, os.CopyFS(to, os.DirFS(from)))
}

// FuzzAddAt edits arbitrary YAML with the bridge's kinds of op: whenever
// the editor accepts the input, the text must be the input with the op
// applied as evanphx/json-patch applies it, and nothing else.
func FuzzAddAt(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(testutil.RepoRoot(), "testdata", "generate", "*", "in.yaml"))
	for _, s := range seeds {
		data, _ := os.ReadFile(s)
		f.Add(data, "spec/install/spec/permissions/-")
	}
	good, _ := os.ReadFile(filepath.Join(testutil.RepoRoot(), "testdata", "bundles", "good", "manifests", "cool-operator.clusterserviceversion.yaml"))
	f.Add(good, "spec/install/spec/deployments/0/spec/template/spec/containers/-")
	f.Add(good, "spec/install/spec/permissions/0/rules/-")
	f.Add(good, "spec/install/spec/clusterPermissions")
	f.Add([]byte("kind: ClusterServiceVersion\nspec:\n  install:\n    spec:\n      permissions: []\n"), "spec/install/spec/permissions/-")
	f.Add([]byte("{\"kind\": \"ClusterServiceVersion\", \"spec\": {\"install\": {\"spec\": {\"permissions\": [\n  {\"a\": 1}]}}}}"), "spec/install/spec/permissions/-")
	f.Add([]byte("kind: ClusterServiceVersion\nspec: {install: {spec: {rules: [], x: {}}}}\n"), "spec/install/spec/x/y")
	f.Fuzz(func(t *testing.T, data []byte, pointer string) {
		if !editorInput(t, data) {
			return
		}
		value := permission{ServiceAccountName: "sa", Rules: []policyRule{{APIGroups: []string{"a"}, Resources: []string{"b"}, Verbs: []string{"get"}}}}
		op := Op{Path: strings.Split(pointer, "/"), Value: value}
		if strings.HasSuffix(pointer, "image") {
			op.Value = "img:1"
		}
		e, err := AddAt(data, op)
		if err != nil {
			return
		}
		if e.Start < 0 || e.End < e.Start || e.End > len(data) {
			t.Fatalf("edit out of range: %+v", e)
		}
		out := e.Apply(data)
		if err := verifyOps("in.yaml", data, out, []Op{op}); err != nil && !strings.Contains(err.Error(), "the change does not apply") {
			t.Fatalf("edit of %q at %s: %v\nresult: %q", data, op.Pointer(), err, out)
		}
	})
}
