package cli

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/internal/testutil"
)

func coolSnapshot(gen int64, layer, status string, og int64) string {
	o := map[string]interface{}{"apiVersion": "cool.operators.corp/v1beta1", "kind": "CoolOperator",
		"metadata": map[string]interface{}{"name": "cool-operator", "namespace": "default", "generation": gen},
		"spec":     map[string]interface{}{"storageLayer": layer},
		"status": map[string]interface{}{"conditions": []interface{}{map[string]interface{}{"type": "Upgradeable", "status": status,
			"reason": "R", "message": "", "lastTransitionTime": "2024-01-01T00:00:00Z", "observedGeneration": og}}}}
	data, _ := json.Marshal(o)
	return string(data) + "\n"
}

// TestSimulateLiveStdin is issue 11, item 5: `kubectl get -w -o json NAME
// | statuscheck simulate --bundle B -` shows each row as its object
// arrives, and SIGINT ends the run with the summary printed.
func TestSimulateLiveStdin(t *testing.T) {
	h := setupHostile(t)
	cmd := exec.Command(h.bin, "simulate", "--bundle", "testdata/bundles/handshake/none", "--policy", "all", "-")
	cmd.Dir = repoRoot
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr := &testutil.SyncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill() }()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	waitFor := func(prefix string) string {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				require.True(t, ok, "stdout closed before %q; stderr: %s", prefix, stderr.String())
				if strings.HasPrefix(l, prefix) {
					return l
				}
			case <-deadline:
				t.Fatalf("no line %q while the stream stays open; stderr: %s", prefix, stderr.String())
			}
		}
	}
	_, err = stdin.Write([]byte(coolSnapshot(1, "PostgreSQL", "True", 1)))
	require.NoError(t, err)
	waitFor("STEP") // the header, as soon as the first object is read
	_, err = stdin.Write([]byte(coolSnapshot(2, "MariaDB", "True", 1)))
	require.NoError(t, err)
	row := waitFor("1 ")
	assert.Contains(t, row, "user")
	assert.Contains(t, row, "unsafe-approval(naive)")
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	summary := waitFor("1 step,")
	assert.Contains(t, summary, "3 violations")
	assert.Contains(t, waitFor("  "), "gate at the end: olm") // the summary's next line: it is wrapped for a terminal
	// Exit 0, not a crash: the violation is the historical naive gate's
	// (issue 27, item 6), and a stream that stops with the gate blocked
	// on an outdated True is a warning (the operator may not have caught
	// up yet).
	require.NoError(t, cmd.Wait())
	assert.Contains(t, stderr.String(), "stopped by a signal after 1 step;")
}
