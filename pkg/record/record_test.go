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

func csv(name, replaces, phase, rv string, at int) *unstructured.Unstructured {
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
		_ = unstructured.SetNestedField(u.Object, "R"+phase, "status", "reason")
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
		"metadata": map[string]interface{}{"name": name, "namespace": "cool", "resourceVersion": rv},
		"spec":     map[string]interface{}{"deployments": []interface{}{"cool-operator"}},
	}}
	if len(list) > 0 {
		u.Object["spec"].(map[string]interface{})["conditions"] = list
	}
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

// theScenario is issue 13's: a user changes the spec, the operator
// reports an outdated Upgradeable=True, then a fresh False; a CSV
// replacing the running one appears and is Pending (OLM's gate holds
// it), the running one enters Replacing, and the new one leaves Pending
// while the condition is still False.
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
		{"csv", watch.Modified, csv("cool.v2", "cool.v1", "Pending", "105", 5)},
		{"csv", watch.Modified, csv("cool.v2", "cool.v1", "Pending", "105", 5)},
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
	assert.Equal(t, 7, r.Steps, "user update, two status writes, two checks, the upgrade, the admin's OperatorCondition write")
}

// TestRecordingReplays replays the recording: the upgrade is the step
// where the new CSV left Pending, not where the old one entered
// Replacing, and under olm it happened while the gate blocked.
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
	assert.Equal(t, "108", upgrade.Step.ResourceVersion, "the upgrade is the new CSV leaving Pending")
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
				{"csv", watch.Added, csv("cool.v2", "cool.v1", "Pending", "101", 1)},
				{"csv", watch.Modified, csv("cool.v2", "cool.v1", "Failed", "102", 2)},
			},
			wantSteps: []string{"olm check"},
		},
		{
			name:  "each new state of a Pending replacement is a check, the same state again is not",
			start: start, csvs: v1,
			events: []ev{
				{"csv", watch.Added, csv("cool.v2", "cool.v1", "", "101", 1)},
				{"csv", watch.Modified, csv("cool.v2", "cool.v1", "Pending", "102", 2)},
				{"csv", watch.Modified, csv("cool.v2", "cool.v1", "Pending", "103", 3)},
			},
			wantSteps: []string{"olm check", "olm check"},
		},
		{
			name:  "the first install is found when the recording starts before it",
			start: nil, csvs: nil,
			events: []ev{
				{"csv", watch.Added, csv("cool.v1", "", "Succeeded", "101", 1)},
				{"cr", watch.Added, cr(1, "102", "PostgreSQL", "", 0, "kubectl-create", false, 2)},
				{"csv", watch.Added, csv("cool.v2", "cool.v1", "Pending", "103", 3)},
				{"csv", watch.Modified, csv("cool.v2", "cool.v1", "Succeeded", "104", 4)},
			},
			wantSteps: []string{"user create", "olm check", "olm upgrade"},
		},
		{
			name:  "a replacement already past Pending at the start makes it the running CSV",
			start: start,
			csvs:  []unstructured.Unstructured{v1[0], *csv("cool.v2", "cool.v1", "Succeeded", "95", 0)},
			events: []ev{
				{"csv", watch.Added, csv("cool.v3", "cool.v2", "Pending", "101", 1)},
			},
			wantSteps: []string{"olm check"},
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
