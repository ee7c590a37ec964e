package admission

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/internal/testutil"
)

// runGate runs `statuscheck gate BUNDLE ARGS... --kubeconfig K` in the
// repository's root (bundle may be relative to it) and returns its exit
// code, stdout and stderr.
func runGate(t *testing.T, bundle string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, testutil.Binary(t), append(append([]string{"gate", bundle}, args...), "--kubeconfig", srv.Kubeconfig)...)
	cmd.Dir = testutil.RepoRoot()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("running statuscheck gate: %v", err)
	return -1, "", ""
}

// TestGate: `statuscheck gate testdata/bundles/protected -n NS` reads the
// live CR: exit 0 on a fresh True (and on a missing CR: whenAbsent Allow),
// 1 on False or an outdated True with the reason on stderr, 2 when the
// CRD is not installed, unless --operator-deployment names a Deployment
// that does not exist either (a first install, as at Argo CD's first
// sync): then 0, with a note on stderr naming the Deployment.
func TestGate(t *testing.T) {
	t.Parallel()
	uninstalled := bundle(t, "absent.cool.operators.corp", "")
	tests := []struct {
		name   string
		bundle string
		// cr is the CR's state (nil: no CR).
		cr *crState
		// deployment, when set, is passed as --operator-deployment NS/deployment.
		deployment string
		exit       int
		stdout     string
		stderr     []string
		noStderr   bool
	}{
		{name: "fresh True", bundle: protected, cr: &fresh, exit: 0,
			stdout: "allows the upgrade", noStderr: true},
		{name: "False", bundle: protected, cr: &held, exit: 1,
			stderr: []string{"statuscheck: the upgrade is held: CoolOperator ", "/cool-operator: ", "Upgradeable", "reason Migrating", `message "moving data to MariaDB"`}},
		{name: "outdated True", bundle: protected, exit: 1,
			cr:     &crState{generation: 2, conditions: []cond{{Type: "Upgradeable", Status: "True", Reason: "Idle", Message: "ready", ObservedGeneration: 1}}},
			stderr: []string{"statuscheck: the upgrade is held: CoolOperator ", "generation"}},
		{name: "no CR, whenAbsent Allow", bundle: protected, exit: 0, stdout: "allows the upgrade", noStderr: true},
		{name: "CRD not installed", bundle: uninstalled, exit: 2,
			stderr: []string{"absent.cool.operators.corp/v1beta1", "is the CRD of CoolOperator installed?"}},
		{name: "CRD not installed, the operator's Deployment there: an upgrade", bundle: uninstalled, deployment: deployment, exit: 2,
			stderr: []string{"is the CRD of CoolOperator installed?", "/" + deployment + " exists, so this is an upgrade"}},
		{name: "CRD not installed, no operator Deployment: a first install", bundle: uninstalled, deployment: "not-installed", exit: 0,
			stdout: "allows the upgrade: a first install: Deployment ",
			stderr: []string{"statuscheck: note: read as a first install because Deployment ", "/not-installed does not exist", "fix --operator-deployment"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, "gate", group)
			if tt.cr != nil {
				f.setCR(t, *tt.cr)
			}
			args := []string{"-n", f.ns}
			if tt.deployment != "" {
				args = append(args, "--operator-deployment", f.ns+"/"+tt.deployment)
			}
			exit, stdout, stderr := runGate(t, tt.bundle, args...)
			t.Logf("exit %d, stdout %q, stderr %q", exit, stdout, stderr)
			assert.Equal(t, tt.exit, exit)
			assert.Contains(t, stdout, tt.stdout)
			for _, s := range tt.stderr {
				assert.Contains(t, stderr, s)
			}
			if tt.noStderr {
				assert.Empty(t, stderr)
			}
		})
	}
}

// TestGateWaits: with --timeout the gate reads the CR every --interval
// (2 s) until it allows: it exits 0 once the CR turns a fresh True.
func TestGateWaits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "gate-wait", group)
	f.setCR(t, held)
	begin := time.Now()
	var (
		wrote    time.Duration
		writeErr error
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(time.Second)
		writeErr = f.writeCR(fresh)
		wrote = time.Since(begin)
	}()
	exit, stdout, stderr := runGate(t, protected, "-n", f.ns, "--timeout", "20s")
	took := time.Since(begin)
	<-done
	require.NoError(t, writeErr)
	t.Logf("fresh True written after %v; gate exited %d after %v: %q %q", wrote.Round(time.Millisecond), exit, took.Round(time.Millisecond), stdout, stderr)
	require.Equal(t, 0, exit, stderr)
	assert.Contains(t, stdout, "allows the upgrade")
	assert.Less(t, took, 10*time.Second, "one or two --interval after the write")
}
