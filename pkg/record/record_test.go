package record

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/simulate"
	"github.com/statuscheck/statuscheck/pkg/trace"
)

var update = flag.Bool("update", false, "rewrite the golden traces")

var clock0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func testSource(t testing.TB) *v1alpha1.StatusSource {
	t.Helper()
	src, problems := contract.Parse(`{"apiVersion":"cool.operators.corp/v1beta1","kind":"CoolOperator","name":"cool-operator","namespace":"cool"}`)
	require.Empty(t, problems)
	return src
}

// cr is the status source at a generation and resourceVersion, with one
// Upgradeable condition; the write that made it is by manager, through
// /status when status is set. A watch gives only changes, so
// successive reports differ at least in their reason.
func cr(gen int64, rv, storage, cond string, og int64, manager string, status bool, at int) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "cool.operators.corp/v1beta1", "kind": "CoolOperator",
		"metadata": map[string]interface{}{"name": "cool-operator", "namespace": "cool", "generation": gen, "resourceVersion": rv, "uid": "u-1"},
		"spec":     map[string]interface{}{"storageLayer": storage},
	}}
	if cond != "" {
		// cond is STATUS or STATUS:REASON.
		status, reason, ok := strings.Cut(cond, ":")
		if !ok {
			reason = "R"
		}
		u.Object["status"] = map[string]interface{}{"conditions": []interface{}{map[string]interface{}{
			"type": "Upgradeable", "status": status, "reason": reason, "message": "", "lastTransitionTime": "2026-11-30T12:00:00Z", "observedGeneration": og}}}
	}
	if manager != "" {
		sub := ""
		if status {
			sub = "status"
		}
		ts := metav1.NewTime(clock0.Add(time.Duration(at) * time.Second))
		u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: sub, Time: &ts}})
	}
	return u
}

// csv is a CSV at a phase, with the reason R<phase>; csvAt gives the
// reason.
func csv(name, replaces, phase, rv string, at int) *unstructured.Unstructured {
	return csvAt(name, replaces, phase, "R"+phase, rv, at)
}

func csvAt(name, replaces, phase, reason, rv string, at int) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
		"metadata": map[string]interface{}{"name": name, "namespace": "cool", "resourceVersion": rv},
		"spec": map[string]interface{}{"customresourcedefinitions": map[string]interface{}{"owned": []interface{}{
			map[string]interface{}{"name": "cooloperators.cool.operators.corp", "kind": "CoolOperator", "version": "v1beta1"}}}},
	}}
	if replaces != "" {
		_ = unstructured.SetNestedField(u.Object, replaces, "spec", "replaces")
	}
	if phase != "" {
		_ = unstructured.SetNestedField(u.Object, phase, "status", "phase")
		_ = unstructured.SetNestedField(u.Object, reason, "status", "reason")
	}
	ts := metav1.NewTime(clock0.Add(time.Duration(at) * time.Second))
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "olm", Operation: metav1.ManagedFieldsOperationUpdate, Time: &ts}})
	return u
}

func oc(name, rv string, conds ...string) *unstructured.Unstructured {
	var list []interface{}
	for _, c := range conds {
		list = append(list, map[string]interface{}{"type": "Upgradeable", "status": c, "reason": "R", "message": "", "lastTransitionTime": "2026-11-30T12:00:00Z"})
	}
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "operators.coreos.com/v2", "kind": "OperatorCondition",
		"metadata": map[string]interface{}{"name": name, "namespace": "cool", "resourceVersion": rv, "generation": int64(1 + len(conds))},
		"spec":     map[string]interface{}{"deployments": []interface{}{"cool-operator"}},
	}}
	if len(list) > 0 {
		u.Object["spec"].(map[string]interface{})["conditions"] = list
	}
	return u
}

func labelled(u *unstructured.Unstructured, k, v string) *unstructured.Unstructured {
	u.SetLabels(map[string]string{k: v})
	return u
}

// finalized gives the CR a finalizer, marked for deletion or not.
func finalized(u *unstructured.Unstructured, deleting bool) *unstructured.Unstructured {
	u.SetFinalizers([]string{"cool.operators.corp/cleanup"})
	if deleting {
		ts := metav1.NewTime(clock0)
		u.SetDeletionTimestamp(&ts)
		var zero int64
		u.SetDeletionGracePeriodSeconds(&zero)
	}
	return u
}

func unfinalized(u *unstructured.Unstructured) *unstructured.Unstructured {
	u.SetFinalizers(nil)
	return u
}

type ev struct {
	kind string
	t    watch.EventType
	obj  *unstructured.Unstructured
}

// play feeds events to a recorder that started from the given lists and
// returns the trace it wrote.
func play(t *testing.T, start *unstructured.Unstructured, csvs, ocs []unstructured.Unstructured, events []ev) (string, *Recorder) {
	t.Helper()
	var out bytes.Buffer
	r := New(Options{Source: testSource(t), StatusSubresource: true, Out: &out, Server: "https://cluster.test", Now: func() time.Time { return clock0 }})
	require.NoError(t, r.Start(start, csvs, ocs))
	for _, e := range events {
		require.NoError(t, r.take(e.kind, e.t, e.obj))
	}
	return out.String(), r
}

// theScenario is issue 13's, as OLM writes the CSVs: a user changes the
// spec, the operator reports an outdated Upgradeable=True, then a fresh
// False; a CSV replacing the running one appears (None), enters Pending
// (RequirementsUnknown: no gate yet), is held by OLM's gate
// (OperatorConditionNotUpgradeable), the running one enters Replacing, and
// the new one is committed (InstallReady) and replaces the operator
// (Installing) while the condition is still False.
func theScenario() (*unstructured.Unstructured, []unstructured.Unstructured, []unstructured.Unstructured, []ev) {
	start := cr(1, "100", "PostgreSQL", "True", 1, "cool-operator", true, 0)
	csvs := []unstructured.Unstructured{*csv("cool.v1", "", "Succeeded", "90", 0)}
	ocs := []unstructured.Unstructured{*oc("cool.v1", "91")}
	return start, csvs, ocs, []ev{
		{"cr", watch.Modified, cr(2, "101", "MariaDB", "True", 1, "kubectl-edit", false, 1)},
		{"cr", watch.Modified, cr(2, "102", "MariaDB", "True:StillIdle", 1, "cool-operator", true, 2)},
		{"cr", watch.Modified, cr(2, "102", "MariaDB", "True:StillIdle", 1, "cool-operator", true, 2)}, // a relist repeats it
		{"cr", watch.Modified, cr(2, "103", "MariaDB", "False", 2, "cool-operator", true, 3)},
		{"csv", watch.Added, csv("cool.v2", "cool.v1", "", "104", 4)},
		{"csv", watch.Modified, csvAt("cool.v2", "cool.v1", "Pending", "RequirementsUnknown", "105", 5)},
		{"csv", watch.Modified, csvAt("cool.v2", "cool.v1", "Pending", "OperatorConditionNotUpgradeable", "106", 5)},
		{"csv", watch.Modified, csvAt("cool.v2", "cool.v1", "Pending", "OperatorConditionNotUpgradeable", "106", 5)},
		{"csv", watch.Modified, csv("cool.v1", "", "Replacing", "106", 6)},
		{"oc", watch.Added, oc("cool.v2", "107")},
		{"csv", watch.Modified, csv("cool.v2", "cool.v1", "InstallReady", "108", 8)},
		{"csv", watch.Modified, csv("cool.v2", "cool.v1", "Installing", "109", 9)},
		{"oc", watch.Modified, oc("cool.v2", "110", "False")},
	}
}

func TestRecorderGolden(t *testing.T) {
	start, csvs, ocs, events := theScenario()
	got, r := play(t, start, csvs, ocs, events)
	golden := filepath.Join("testdata", "scenario.trace.yaml")
	if *update {
		require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), got, "the recorded trace differs from %s (go test -update rewrites it)", golden)
	assert.Equal(t, 7, r.Steps, "user update, two status writes, two checks (OLM's Block and its commit), the upgrade, the new OperatorCondition's write")
}

// TestRecordingReplays replays the recording: the upgrade is the step
// where the new CSV moved to Installing (installer.Install), not where
// it was committed (InstallReady, a check OLM allowed) nor where the old
// one entered Replacing; under olm it happened while the gate blocked,
// and the check where OLM allowed is one the contract's gate blocks.
func TestRecordingReplays(t *testing.T) {
	start, csvs, ocs, events := theScenario()
	got, _ := play(t, start, csvs, ocs, events)
	sum, rows := replay(t, got, contract.Policies())
	var upgrade *simulate.Row
	for i := range rows {
		if rows[i].Step.Verb == v1alpha1.VerbUpgrade {
			upgrade = &rows[i]
		}
	}
	require.NotNil(t, upgrade, "the recording has an upgrade step")
	assert.Equal(t, "109", upgrade.Step.ResourceVersion, "the upgrade is the new CSV moving to Installing")
	var expects []v1alpha1.Verdict
	for _, r := range rows {
		if r.Step.Verb == v1alpha1.VerbCheck {
			expects = append(expects, r.Step.Expect)
		}
	}
	assert.Equal(t, []v1alpha1.Verdict{v1alpha1.Block, v1alpha1.Allow}, expects, "OLM's decisions: held, then committed")
	diagnosed := 0
	for _, v := range sum.Violations {
		assert.NotEqual(t, simulate.RuleCheckExpectation, v.Rule, "OLM's decisions are not a trace to fix: %s", v.Message)
		if v.Rule == simulate.RuleStatusSourceNotRead {
			diagnosed++
		}
	}
	assert.Equal(t, 1, diagnosed, "OLM committed (reading its empty OperatorCondition) where the contract's gate on the CR blocks")
	blocked := map[contract.Policy]int{}
	for _, v := range sum.Violations {
		if v.Rule == "upgrade-while-blocked" {
			assert.Equal(t, upgrade.Outcome.Step, v.Step)
			blocked[v.Policy]++
		}
	}
	assert.Equal(t, 1, blocked[contract.PolicyOLM], "violations: %+v", sum.Violations)
	assert.Equal(t, 1, blocked[contract.PolicyStrict])
	assert.Equal(t, 1, blocked[contract.PolicyNaive], "naive sees the fresh False too")
	for _, r := range rows {
		if r.Step.Target == v1alpha1.TargetSource && r.Step.Actor != v1alpha1.ActorOLM {
			assert.NotEmpty(t, r.Step.ResourceVersion, "step %d keeps its resourceVersion", r.Outcome.Step)
			assert.NotEmpty(t, r.Step.Time, "step %d keeps its time", r.Outcome.Step)
		}
	}
}

func replay(t *testing.T, text string, pols []contract.Policy) (*simulate.Summary, []simulate.Row) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rec.yaml")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	tr, err := trace.Open(p, trace.OpenOptions{Limits: trace.DefaultLimits})
	require.NoError(t, err)
	defer tr.Close()
	cfg, _, err := simulate.NewConfig(nil, tr, pols, pols[0])
	require.NoError(t, err)
	var rows []simulate.Row
	sum, err := simulate.Replay(tr, cfg, func(r simulate.Row) error { rows = append(rows, r); return nil })
	require.NoError(t, err)
	return sum, rows
}

func TestRecorderInference(t *testing.T) {
	start := cr(1, "100", "PostgreSQL", "True", 1, "cool-operator", true, 0)
	v1 := []unstructured.Unstructured{*csv("cool.v1", "", "Succeeded", "90", 0)}
	for _, tc := range []struct {
		name      string
		start     *unstructured.Unstructured
		csvs      []unstructured.Unstructured
		events    []ev
		wantSteps []string // actor verb [target], in order
		// wantExpects are the checks' expects, when given.
		wantExpects []v1alpha1.Verdict
	}{
		{
			name: "the operator's own spec write is the operator's",
			// cool-operator wrote /status at the start, so its spec
			// write is not a user's.
			start: start, csvs: v1,
			events:    []ev{{"cr", watch.Modified, cr(2, "101", "MariaDB", "True", 1, "cool-operator", false, 1)}},
			wantSteps: []string{"operator update"},
		},
		{
			name:  "a CSV that replaces another operator's CSV is not a check",
			start: start, csvs: v1,
			events:    []ev{{"csv", watch.Added, csv("other.v2", "other.v1", "Pending", "101", 1)}},
			wantSteps: nil,
		},
		{
			name:  "a replacement that fails is no upgrade",
			start: start, csvs: v1,
			events: []ev{
				{"csv", watch.Added, csv("cool.v2", "cool.v1", "", "101", 1)},
				{"csv", watch.Modified, csvAt("cool.v2", "cool.v1", "Pending", "RequirementsUnknown", "102", 2)},
				{"csv", watch.Modified, csvAt("cool.v2", "cool.v1", "InstallReady", "RequirementsMet", "103", 3)},
				{"csv", watch.Modified, csvAt("cool.v2", "cool.v1", "Failed", "ComponentFailed", "104", 4)},
			},
			wantSteps: []string{"olm check"},
		},
		{
			// transitionCSVState: None -> Pending does not evaluate the
			// gate; each sync of a Pending CSV does, and writes when what
			// it found changed: a Block, or, past the gate, the
			// requirements; InstallReady is the commit.
			name:  "each status write of a Pending sync is a check with OLM's decision; entering Pending is not",
			start: start, csvs: v1,
			events: []ev{
				{"csv", watch.Added, csv("cool.v2", "cool.v1", "", "101", 1)},
				{"csv", watch.Modified, csvAt("cool.v2", "cool.v1", "Pending", "RequirementsUnknown", "102", 2)},
				{"csv", watch.Modified, csvAt("cool.v2", "cool.v1", "Pending", "OperatorConditionNotUpgradeable", "103", 3)},
				{"csv", watch.Modified, csvAt("cool.v2", "cool.v1", "Pending", "OperatorConditionNotUpgradeable", "103", 3)},
				{"csv", watch.Modified, csvAt("cool.v2", "cool.v1", "Pending", "RequirementsNotMet", "104", 4)},
				{"csv", watch.Modified, csvAt("cool.v2", "cool.v1", "InstallReady", "RequirementsMet", "105", 5)},
				{"csv", watch.Modified, csvAt("cool.v2", "cool.v1", "Installing", "InstallSucceeded", "106", 6)},
			},
			wantSteps:   []string{"olm check", "olm check", "olm check", "olm upgrade"},
			wantExpects: []v1alpha1.Verdict{v1alpha1.Block, v1alpha1.Allow, v1alpha1.Allow},
		},
		{
			// The resolver keeps a bundle's own replaces on a first
			// install: the running CSV names one that never ran here.
			name:  "the first install is found when the recording starts before it, whatever it replaces",
			start: nil, csvs: nil,
			events: []ev{
				{"csv", watch.Added, csv("cool.v1", "cool.v0", "Succeeded", "101", 1)},
				{"cr", watch.Added, cr(1, "102", "PostgreSQL", "", 0, "kubectl-create", false, 2)},
				{"csv", watch.Added, csv("cool.v2", "cool.v1", "", "103", 3)},
				{"csv", watch.Modified, csvAt("cool.v2", "cool.v1", "Pending", "RequirementsUnknown", "104", 4)},
				{"csv", watch.Modified, csvAt("cool.v2", "cool.v1", "InstallReady", "RequirementsMet", "105", 5)},
				{"csv", watch.Modified, csvAt("cool.v2", "cool.v1", "Succeeded", "InstallSucceeded", "106", 6)},
			},
			wantSteps: []string{"user create", "olm check", "olm upgrade"},
		},
		{
			name:  "a running CSV with replaces is found at the start",
			start: start, csvs: []unstructured.Unstructured{*csv("cool.v1", "cool.v0", "Succeeded", "90", 0)},
			events: []ev{
				{"csv", watch.Added, csv("cool.v2", "cool.v1", "", "101", 1)},
				{"csv", watch.Modified, csvAt("cool.v2", "cool.v1", "Pending", "RequirementsUnknown", "102", 2)},
				{"csv", watch.Modified, csvAt("cool.v2", "cool.v1", "Pending", "OperatorConditionNotUpgradeable", "103", 3)},
			},
			wantSteps: []string{"olm check"},
		},
		{
			name:  "a replacement already past Installing at the start makes it the running CSV",
			start: start,
			csvs:  []unstructured.Unstructured{v1[0], *csv("cool.v2", "cool.v1", "Succeeded", "95", 0)},
			events: []ev{
				{"csv", watch.Added, csvAt("cool.v3", "cool.v2", "Pending", "RequirementsUnknown", "101", 1)},
				{"csv", watch.Modified, csvAt("cool.v3", "cool.v2", "Pending", "OperatorConditionNotUpgradeable", "102", 2)},
			},
			wantSteps: []string{"olm check"},
		},
		{
			// Failed -> Pending, then gated again (transitionCSVState,
			// case CSVPhaseFailed).
			name:  "a replacement that is Failed at the start is gated again",
			start: start,
			csvs:  []unstructured.Unstructured{v1[0], *csvAt("cool.v2", "cool.v1", "Failed", "ComponentFailed", "95", 0)},
			events: []ev{
				{"csv", watch.Modified, csvAt("cool.v2", "cool.v1", "Pending", "NeedsReinstall", "101", 1)},
				{"csv", watch.Modified, csvAt("cool.v2", "cool.v1", "Pending", "OperatorConditionNotUpgradeable", "102", 2)},
				{"csv", watch.Modified, csvAt("cool.v2", "cool.v1", "InstallReady", "RequirementsMet", "103", 3)},
				{"csv", watch.Modified, csvAt("cool.v2", "cool.v1", "Installing", "InstallSucceeded", "104", 4)},
			},
			wantSteps:   []string{"olm check", "olm check", "olm upgrade"},
			wantExpects: []v1alpha1.Verdict{v1alpha1.Block, v1alpha1.Allow},
		},
		{
			// isReplacing GETs the CSV being replaced; with it gone the
			// gate is skipped (pkg/lib/csv/replace_finder.go).
			name:  "with the running CSV gone its replacement is not gated",
			start: start, csvs: v1,
			events: []ev{
				{"csv", watch.Added, csv("cool.v2", "cool.v1", "", "101", 1)},
				{"csv", watch.Deleted, csv("cool.v1", "", "Succeeded", "102", 2)},
				{"csv", watch.Modified, csvAt("cool.v2", "cool.v1", "Pending", "RequirementsUnknown", "103", 3)},
				{"csv", watch.Modified, csvAt("cool.v2", "cool.v1", "InstallReady", "RequirementsMet", "104", 4)},
				{"csv", watch.Modified, csvAt("cool.v2", "cool.v1", "Installing", "InstallSucceeded", "105", 5)},
			},
			wantSteps: []string{"olm upgrade"},
		},
		{
			// TechPreviewUnsafeFailForward: v3 replaces the failed v2, and
			// OLM's gate reads v2's OperatorCondition, not the running
			// v1's: no check of the running operator's gate is recorded
			// (test/olm's TestPoint7UnsafeFailForwardSkipsTheGate).
			name:  "a CSV replacing a failed replacement is not gated by the running operator",
			start: start,
			csvs:  []unstructured.Unstructured{v1[0], *csvAt("cool.v2", "cool.v1", "Failed", "InstallComponentFailedNoRetry", "95", 0)},
			events: []ev{
				{"csv", watch.Added, csv("cool.v3", "cool.v2", "", "101", 1)},
				{"csv", watch.Modified, csvAt("cool.v2", "cool.v1", "Replacing", "BeingReplaced", "102", 2)},
				{"csv", watch.Modified, csvAt("cool.v3", "cool.v2", "Pending", "RequirementsUnknown", "103", 3)},
				{"csv", watch.Modified, csvAt("cool.v3", "cool.v2", "InstallReady", "RequirementsMet", "104", 4)},
				{"csv", watch.Modified, csvAt("cool.v3", "cool.v2", "Installing", "InstallSucceeded", "105", 5)},
			},
			wantSteps: []string{"olm upgrade"},
		},
		{
			name:  "a copied CSV is not the operator's",
			start: start, csvs: v1,
			events: []ev{
				{"csv", watch.Added, labelled(csvAt("cool.v2", "cool.v1", "Pending", "OperatorConditionNotUpgradeable", "101", 1), "olm.copiedFrom", "elsewhere")},
				{"csv", watch.Modified, labelled(csvAt("cool.v2", "cool.v1", "InstallReady", "RequirementsMet", "102", 2), "olm.copiedFrom", "elsewhere")},
			},
			wantSteps: nil,
		},
		{
			name:  "deleting the CR is a delete; a deletion seen again changes nothing",
			start: start, csvs: v1,
			events: []ev{
				{"cr", watch.Deleted, cr(1, "101", "PostgreSQL", "True", 1, "", false, 1)},
				{"cr", watch.Deleted, cr(1, "101", "PostgreSQL", "True", 1, "", false, 1)},
			},
			wantSteps: []string{"user delete"},
		},
		{
			// A delete of an object with finalizers marks it
			// (deletionTimestamp, generation once); removing the last
			// finalizer deletes it, and the watch says DELETED with the
			// state stored before, finalizer and all (as the real
			// apiserver does: test/olm's TestPoint4CRDeletedWithFinalizer).
			name:  "deleting a CR with a finalizer is a delete, then the update that removes the finalizer",
			start: finalized(cr(1, "100", "PostgreSQL", "True", 1, "cool-operator", true, 0), false), csvs: v1,
			events: []ev{
				{"cr", watch.Modified, finalized(cr(2, "101", "PostgreSQL", "True", 1, "cool-operator", true, 1), true)},
				{"cr", watch.Deleted, finalized(cr(2, "102", "PostgreSQL", "True", 1, "cool-operator", true, 1), true)},
			},
			wantSteps: []string{"user delete", "operator update"},
		},
		{
			// A DELETED that carries the object without its finalizer
			// (what a watch cache could give) is the same update.
			name:  "a deletion whose last state has no finalizer left",
			start: finalized(cr(1, "100", "PostgreSQL", "True", 1, "cool-operator", true, 0), false), csvs: v1,
			events: []ev{
				{"cr", watch.Modified, finalized(cr(2, "101", "PostgreSQL", "True", 1, "cool-operator", true, 1), true)},
				{"cr", watch.Deleted, unfinalized(finalized(cr(2, "102", "PostgreSQL", "True", 1, "cool-operator", true, 2), true))},
			},
			wantSteps: []string{"user delete", "operator update"},
		},
		{
			// OLM's generator makes a deleted OperatorCondition again,
			// empty; until then the gate finds none.
			name:  "an OperatorCondition deleted and made again",
			start: start, csvs: v1,
			events: []ev{
				{"oc", watch.Deleted, oc("cool.v1", "101", "False")},
				{"oc", watch.Added, oc("cool.v1", "102")},
			},
			wantSteps: []string{"admin delete OperatorCondition", "olm create OperatorCondition"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, r := play(t, tc.start, tc.csvs, nil, tc.events)
			var got []string
			if r.Steps == 0 {
				assert.Empty(t, tc.wantSteps, "trace:\n%s", out)
				return
			}
			_, rows := replay(t, out, []contract.Policy{contract.PolicyOLM})
			for _, row := range rows {
				s := string(row.Step.Actor) + " " + string(row.Step.Verb)
				if row.Step.Target != v1alpha1.TargetSource {
					s += " " + string(row.Step.Target)
				}
				got = append(got, s)
			}
			assert.Equal(t, tc.wantSteps, got, "trace:\n%s", out)
			assert.Equal(t, len(rows), r.Steps)
			if tc.wantExpects != nil {
				var expects []v1alpha1.Verdict
				for _, row := range rows {
					if row.Step.Verb == v1alpha1.VerbCheck {
						expects = append(expects, row.Step.Expect)
					}
				}
				assert.Equal(t, tc.wantExpects, expects)
			}
		})
	}
}

// TestRecorderReportsWriteErrors: a trace that cannot be written stops
// the recording with an error that says so.
func TestRecorderReportsWriteErrors(t *testing.T) {
	r := New(Options{Source: testSource(t), Out: failWriter{}, Now: func() time.Time { return clock0 }})
	err := r.Start(nil, nil, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "writing the trace")
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

// TestKilledRecordingReplays cuts the recording at every byte after its
// header, as SIGKILL in the middle of a write could (each step is one
// write, so a cut inside a step is rare, but possible): what is left
// replays up to its last whole step, and says so when a step was cut.
func TestKilledRecordingReplays(t *testing.T) {
	start, csvs, ocs, events := theScenario()
	whole, _ := play(t, start, csvs, ocs, events)
	header := strings.Index(whole, "\nsteps:\n") + len("\nsteps:\n")
	for cut := header; cut <= len(whole); cut++ {
		part := whole[:cut]
		lines := strings.SplitAfter(part[header:], "\n")
		wholeSteps := 0
		for _, l := range lines {
			if wholeStep(l) {
				wholeSteps++
			}
		}
		if wholeSteps == 0 {
			continue // nothing to replay yet: an error, as for any empty trace
		}
		p := filepath.Join(t.TempDir(), "killed.yaml")
		require.NoError(t, os.WriteFile(p, []byte(part), 0o644))
		tr, err := trace.Open(p, trace.OpenOptions{Limits: trace.DefaultLimits})
		require.NoError(t, err, "cut at byte %d", cut)
		cfg, _, err := simulate.NewConfig(nil, tr, contract.Policies(), contract.PolicyOLM)
		require.NoError(t, err)
		sum, err := simulate.Replay(tr, cfg, nil)
		tr.Close()
		require.NoError(t, err, "cut at byte %d:\n%s", cut, part[header:])
		require.Equal(t, wholeSteps, sum.Steps, "cut at byte %d", cut)
		last := lines[len(lines)-1]
		midStep := strings.HasPrefix(last, "-") && !wholeStep(last)
		if midStep {
			require.Len(t, sum.Late, 1, "cut at byte %d: a note says the last step was cut off", cut)
			assert.Contains(t, sum.Late[0], "cut off")
		}
	}
}

// wholeStep says whether a line of the steps list is a whole step: it
// reads as a list of one mapping (a step cut right after its closing
// brace has lost only its newline).
func wholeStep(line string) bool {
	var v []map[string]interface{}
	return strings.HasPrefix(line, "- {") && sigsyaml.Unmarshal([]byte(line), &v) == nil && len(v) == 1 && v[0] != nil
}
