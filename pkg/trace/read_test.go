package trace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/manifest"
)

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
		tr, err := OpenReader("(stdin)", r, OpenOptions{Source: testutil.CoolSource})
		if err != nil {
			errs <- err
			return
		}
		opened <- tr
	}()
	write(testutil.CoolObject(1, "PostgreSQL", "True", 1))
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
	write(testutil.CoolObject(2, "MariaDB", "True", 1))
	select {
	case st := <-steps:
		assert.Equal(t, v1alpha1.VerbUpdate, st.Verb)
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

func TestDecodeStepErrors(t *testing.T) {
	tests := []struct {
		step string
		msg  string
	}{
		{"{actor: robot, update: {}}", `unknown actor "robot"`},
		{"{actor: user, edit: {}}", `unknown step field "edit"`},
		{"{actor: user}", "a step needs a verb"},
		{"{update: {}}", "a step needs an actor"},
		{"{actor: user, update: {}, delete: {}}", "one verb per step"},
		{"{actor: user, check: {}}", "user cannot check the status source"},
		{"{actor: olm, updateStatus: {}}", "olm cannot updateStatus the status source"},
		{"{actor: operator, target: Pod, update: {}}", `unknown target "Pod"`},
		{"{actor: olm, check: {expect: Maybe}}", "expect must be Allow or Block"},
		{"{actor: user, update: [1]}", "update needs an object"},
		{"just a string", "a step is a mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.step, func(t *testing.T) {
			body := "apiVersion: statuscheck.operatorframework.io/v1alpha1\nkind: StatusTrace\ninitial: null\nsteps:\n- {actor: olm, check: {}}\n- " + tt.step + "\n"
			tr, err := OpenReader("t.yaml", strings.NewReader(body), OpenOptions{Format: FormatTrace})
			require.NoError(t, err)
			_, err = tr.Next()
			if err == nil {
				_, err = tr.Next()
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "t.yaml:6: "+tt.msg)
		})
	}
}

func TestTraceErrors(t *testing.T) {
	tests := []struct {
		name string
		data string
		opts OpenOptions
		msg  string
	}{
		{name: "yaml that does not parse", data: "apiVersion: statuscheck.operatorframework.io/v1alpha1\nkind: StatusTrace\ninitial:\n  a: [\nsteps:\n- {actor: olm, check: {}}\n", msg: "t.yaml:4:"},
		{name: "a step that does not parse", data: "apiVersion: statuscheck.operatorframework.io/v1alpha1\nkind: StatusTrace\ninitial: null\nsteps:\n- {actor: olm, check: {}}\n- {actor: [\n", msg: "t.yaml:6: invalid YAML"},
		{name: "the wrong apiVersion", data: "apiVersion: v1\nkind: StatusTrace\ninitial: null\nsteps: []\n", opts: OpenOptions{Format: FormatTrace}, msg: `apiVersion is "v1"`},
		{name: "an unknown field", data: "apiVersion: statuscheck.operatorframework.io/v1alpha1\nkind: StatusTrace\ninitial: null\nstep: []\n", msg: `unknown StatusTrace field "step"`},
		{name: "keys after the steps", data: "apiVersion: statuscheck.operatorframework.io/v1alpha1\nkind: StatusTrace\ninitial: null\nsteps:\n- {actor: olm, check: {}}\nmetadata: {name: x}\n", msg: "t.yaml:6: keys after steps"},
		{name: "an empty file", data: "\n\n", msg: "empty trace"},
		{name: "snapshots of other objects only", data: `{"apiVersion":"a.io/v1","kind":"A","metadata":{"name":"one"}}` + "\n" + `{"apiVersion":"a.io/v1","kind":"A","metadata":{"name":"two"}}`,
			opts: OpenOptions{Source: &v1alpha1.StatusSource{APIVersion: "a.io/v1", Kind: "A", Name: "three"}}, msg: "t.yaml: no recording of A three in the input; it has A one (1), A two (1)"},
		{name: "a StatusTrace read as snapshots", data: "apiVersion: statuscheck.operatorframework.io/v1alpha1\nkind: StatusTrace\ninitial: null\nsteps: []\n",
			opts: OpenOptions{Format: FormatSnapshots}, msg: "this is a StatusTrace, not a recording of the status source: read it with --format trace"},
		{name: "a snapshot that is not an object", data: `{"apiVersion":"a.io/v1","kind":"A","metadata":{"name":"one"}}` + "\n[1, 2]", msg: "t.yaml:2: a snapshot must be a Kubernetes object"},
		{name: "truncated json", data: `{"apiVersion":"a.io/v1","kind":"A","metadata":{"name":"one"}}` + "\n{\"a\": ", msg: "t.yaml:2: unexpected end of input"},
		{name: "an audit log without a source", data: `{"kind":"Event","apiVersion":"audit.k8s.io/v1","verb":"get"}`, msg: "an audit log needs the status source"},
		{name: "an audit event without a response", data: `{"kind":"Event","apiVersion":"audit.k8s.io/v1","verb":"update","stage":"ResponseComplete","objectRef":{"name":"n","apiGroup":"a.io","resource":"as"}}`,
			opts: OpenOptions{Source: &v1alpha1.StatusSource{APIVersion: "a.io/v1", Kind: "A", Name: "n"}}, msg: "t.yaml:1: a update of n has no responseObject"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := OpenReader("t.yaml", strings.NewReader(tt.data), tt.opts)
			if err == nil {
				for err == nil {
					_, err = tr.Next()
				}
				require.False(t, errors.Is(err, io.EOF), "want an error, the trace was read")
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestTraceLimits(t *testing.T) {
	steps := strings.Repeat("- {actor: olm, check: {}}\n", 20)
	body := "apiVersion: statuscheck.operatorframework.io/v1alpha1\nkind: StatusTrace\nstatusSource: {apiVersion: a.io/v1, kind: A, name: a}\ninitial: null\nsteps:\n" + steps
	lim := DefaultLimits
	lim.MaxSteps = 10
	tr, err := OpenReader("long.yaml", strings.NewReader(body), OpenOptions{Limits: lim})
	require.NoError(t, err)
	for err == nil {
		_, err = tr.Next()
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "long.yaml:16: the trace is longer than 10 steps")

	lim = DefaultLimits
	lim.Manifest.MaxFileSize = 100
	long := "apiVersion: statuscheck.operatorframework.io/v1alpha1\nkind: StatusTrace\ninitial: null\nsteps:\n- {actor: user, create: {apiVersion: a.io/v1, kind: A, metadata: {name: " + strings.Repeat("a", 200) + "}}}\n"
	tr, err = OpenReader("wide.yaml", strings.NewReader(long), OpenOptions{Limits: lim})
	if err == nil {
		_, err = tr.Next()
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "wide.yaml:5:")
	assert.Contains(t, err.Error(), "100-byte limit")

	tr, err = OpenReader("big.yaml", strings.NewReader("apiVersion: a.io/v1\nkind: A\nmetadata: {name: a}\ndata: "+strings.Repeat("x", 300<<10)+"\n"), OpenOptions{Limits: lim})
	require.Error(t, err, "a snapshot over the limit")
	assert.Contains(t, err.Error(), "big.yaml")

	// Steps first, then a key: read whole, and over the file-size limit
	// the message says how to stream it.
	whole := "apiVersion: statuscheck.operatorframework.io/v1alpha1\nkind: StatusTrace\nsteps:\n- {actor: olm, check: {}}\ninitial: null\nnote: " + strings.Repeat("x", int(manifest.DefaultLimits.MaxFileSize)) + "\n"
	_, err = OpenReader("whole.yaml", strings.NewReader(whole), OpenOptions{Limits: DefaultLimits})
	require.Error(t, err, "a trace read whole over the limit")
	assert.Contains(t, err.Error(), "whole.yaml")
	assert.Contains(t, err.Error(), fmt.Sprintf("a trace read whole may be at most %d bytes; to stream it, write initial: (null if none) before steps:, and steps: last, as a block list", manifest.DefaultLimits.MaxFileSize))
}
