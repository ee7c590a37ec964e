package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/explore"
	"github.com/statuscheck/statuscheck/pkg/source"
)

// copyBundle copies a corpus bundle into a writable temporary directory.
func copyBundle(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	require.NoError(t, err)
	return dst
}

// TestCorpusAdoption plays issue 11's items 1, 2, 3 and 6 on real bundles:
// adopt the contract with generate, validate, and replay an audit log and a
// file that is not a trace.
func TestCorpusAdoption(t *testing.T) {
	corpus := testutil.CorpusDir(t)
	tests := []struct {
		bundle  string
		genArgs []string
		// unverifiable: the CRD keeps any status (a v1beta1 CRD).
		unverifiable bool
	}{
		{bundle: "kubevirt-hyperconverged-1.1.0", genArgs: []string{"--kind", "HyperConverged", "--name", "kubevirt-hyperconverged"}, unverifiable: true},
		{bundle: "kubevirt-hyperconverged-1.20.0"},
		{bundle: "korrel8r-0.1.8"},
	}
	for _, tt := range tests {
		t.Run(tt.bundle, func(t *testing.T) {
			dir := copyBundle(t, filepath.Join(corpus, tt.bundle))
			code, _, stderr := run(t, append(append([]string{"generate", "-w"}, tt.genArgs...), dir)...)
			require.Equal(t, 0, code, stderr)

			// Item 6: no namespace is pinned.
			b, err := bundle.Load(dir, bundle.Options{})
			require.NoError(t, err)
			ann := b.CSV().Obj.Annotations[v1alpha1.AnnotationKey]
			require.NotEmpty(t, ann)
			assert.NotContains(t, ann, `"namespace"`, "generate pins no namespace")

			// Item 2 (and 6): what validate says of the adopted bundle.
			_, js, _ := run(t, "validate", "-o", "json", dir)
			var rep struct {
				Bundles []struct {
					Findings []struct {
						Rule, Severity, Message string
					} `json:"findings"`
				} `json:"bundles"`
			}
			require.NoError(t, json.Unmarshal([]byte(js), &rep))
			for _, f := range rep.Bundles[0].Findings {
				assert.NotEqual(t, "status-source-namespace-pinned", f.Rule)
				if f.Rule == "conditions-schema-missing" {
					assert.True(t, tt.unverifiable, "conditions-schema-missing on %s", tt.bundle)
					assert.Equal(t, "warning", f.Severity, "a v1beta1 CRD keeps unknown fields: unverifiable, not missing")
					assert.NotRegexp(t, `so .*, so `, f.Message, "issue 11, item 13: one 'so' per sentence")
				}
			}

			// Item 1: an audit log's first write is judged.
			sctx, err := source.FromBundle(dir)
			require.NoError(t, err)
			_, ex, _ := run(t, "simulate", "--explore", "--bundle", dir, "--depth", "2", "-o", "json")
			var exp struct {
				Results []struct {
					SpecChange explore.SpecChange `json:"specChange"`
				} `json:"results"`
			}
			require.NoError(t, json.Unmarshal([]byte(ex), &exp), ex)
			change := exp.Results[0].SpecChange
			require.NotEmpty(t, change.Path)
			logFile := filepath.Join(t.TempDir(), "audit.jsonl")
			require.NoError(t, os.WriteFile(logFile, []byte(auditLog(t, sctx, change)), 0o644))
			code, js, stderr = run(t, "simulate", "--bundle", dir, "--policy", "naive", "-o", "json", logFile)
			require.Equal(t, 1, code, stderr)
			var sum struct {
				Steps  int            `json:"steps"`
				Counts map[string]int `json:"counts"`
			}
			require.NoError(t, json.Unmarshal([]byte(js), &sum))
			assert.Equal(t, 3, sum.Steps, "the user's update and two status writes")
			assert.Positive(t, sum.Counts["unsafe-approval"], "naive approves the outdated True after the user's update")
			assert.Zero(t, sum.Counts["write-rejected"], "the recorded writes are ones the CRD takes")

			// Item 3: the CSV is not a trace of the status source.
			code, _, stderr = run(t, "simulate", "--bundle", dir, b.CSV().Doc.File)
			assert.Equal(t, 2, code)
			assert.Contains(t, stderr, "no recording of "+sctx.Source.Kind+" "+sctx.Source.Name+" in the input; it has ClusterServiceVersion")
		})
	}
}

// auditLog is an audit log of the status source: the operator's get, a
// user's update of the spec field the explorer found, then the operator's
// status writes for the new generation, False and then True.
func auditLog(t *testing.T, sctx *source.Context, change explore.SpecChange) string {
	src := sctx.Source
	gv := src.GroupVersion()
	obj := func(gen int64, v interface{}, status string, og int64) map[string]interface{} {
		spec := map[string]interface{}{}
		if ex, ok := sctx.Example["spec"].(map[string]interface{}); ok {
			data, _ := json.Marshal(ex)
			_ = json.Unmarshal(data, &spec)
		}
		m := spec
		for _, f := range change.Path[1 : len(change.Path)-1] {
			next, _ := m[f].(map[string]interface{})
			if next == nil {
				next = map[string]interface{}{}
				m[f] = next
			}
			m = next
		}
		m[change.Path[len(change.Path)-1]] = v
		return map[string]interface{}{"apiVersion": src.APIVersion, "kind": src.Kind,
			"metadata": map[string]interface{}{"name": src.Name, "namespace": "openshift-cnv", "generation": gen},
			"spec":     spec,
			"status": map[string]interface{}{"conditions": []interface{}{map[string]interface{}{"type": "Upgradeable", "status": status,
				"reason": "Reconciled", "message": "", "lastTransitionTime": "2024-01-01T00:00:00Z", "observedGeneration": og}}}}
	}
	event := func(verb, sub string, o map[string]interface{}) string {
		ev := map[string]interface{}{"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse", "stage": "ResponseComplete", "verb": verb,
			"user":           map[string]interface{}{"username": "someone"},
			"objectRef":      map[string]interface{}{"resource": sctx.Plural, "namespace": "openshift-cnv", "name": src.Name, "apiGroup": gv.Group, "apiVersion": gv.Version, "subresource": sub},
			"responseStatus": map[string]interface{}{"code": 200}, "responseObject": o}
		data, err := json.Marshal(ev)
		require.NoError(t, err)
		return string(data) + "\n"
	}
	var b strings.Builder
	b.WriteString(event("get", "", obj(1, change.A, "True", 1)))
	b.WriteString(event("update", "", obj(2, change.B, "True", 1)))
	b.WriteString(event("patch", "status", obj(2, change.B, "False", 2)))
	b.WriteString(event("patch", "status", obj(2, change.B, "True", 2)))
	return b.String()
}
