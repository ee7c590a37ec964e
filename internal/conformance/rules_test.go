package conformance

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/jsonobj"
	"github.com/statuscheck/statuscheck/internal/kubetest"
	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/result"
	"github.com/statuscheck/statuscheck/pkg/validate"
)

// serverCase is a status source installed on the real server: the
// fixture's CRD (v1beta1 ones as a pre-1.22 cluster stored them) in a
// namespace of its own.
type serverCase struct {
	t       *testing.T
	src     *v1alpha1.StatusSource
	res     dynamic.ResourceInterface
	version string
	api     string
	sub     bool
	csv     map[string]string
	// loaded is the fixture as statuscheck loaded it.
	loaded *bundle.Bundle
	// gvr is the resource the server serves the CRD's version as.
	gvr schema.GroupVersionResource
	// refused is the server's refusal of the CRD, if it refused it.
	refused error
}

func installFixture(t *testing.T, dir string) (*serverCase, result.Bundle) {
	t.Helper()
	b, err := bundle.Load(dir, bundle.Options{})
	require.NoError(t, err)
	findings := validate.Check(b, validate.Options{})
	src, problems := contract.Parse(b.CSV().Obj.Annotations[v1alpha1.AnnotationKey])
	require.Empty(t, problems)
	gv := src.GroupVersion()
	c := b.FindCRD(gv.Group, src.Kind)
	require.NotNil(t, c)
	srv := kubetest.Get(t)
	sc := &serverCase{t: t, src: src, version: gv.Version, csv: b.CSV().Obj.Annotations, sub: c.Version(gv.Version).StatusSubresource, loaded: b}
	var in *kubetest.InstalledCRD
	if c.V1beta1 != nil {
		in, err = srv.InstallRemovedCRD(t, c.V1beta1)
	} else {
		in, err = srv.InstallCRD(t, c.V1)
	}
	if err != nil {
		sc.refused = err
		return sc, findings
	}
	sc.api, sc.gvr = in.APIVersion(gv.Version), in.GVR(gv.Version)
	sc.res = srv.Dynamic.Resource(sc.gvr).Namespace(kubetest.Namespace("rules"))
	return sc, findings
}

// example is the CR the console creates: the initialization resource,
// else the alm-examples entry of the kind.
func (sc *serverCase) example() map[string]interface{} {
	if raw, ok := sc.csv[v1alpha1.InitializationResourceKey]; ok {
		var o map[string]interface{}
		require.NoError(sc.t, yaml.Unmarshal([]byte(raw), &o))
		return o
	}
	var list []map[string]interface{}
	require.NoError(sc.t, yaml.Unmarshal([]byte(sc.csv["alm-examples"]), &list))
	for _, o := range list {
		if o["kind"] == sc.src.Kind {
			return o
		}
	}
	return map[string]interface{}{"metadata": map[string]interface{}{"name": sc.src.Name}, "spec": map[string]interface{}{}}
}

func (sc *serverCase) create(obj map[string]interface{}) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{Object: jsonobj.MergePatch(obj, map[string]interface{}{"apiVersion": sc.api, "kind": sc.src.Kind})}
	u.SetNamespace("")
	return sc.res.Create(context.Background(), u, metav1.CreateOptions{})
}

// writeStatus writes status as an operator does: through /status, or the
// main resource without the subresource.
func (sc *serverCase) writeStatus(obj *unstructured.Unstructured, status map[string]interface{}) (*unstructured.Unstructured, error) {
	obj = obj.DeepCopy()
	obj.Object["status"] = status
	if sc.sub {
		return sc.res.UpdateStatus(context.Background(), obj, metav1.UpdateOptions{})
	}
	return sc.res.Update(context.Background(), obj, metav1.UpdateOptions{})
}

// probeStatus is the status write validate's probe 1 makes.
func (sc *serverCase) probeStatus(status string, gen int64) map[string]interface{} {
	var conds []interface{}
	for _, t := range sc.src.ConditionTypes() {
		conds = append(conds, map[string]interface{}{"type": t, "status": status, "reason": "StatuscheckProbe",
			"message": "written by statuscheck's probe", "lastTransitionTime": "2024-01-01T00:00:00Z", "observedGeneration": gen})
	}
	return map[string]interface{}{"conditions": conds, "observedGeneration": gen}
}

func has(findings result.Bundle, rule string) (bool, result.Severity) {
	for _, f := range findings.Findings {
		if f.Rule == rule {
			return true, f.Severity
		}
	}
	return false, 0
}

// TestRulesOnTheServer holds every rule whose message makes a claim about
// the apiserver to a real one, with its fail and pass fixtures: the claim
// holds exactly where validate reports the rule.
func TestRulesOnTheServer(t *testing.T) {
	root := filepath.Join(testutil.RepoRoot(), "testdata/bundles/rules")
	claims := map[string]func(t *testing.T, sc *serverCase) (bool, string){
		// The apiserver refuses the CRD.
		"status-source-crd-invalid": func(t *testing.T, sc *serverCase) (bool, string) {
			return sc.refused != nil, fmt.Sprint(sc.refused)
		},
		// A status write moves generation.
		"status-subresource-disabled": func(t *testing.T, sc *serverCase) (bool, string) {
			obj, err := sc.create(sc.example())
			require.NoError(t, err)
			out, err := sc.writeStatus(obj, sc.probeStatus(contract.StatusTrue, obj.GetGeneration()))
			require.NoError(t, err)
			return out.GetGeneration() > obj.GetGeneration(), fmt.Sprintf("generation %d -> %d", obj.GetGeneration(), out.GetGeneration())
		},
		// Two Upgradeable conditions in one status are accepted.
		"conditions-list-type": func(t *testing.T, sc *serverCase) (bool, string) {
			obj, err := sc.create(sc.example())
			require.NoError(t, err)
			st := sc.probeStatus(contract.StatusTrue, obj.GetGeneration())
			first := st["conditions"].([]interface{})[0].(map[string]interface{})
			st["conditions"] = append(st["conditions"].([]interface{}), jsonobj.MergePatch(first, map[string]interface{}{"status": contract.StatusFalse}))
			_, err = sc.writeStatus(obj, st)
			return err == nil, fmt.Sprint(err)
		},
		// The conditions are gone after the write.
		"conditions-schema-missing": func(t *testing.T, sc *serverCase) (bool, string) {
			obj, err := sc.create(sc.example())
			require.NoError(t, err)
			out, err := sc.writeStatus(obj, sc.probeStatus(contract.StatusTrue, obj.GetGeneration()))
			require.NoError(t, err)
			conds, found, _ := unstructured.NestedSlice(out.Object, "status", "conditions")
			return !found || len(conds) == 0, fmt.Sprintf("status after the write: %v", out.Object["status"])
		},
		// observedGeneration is gone, from the condition and from status.
		"conditions-observedgeneration-missing": func(t *testing.T, sc *serverCase) (bool, string) {
			obj, err := sc.create(sc.example())
			require.NoError(t, err)
			out, err := sc.writeStatus(obj, sc.probeStatus(contract.StatusTrue, obj.GetGeneration()))
			require.NoError(t, err)
			conds, _, _ := unstructured.NestedSlice(out.Object, "status", "conditions")
			_, statusOG, _ := unstructured.NestedInt64(out.Object, "status", "observedGeneration")
			condOG := false
			if len(conds) > 0 {
				_, condOG = conds[0].(map[string]interface{})["observedGeneration"]
			}
			return !condOG && !statusOG, fmt.Sprintf("status after the write: %v", out.Object["status"])
		},
		// The example CR is refused on create.
		"status-source-example-invalid": func(t *testing.T, sc *serverCase) (bool, string) {
			_, err := sc.create(sc.example())
			return err != nil, fmt.Sprint(err)
		},
		// The status write is refused.
		"status-write-rejected": func(t *testing.T, sc *serverCase) (bool, string) {
			obj, err := sc.create(sc.example())
			require.NoError(t, err)
			out, errTrue := sc.writeStatus(obj, sc.probeStatus(contract.StatusTrue, obj.GetGeneration()))
			if errTrue == nil {
				obj = out // the next write updates what the server holds now
			}
			_, errFalse := sc.writeStatus(obj, sc.probeStatus(contract.StatusFalse, obj.GetGeneration()))
			return errTrue != nil || errFalse != nil, fmt.Sprint(errTrue, errFalse)
		},
	}
	var played atomic.Int32
	t.Cleanup(func() { assert.Equal(t, int32(2*len(claims)), played.Load()) })
	for rule, claim := range claims {
		for _, kind := range []string{"fail", "pass"} {
			t.Run(rule+"/"+kind, func(t *testing.T) {
				t.Parallel()
				sc, findings := installFixture(t, filepath.Join(root, rule, kind))
				found, sev := has(findings, rule)
				if rule == "conditions-schema-missing" && sev == result.Warning {
					found = false // the unverifiable warning: the conditions are kept
				}
				if sc.refused != nil && rule != "status-source-crd-invalid" {
					t.Fatalf("the server refused the fixture's CRD: %v", sc.refused)
				}
				holds, evidence := claim(t, sc)
				played.Add(1)
				assert.Equal(t, found, holds, "%s/%s: validate says %v, the server shows %v (%s)", rule, kind, found, holds, evidence)
				assert.Equal(t, kind == "fail", holds, "the fail fixture shows the claim, the pass fixture does not: %s", evidence)
				if rule == "status-source-crd-invalid" && holds {
					// The server's own words are the finding's.
					for _, f := range findings.Findings {
						if f.Rule == rule {
							detail := f.Message[strings.LastIndex(f.Message, ": ")+2:]
							assert.Contains(t, evidence, detail)
						}
					}
				}
			})
		}
	}
}
