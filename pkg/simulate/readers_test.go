package simulate

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
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/source"
	"github.com/statuscheck/statuscheck/pkg/trace"
)

func replayString(t *testing.T, name, data string, opts trace.OpenOptions, policies ...contract.Policy) (*Summary, []string, error) {
	t.Helper()
	tr, err := trace.OpenReader(name, strings.NewReader(data), opts)
	if err != nil {
		return nil, nil, err
	}
	var ctx *source.Context
	if opts.Source != nil {
		ctx = &source.Context{Source: opts.Source, From: "--source"}
	}
	if len(policies) == 0 {
		policies = contract.Policies()
	}
	cfg, notes, err := NewConfig(ctx, tr, policies, policies[0])
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
	get := testutil.AuditEvent("get", "", "system:serviceaccount:cool-system:cool-operator", testutil.CoolObject(1, "PostgreSQL", "True", 1))
	upd := testutil.AuditEvent("update", "", "alice", testutil.CoolObject(2, "MariaDB", "True", 1))
	st1 := testutil.AuditEvent("patch", "status", "system:serviceaccount:cool-system:cool-operator", testutil.CoolObject(2, "MariaDB", "False", 2))
	st2 := testutil.AuditEvent("patch", "status", "system:serviceaccount:cool-system:cool-operator", testutil.CoolObject(2, "MariaDB", "True", 2))
	log := get + upd + st1 + st2
	sum, notes, err := replayString(t, "audit.jsonl", log, trace.OpenOptions{Source: testutil.CoolSource, Plural: "cooloperators"}, contract.PolicyNaive)
	require.NoError(t, err)
	assert.Equal(t, 3, sum.Steps, "the update and both status writes")
	assert.Positive(t, sum.Counts[RuleUnsafeApproval], "naive approves the outdated True right after the user's update")
	assert.NotContains(t, strings.Join(notes, "\n"), "no read")

	var snaps strings.Builder
	for _, o := range []map[string]interface{}{testutil.CoolObject(1, "PostgreSQL", "True", 1), testutil.CoolObject(2, "MariaDB", "True", 1), testutil.CoolObject(2, "MariaDB", "False", 2), testutil.CoolObject(2, "MariaDB", "True", 2)} {
		data, _ := json.Marshal(o)
		snaps.Write(append(data, '\n'))
	}
	ssum, _, err := replayString(t, "snaps.json", snaps.String(), trace.OpenOptions{Source: testutil.CoolSource}, contract.PolicyNaive)
	require.NoError(t, err)
	assert.Equal(t, ssum.Steps, sum.Steps)
	assert.Equal(t, ssum.Counts, sum.Counts, "the audit log and the snapshots of one history give one verdict")

	// A list that holds the object is a read too.
	item := testutil.CoolObject(1, "PostgreSQL", "True", 1)
	delete(item, "kind") // list items may leave kind out
	list := testutil.AuditEvent("list", "", "u", map[string]interface{}{"kind": "CoolOperatorList", "items": []interface{}{item}})
	sum, _, err = replayString(t, "audit.jsonl", list+upd+st1+st2, trace.OpenOptions{Source: testutil.CoolSource, Plural: "cooloperators"}, contract.PolicyNaive)
	require.NoError(t, err)
	assert.Equal(t, 3, sum.Steps)

	// Without a read the replay starts from the first write, and says so.
	sum, notes, err = replayString(t, "audit.jsonl", upd+st1+st2, trace.OpenOptions{Source: testutil.CoolSource, Plural: "cooloperators"}, contract.PolicyNaive)
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
	other := &v1alpha1.StatusSource{APIVersion: "hco.kubevirt.io/v1beta1", Kind: "HyperConverged", Name: "kubevirt-hyperconverged"}
	tests := []struct {
		name string
		data string
		opts trace.OpenOptions
		msg  string
	}{
		{name: "a CSV", data: string(csv), msg: "one recording of ClusterServiceVersion cool-operator.v0.2.0 and no change to replay"},
		{name: "a CSV with the source given", data: string(csv), opts: trace.OpenOptions{Source: testutil.CoolSource}, msg: "no recording of CoolOperator cool-system/cool-operator in the input; it has ClusterServiceVersion cool-operator.v0.2.0 (1)"},
		{name: "a StatusTrace read as snapshots", data: string(seed), opts: trace.OpenOptions{Format: trace.FormatSnapshots}, msg: "this is a StatusTrace, not a recording of the status source"},
		{name: "a trace of another kind than the bundle's", data: string(seed), opts: trace.OpenOptions{Source: other}, msg: "the trace's initial object is CoolOperator cool.operators.corp cool-operator, but --source names HyperConverged hco.kubevirt.io kubevirt-hyperconverged"},
		{name: "a trace with no steps", data: "apiVersion: statuscheck.operatorframework.io/v1alpha1\nkind: StatusTrace\nstatusSource: {apiVersion: a.io/v1, kind: A, name: a}\ninitial: null\nsteps: []\n", msg: "the StatusTrace has no steps"},
		{name: "one snapshot", data: `{"apiVersion":"a.io/v1","kind":"A","metadata":{"name":"one"}}`, msg: "one recording of A one and no change to replay"},
		{name: "an audit log that only reads", data: testutil.AuditEvent("get", "", "u", testutil.CoolObject(1, "PostgreSQL", "True", 1)), opts: trace.OpenOptions{Source: testutil.CoolSource}, msg: "the log reads CoolOperator cool-system/cool-operator but never writes it"},
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
		o := testutil.CoolObject(gen, "PostgreSQL", "True", gen)
		o["metadata"].(map[string]interface{})["name"] = "another"
		return o
	}
	var b strings.Builder
	for _, o := range []map[string]interface{}{other(1), testutil.CoolObject(1, "PostgreSQL", "True", 1), other(2), testutil.CoolObject(2, "MariaDB", "True", 1), other(3), testutil.CoolObject(2, "MariaDB", "False", 2)} {
		data, _ := json.Marshal(map[string]interface{}{"type": "MODIFIED", "object": o})
		b.Write(append(data, '\n'))
	}
	sum, _, err := replayString(t, "watch.json", b.String(), trace.OpenOptions{Source: testutil.CoolSource})
	require.NoError(t, err)
	assert.Equal(t, 2, sum.Steps, "the spec change and the status write of cool-operator")
	assert.Equal(t, "CoolOperator cool-system/another (3)", sum.Skipped)
	// Without a source, the first object is the one, and the summary says
	// what was left out.
	sum, _, err = replayString(t, "watch.json", b.String(), trace.OpenOptions{})
	require.NoError(t, err)
	assert.Equal(t, "CoolOperator cool-system/cool-operator (3)", sum.Skipped)
}
