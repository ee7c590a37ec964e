package simulate

import (
	"encoding/json"

	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/contract"
)

var coolSource = &contract.StatusSource{APIVersion: "cool.operators.corp/v1beta1", Kind: "CoolOperator", Name: "cool-operator", Namespace: "cool-system"}

func coolObj(gen int64, layer string, status string, og int64) map[string]interface{} {
	return map[string]interface{}{"apiVersion": "cool.operators.corp/v1beta1", "kind": "CoolOperator",
		"metadata": map[string]interface{}{"name": "cool-operator", "namespace": "cool-system", "generation": gen},
		"spec":     map[string]interface{}{"storageLayer": layer},
		"status": map[string]interface{}{"conditions": []interface{}{map[string]interface{}{"type": "Upgradeable", "status": status,
			"reason": "R", "message": "", "lastTransitionTime": "2024-01-01T00:00:00Z", "observedGeneration": og}}}}
}

func auditEvent(verb, subresource string, user string, obj map[string]interface{}) string {
	ev := map[string]interface{}{"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse", "stage": "ResponseComplete",
		"verb": verb, "user": map[string]interface{}{"username": user},
		"objectRef":      map[string]interface{}{"resource": "cooloperators", "namespace": "cool-system", "name": "cool-operator", "apiGroup": "cool.operators.corp", "apiVersion": "v1beta1", "subresource": subresource},
		"responseStatus": map[string]interface{}{"code": 200}, "responseObject": obj}
	data, _ := json.Marshal(ev)
	return string(data) + "\n"
}

func replayString(t *testing.T, name, data string, opts OpenOptions, policies ...contract.Policy) (*Summary, []string, error) {
	t.Helper()
	tr, err := OpenReader(name, strings.NewReader(data), opts)
	if err != nil {
		return nil, nil, err
	}
	var ctx *Context
	if opts.Source != nil {
		ctx = &Context{Source: opts.Source, From: "--source"}
	}
	if len(policies) == 0 {
		policies = contract.Policies()
	}
	cfg, notes, err := ctx.Config(tr, policies, policies[0])
	if err != nil {
		return nil, nil, err
	}
	sum, err := Replay(tr, cfg, nil)
	return sum, notes, err
}

// TestAuditLogJudgesTheFirstWrite is issue 11, item 1: the read before
// the first write is where the replay starts, so the first write (the
// user's spec change) is a step, as in the same history recorded as
// snapshots.
func TestAuditLogJudgesTheFirstWrite(t *testing.T) {
	get := auditEvent("get", "", "system:serviceaccount:cool-system:cool-operator", coolObj(1, "PostgreSQL", "True", 1))
	upd := auditEvent("update", "", "alice", coolObj(2, "MariaDB", "True", 1))
	st1 := auditEvent("patch", "status", "system:serviceaccount:cool-system:cool-operator", coolObj(2, "MariaDB", "False", 2))
	st2 := auditEvent("patch", "status", "system:serviceaccount:cool-system:cool-operator", coolObj(2, "MariaDB", "True", 2))
	log := get + upd + st1 + st2
	sum, notes, err := replayString(t, "audit.jsonl", log, OpenOptions{Source: coolSource, Plural: "cooloperators"}, contract.PolicyNaive)
	require.NoError(t, err)
	assert.Equal(t, 3, sum.Steps, "the update and both status writes")
	assert.Positive(t, sum.Counts[RuleUnsafeApproval], "naive approves the outdated True right after the user's update")
	assert.NotContains(t, strings.Join(notes, "\n"), "no read")

	var snaps strings.Builder
	for _, o := range []map[string]interface{}{coolObj(1, "PostgreSQL", "True", 1), coolObj(2, "MariaDB", "True", 1), coolObj(2, "MariaDB", "False", 2), coolObj(2, "MariaDB", "True", 2)} {
		data, _ := json.Marshal(o)
		snaps.Write(append(data, '\n'))
	}
	ssum, _, err := replayString(t, "snaps.json", snaps.String(), OpenOptions{Source: coolSource}, contract.PolicyNaive)
	require.NoError(t, err)
	assert.Equal(t, ssum.Steps, sum.Steps)
	assert.Equal(t, ssum.Counts, sum.Counts, "the audit log and the snapshots of one history give one verdict")

	// A list that holds the object is a read too.
	item := coolObj(1, "PostgreSQL", "True", 1)
	delete(item, "kind") // list items may leave kind out
	list := auditEvent("list", "", "u", map[string]interface{}{"kind": "CoolOperatorList", "items": []interface{}{item}})
	sum, _, err = replayString(t, "audit.jsonl", list+upd+st1+st2, OpenOptions{Source: coolSource, Plural: "cooloperators"}, contract.PolicyNaive)
	require.NoError(t, err)
	assert.Equal(t, 3, sum.Steps)

	// Without a read the replay starts from the first write, and says so.
	sum, notes, err = replayString(t, "audit.jsonl", upd+st1+st2, OpenOptions{Source: coolSource, Plural: "cooloperators"}, contract.PolicyNaive)
	require.NoError(t, err)
	assert.Equal(t, 2, sum.Steps)
	assert.Contains(t, strings.Join(notes, "\n"), "no read of CoolOperator cool-system/cool-operator before its first write (line 1)")
}

// TestNotATrace is issue 11, item 3: what is not a trace of the status
// source is an error saying what was expected, never "0 steps".
func TestNotATrace(t *testing.T) {
	root := testutil.RepoRoot()
	csv, err := os.ReadFile(filepath.Join(root, "testdata/bundles/good/manifests/cool-operator.clusterserviceversion.yaml"))
	require.NoError(t, err)
	seed, err := os.ReadFile(filepath.Join(root, "testdata/traces/seed.yaml"))
	require.NoError(t, err)
	other := &contract.StatusSource{APIVersion: "hco.kubevirt.io/v1beta1", Kind: "HyperConverged", Name: "kubevirt-hyperconverged"}
	tests := []struct {
		name string
		data string
		opts OpenOptions
		msg  string
	}{
		{name: "a CSV", data: string(csv), msg: "one recording of ClusterServiceVersion cool-operator.v0.2.0 and no change to replay"},
		{name: "a CSV with the source given", data: string(csv), opts: OpenOptions{Source: coolSource}, msg: "no recording of CoolOperator cool-system/cool-operator in the input; it has ClusterServiceVersion cool-operator.v0.2.0 (1)"},
		{name: "a StatusTrace read as snapshots", data: string(seed), opts: OpenOptions{Format: FormatSnapshots}, msg: "this is a StatusTrace, not a recording of the status source"},
		{name: "a trace of another kind than the bundle's", data: string(seed), opts: OpenOptions{Source: other}, msg: "the trace's initial object is CoolOperator cool.operators.corp/cool-operator, but --source names HyperConverged hco.kubevirt.io/kubevirt-hyperconverged"},
		{name: "a trace with no steps", data: "apiVersion: statuscheck.operatorframework.io/v1alpha1\nkind: StatusTrace\nstatusSource: {apiVersion: a.io/v1, kind: A, name: a}\ninitial: null\nsteps: []\n", msg: "the StatusTrace has no steps"},
		{name: "one snapshot", data: `{"apiVersion":"a.io/v1","kind":"A","metadata":{"name":"one"}}`, msg: "one recording of A one and no change to replay"},
		{name: "an audit log that only reads", data: auditEvent("get", "", "u", coolObj(1, "PostgreSQL", "True", 1)), opts: OpenOptions{Source: coolSource}, msg: "the log reads CoolOperator cool-system/cool-operator but never writes it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := replayString(t, "in.yaml", tt.data, tt.opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

// TestStreamOfSeveralObjects is issue 11, item 7: kubectl get KIND -A -w
// interleaves objects; the status source's are kept.
func TestStreamOfSeveralObjects(t *testing.T) {
	other := func(gen int64) map[string]interface{} {
		o := coolObj(gen, "PostgreSQL", "True", gen)
		o["metadata"].(map[string]interface{})["name"] = "another"
		return o
	}
	var b strings.Builder
	for _, o := range []map[string]interface{}{other(1), coolObj(1, "PostgreSQL", "True", 1), other(2), coolObj(2, "MariaDB", "True", 1), other(3), coolObj(2, "MariaDB", "False", 2)} {
		data, _ := json.Marshal(map[string]interface{}{"type": "MODIFIED", "object": o})
		b.Write(append(data, '\n'))
	}
	sum, _, err := replayString(t, "watch.json", b.String(), OpenOptions{Source: coolSource})
	require.NoError(t, err)
	assert.Equal(t, 2, sum.Steps, "the spec change and the status write of cool-operator")
	assert.Equal(t, "CoolOperator cool-system/another (3)", sum.Skipped)
	// Without a source, the first object is the one, and the summary says
	// what was left out.
	sum, _, err = replayString(t, "watch.json", b.String(), OpenOptions{})
	require.NoError(t, err)
	assert.Equal(t, "CoolOperator cool-system/cool-operator (3)", sum.Skipped)
}

// TestLiveStream is issue 11, item 5: a live stream (kubectl get -w -o
// json | statuscheck simulate -) is detected from its first object and
// replayed step by step as the objects come, without waiting for more.
func TestLiveStream(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	write := func(o map[string]interface{}) {
		data, _ := json.Marshal(o)
		go func() { _, _ = w.Write(append(data, '\n')) }()
	}
	opened := make(chan *Trace)
	errs := make(chan error, 1)
	go func() {
		tr, err := OpenReader("(stdin)", r, OpenOptions{Source: coolSource})
		if err != nil {
			errs <- err
			return
		}
		opened <- tr
	}()
	write(coolObj(1, "PostgreSQL", "True", 1))
	var tr *Trace
	select {
	case tr = <-opened:
	case err := <-errs:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatal("the format was not detected from the first object: the reader waits for more input")
	}
	assert.Equal(t, FormatSnapshots, tr.Format)
	steps := make(chan Step)
	go func() {
		for {
			st, err := tr.Next()
			if err != nil {
				close(steps)
				return
			}
			steps <- st
		}
	}()
	write(coolObj(2, "MariaDB", "True", 1))
	select {
	case st := <-steps:
		assert.Equal(t, VerbUpdate, st.Verb)
	case <-time.After(10 * time.Second):
		t.Fatal("the second object did not give its step while the stream stays open")
	}
	tr.closer = r
	tr.Stop()
	_, more := <-steps
	assert.False(t, more, "Stop ends the stream")
}

func TestDetect(t *testing.T) {
	tests := []struct {
		head string
		eof  bool
		want Format
		ok   bool
	}{
		{head: `{"apiVersion":"a/v1","kind":"A"`, want: "", ok: false},
		{head: `{"apiVersion":"a/v1","kind":"A"}`, want: FormatSnapshots, ok: true},
		{head: `{"kind":"StatusTrace","steps":[]}`, want: FormatTrace, ok: true},
		{head: `{"kind":"Event","apiVersion":"audit.k8s.io/v1"}` + "\n{", want: FormatAudit, ok: true},
		{head: "# a comment\napiVersion: a/v1\n", want: "", ok: false},
		{head: "# a comment\napiVersion: a/v1\nkind: A\n", want: FormatSnapshots, ok: true},
		{head: "apiVersion: x\ninitial:\n  kind: CoolOperator\nkind: StatusTrace\n", want: FormatTrace, ok: true},
		{head: "apiVersion: x\nkind: StatusTr", want: "", ok: false},
		{head: "", eof: true, want: "", ok: true},
		{head: "a: b\n---\n", want: FormatSnapshots, ok: true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.head), func(t *testing.T) {
			got, ok := decide([]byte(tt.head), tt.eof)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}
