package generate

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/manifest"
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
		if len(data) > 1<<16 {
			return
		}
		// A hang is a bug too: report the input rather than stall.
		wd := time.AfterFunc(30*time.Second, func() { panic(fmt.Sprintf("WATCHDOG: no answer in 30s for %q", data)) })
		defer wd.Stop()
		if _, err := manifest.Parse("in.yaml", data, manifest.DefaultLimits); err != nil {
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
