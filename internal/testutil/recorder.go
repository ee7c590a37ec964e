package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Recorder is `statuscheck record` (the built binary) running as a
// subprocess, writing its trace to a file of the test's.
type Recorder struct {
	t *testing.T
	// Trace is the file the trace goes to.
	Trace  string
	Stderr *SyncBuffer
	cmd    *exec.Cmd
	done   chan error
}

// StartRecorder runs `statuscheck record ARGS... -o FILE` and waits until
// the trace's header is written (the first lists are done, the watches
// start).
func StartRecorder(t *testing.T, args ...string) *Recorder {
	t.Helper()
	r := &Recorder{t: t, Trace: filepath.Join(t.TempDir(), "recorded.trace.yaml"), Stderr: &SyncBuffer{}, done: make(chan error, 1)}
	r.cmd = exec.Command(Binary(t), append(append([]string{"record"}, args...), "-o", r.Trace)...)
	r.cmd.Stderr = r.Stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.done <- r.cmd.Wait() }()
	t.Cleanup(func() { _ = r.cmd.Process.Kill() })
	r.WaitFor("the trace's header", func(s string) bool { return strings.Contains(s, "\nsteps:\n") })
	return r
}

// Read is the trace written so far.
func (r *Recorder) Read() string {
	data, _ := os.ReadFile(r.Trace)
	return string(data)
}

// WaitFor waits up to 30 seconds until cond holds of the trace.
func (r *Recorder) WaitFor(what string, cond func(string) bool) {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond(r.Read()) {
		select {
		case err := <-r.done:
			r.t.Fatalf("statuscheck record ended (%v) before %s; stderr:\n%s\ntrace:\n%s", err, what, r.Stderr, r.Read())
		default:
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out waiting for %s; stderr:\n%s\ntrace:\n%s", what, r.Stderr, r.Read())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitSteps waits until the trace holds n steps.
func (r *Recorder) WaitSteps(n int) {
	r.t.Helper()
	r.WaitFor(fmt.Sprintf("%d steps", n), func(s string) bool { return strings.Count(s, "\n- {") >= n })
}

// StopWith ends the recorder with sig and returns its exit code (-1 when
// a signal killed it).
func (r *Recorder) StopWith(sig syscall.Signal) int {
	r.t.Helper()
	if err := r.cmd.Process.Signal(sig); err != nil {
		r.t.Fatal(err)
	}
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		r.t.Fatalf("statuscheck record did not stop on %v", sig)
	}
	return r.cmd.ProcessState.ExitCode()
}
