package trace_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/manifest"
	"github.com/statuscheck/statuscheck/pkg/simulate"
	"github.com/statuscheck/statuscheck/pkg/trace"
)

// FuzzReadTrace feeds arbitrary input to every trace reader and replays
// (package simulate) what they accept: nothing may panic or hang, and every failure must be
// an error that names the input.
func FuzzReadTrace(f *testing.F) {
	traces, _ := filepath.Glob(filepath.Join(testutil.RepoRoot(), "testdata", "traces", "*.*"))
	for _, p := range traces {
		data, err := os.ReadFile(p)
		if err == nil && len(data) < 1<<16 {
			f.Add(data, uint8(0))
			f.Add(data, uint8(1))
			f.Add(data, uint8(2))
			f.Add(data, uint8(3))
		}
	}
	f.Add([]byte("apiVersion: statuscheck.operatorframework.io/v1alpha1\nkind: StatusTrace\ninitial: null\nsteps:\n- {actor: user, create: {apiVersion: a.io/v1, kind: A, metadata: {name: a}}}\n"), uint8(1))
	// A recording (statuscheck record), whole and cut off mid-step as a
	// killed recorder may leave it.
	if data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "pkg", "record", "testdata", "scenario.trace.yaml")); err == nil {
		f.Add(data, uint8(1))
		f.Add(data[:len(data)-40], uint8(1))
	}
	src := &v1alpha1.StatusSource{APIVersion: "cool.operators.corp/v1beta1", Kind: "CoolOperator", Name: "cool-operator", Namespace: "cool-system",
		Handshake: &v1alpha1.Handshake{Mode: v1alpha1.HandshakeRequestAck, Request: &v1alpha1.HandshakeRequest{Annotation: "a.io/req"}, Ack: &v1alpha1.HandshakeAck{StatusPath: ".status.ack"}}}
	formats := []trace.Format{trace.FormatAuto, trace.FormatTrace, trace.FormatSnapshots, trace.FormatAudit}
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		if len(data) > 1<<16 {
			return
		}
		wd := time.AfterFunc(30*time.Second, func() { panic(fmt.Sprintf("WATCHDOG: no answer in 30s for %q", data)) })
		defer wd.Stop()
		opts := trace.OpenOptions{Format: formats[int(which)%len(formats)], Source: src,
			Limits: trace.Limits{MaxSteps: 10_000, Manifest: manifest.Limits{MaxFileSize: 1 << 16, MaxDocuments: 100, MaxDepth: 64, MaxAliasNodes: 10_000}, MaxWhole: 1 << 16}}
		if which%2 == 1 {
			opts.Source = nil
		}
		tr, err := trace.OpenReader("fuzz.yaml", bytes.NewReader(data), opts)
		if err != nil {
			named(t, err)
			return
		}
		cfg, _, err := simulate.NewConfig(nil, tr, contract.Policies(), contract.PolicyOLM)
		if err != nil {
			named(t, err)
			return
		}
		if _, err := simulate.Replay(tr, cfg, func(simulate.Row) error { return nil }); err != nil && !errors.Is(err, io.EOF) {
			named(t, err)
		}
	})
}

func named(t *testing.T, err error) {
	t.Helper()
	if !bytes.Contains([]byte(err.Error()), []byte("fuzz.yaml")) {
		t.Fatalf("error does not name the input (%T): %v", err, err)
	}
}
