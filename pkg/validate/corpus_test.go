package validate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/result"
)

func goldenFile(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(testutil.RepoRoot(), "testdata", "golden", name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./pkg/validate -update")
	assert.Equal(t, string(want), got, "golden %s differs; run go test ./pkg/validate -update and review the diff", name)
}

func textOf(rep *result.Report) string {
	var b bytes.Buffer
	for _, bundle := range rep.Bundles {
		for _, f := range bundle.Findings {
			fmt.Fprintf(&b, "%s:%d:%d: %s %s: %s\n", f.File, f.Line, f.Column, f.Severity, f.Rule, f.Message)
		}
		for _, e := range bundle.Errors {
			fmt.Fprintf(&b, "%s: ERROR %s\n", bundle.Path, e)
		}
	}
	return b.String()
}

// TestCorpus validates every real bundle: none may fail to be checked (exit
// 2), and the findings are pinned in a golden file, each one read by hand
// when it was first recorded.
func TestCorpus(t *testing.T) {
	dirs := testutil.CorpusBundles(t)
	t.Chdir(testutil.CorpusDir(t))
	var names []string
	for _, d := range dirs {
		names = append(names, filepath.Base(d))
	}
	rep := Paths(names, Options{}, bundle.Options{}, nil)
	require.Len(t, rep.Bundles, len(names))
	for _, b := range rep.Bundles {
		assert.Empty(t, b.Errors, b.Path)
		assert.NotEqual(t, "", b.Name)
	}
	assert.NotEqual(t, result.ExitFailure, rep.ExitCode(result.Error))
	goldenFile(t, "corpus-validate.txt", textOf(rep))
}

// TestCorpusWithStatusSource asks what validate would say if each real
// operator adopted the contract the way generate would write it: the status
// source is the initialization resource, where that is a CR the operator
// owns. This runs every status-source rule against real CRDs and RBAC.
// eachCorpusBundle loads every real bundle, from the corpus directory (so
// findings name it relatively), and calls fn with its CSV.
func eachCorpusBundle(t *testing.T, fn func(name string, b *bundle.Bundle, csv *bundle.CSV)) {
	t.Helper()
	dirs := testutil.CorpusBundles(t)
	t.Chdir(testutil.CorpusDir(t))
	for _, d := range dirs {
		name := filepath.Base(d)
		b, err := bundle.Load(name, bundle.Options{})
		require.NoError(t, err)
		csv := b.CSV()
		require.NotNil(t, csv, name)
		fn(name, b, csv)
	}
}

func TestCorpusWithStatusSource(t *testing.T) {
	var out bytes.Buffer
	adopted := 0
	eachCorpusBundle(t, func(name string, b *bundle.Bundle, csv *bundle.CSV) {
		raw, ok := csv.Obj.Annotations[v1alpha1.InitializationResourceKey]
		if !ok {
			return
		}
		ir, err := contract.ParseObjectRef(raw)
		require.NoError(t, err, name)
		if !bundle.Owns(csv.Obj, ir.Group, ir.Kind) {
			fmt.Fprintf(&out, "# %s: initialization resource %s.%s is not an owned CRD; not adopted\n", name, ir.Kind, orCore(ir.Group))
			return
		}
		// generate leaves the namespace out (the operator's namespace).
		src := &v1alpha1.StatusSource{APIVersion: ir.Group + "/" + ir.Version, Kind: ir.Kind, Name: ir.Name}
		csv.Obj.Annotations[v1alpha1.AnnotationKey] = src.Marshal()
		adopted++
		res := Check(b, Options{})
		fmt.Fprintf(&out, "# %s: %s\n", name, src.Marshal())
		rep := &result.Report{Bundles: []result.Bundle{res}}
		out.WriteString(textOf(rep))
	})
	assert.GreaterOrEqual(t, adopted, 8, "the corpus has at least 8 bundles whose initialization resource is an owned CR")
	goldenFile(t, "corpus-with-status-source.txt", out.String())
}

// TestCorpusEveryOwnedKind adopts, in turn, every kind each real bundle
// owns (the first version it lists) as the status source, and pins which
// of the rules about the conditions and their observedGeneration fire,
// with their severities: what validate would tell each operator that
// chose that kind.
func TestCorpusEveryOwnedKind(t *testing.T) {
	var out bytes.Buffer
	kinds := 0
	eachCorpusBundle(t, func(name string, b *bundle.Bundle, csv *bundle.CSV) {
		for _, k := range bundle.OwnedKinds(csv.Obj) {
			src := &v1alpha1.StatusSource{APIVersion: k.Group + "/" + k.Versions[0], Kind: k.Kind, Name: "example"}
			csv.Obj.Annotations[v1alpha1.AnnotationKey] = src.Marshal()
			res := Check(b, Options{})
			kinds++
			var fired []string
			seen := map[string]bool{}
			for _, f := range res.Findings {
				if !strings.HasPrefix(f.Rule, "conditions-") && f.Rule != "status-subresource-disabled" && f.Rule != "status-write-rejected" {
					continue
				}
				tag := fmt.Sprintf("%s(%s)", f.Rule, f.Severity)
				if !seen[tag] {
					seen[tag] = true
					fired = append(fired, tag)
				}
			}
			sort.Strings(fired)
			if len(fired) == 0 {
				fired = []string{"clean"}
			}
			fmt.Fprintf(&out, "%s %s.%s/%s: %s\n", name, k.Kind, k.Group, k.Versions[0], strings.Join(fired, " "))
		}
	})
	assert.Greater(t, kinds, 50, "the corpus owns many kinds")
	goldenFile(t, "corpus-every-owned-kind.txt", out.String())
}
