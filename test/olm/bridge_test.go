package olm

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/bridge"
	"github.com/statuscheck/statuscheck/pkg/source"
)

// bridgeRun starts the bridge for v1's OperatorCondition, in-process (the
// Runnable) or as `statuscheck bridge`, until the test ends.
func (w *world) bridgeRun(process bool) {
	w.t.Helper()
	if process {
		cmd := exec.Command(testutil.Binary(w.t), "bridge", "--kubeconfig", w.c.Kubeconfig, "-n", w.ns,
			"--operator-condition-name", v1, "--bundle", w.bundle, "--resync", "1s",
			"--metrics-bind-address", "0", "--health-probe-bind-address", "0")
		stderr := &testutil.SyncBuffer{}
		cmd.Stderr = stderr
		cmd.Env = append(os.Environ(), "STATUSCHECK_DEBUG_PEAK_MEMORY=1")
		require.NoError(w.t, cmd.Start())
		started := time.Now()
		w.t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				assert.NoError(w.t, err, "exit 0 on SIGTERM; stderr:\n%s", stderr)
				// The binary's own VmHWM (a child's rusage counts this test
				// process's pages too; cmd/statuscheck, peakMemoryEnv).
				if m := regexp.MustCompile(`peak memory (\d+) kB`).FindStringSubmatch(stderr.String()); m != nil {
					kb, _ := strconv.Atoi(m[1])
					w.t.Logf("statuscheck bridge: CPU %s over %s, peak RSS %d MiB",
						(cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Round(time.Millisecond), time.Since(started).Round(time.Second), kb>>10)
				}
			case <-time.After(15 * time.Second):
				_ = cmd.Process.Kill()
				w.t.Errorf("no exit after SIGTERM; stderr:\n%s", stderr)
			}
		})
		return
	}
	sctx, err := source.FromBundle(w.bundle)
	require.NoError(w.t, err)
	r, err := bridge.NewWithClient(w.c.Dyn, bridge.Options{Source: sctx.Source, Tokens: sctx.Tokens, Resource: coolGVR, Namespaced: true,
		Namespace: w.ns, ConditionName: v1, Resync: time.Second, Log: testr.New(w.t), Registerer: prometheus.NewRegistry()})
	require.NoError(w.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	w.t.Cleanup(func() {
		cancel()
		assert.NoError(w.t, <-done)
	})
}

// waitOCSpec waits until the bridge has written Upgradeable=status with
// reason into the OperatorCondition's spec.
func (w *world) waitOCSpec(csv string, status metav1.ConditionStatus, reason string) {
	w.t.Helper()
	w.waitUntil("the bridge's Upgradeable="+string(status)+" ("+reason+") in "+csv, 60*time.Second, func() bool {
		oc, err := w.c.OLM.OperatorsV2().OperatorConditions(w.ns).Get(context.Background(), csv, metav1.GetOptions{})
		if err != nil {
			return false
		}
		c := meta.FindStatusCondition(oc.Spec.Conditions, "Upgradeable")
		return c != nil && c.Status == status && c.Reason == reason
	})
}

// TestBridgeHoldsAndReleases is issue 19 on real OLM v0.46.0: the operator
// writes only its own CR (no mirror); the bridge writes the
// OperatorCondition; OLM holds the replacement in Pending while the CR's
// condition is outdated, then False, and releases it after a fresh True.
// It runs with the bridge in-process (the Runnable) and as a separate
// process (statuscheck bridge), and logs the time from the operator's
// fresh True to OLM's decision to go ahead.
func TestBridgeHoldsAndReleases(t *testing.T) {
	for _, process := range []bool{false, true} {
		name := "in-process"
		if process {
			name = "statuscheck bridge"
		}
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, "none")
			w.running(false)
			w.bridgeRun(process)
			w.waitOCSpec(v1, metav1.ConditionTrue, bridge.ReasonUpgradeable)
			w.waitOCStatus(v1, metav1.ConditionTrue)

			gen := w.userSets("MariaDB") // the CR's True is outdated now
			w.waitOCSpec(v1, metav1.ConditionFalse, bridge.ReasonOutdated)
			w.waitOCStatus(v1, metav1.ConditionFalse)
			w.installCSV(v2, "0.2.0", v1)
			w.waitCSV(v2, operatorsv1alpha1.CSVPhasePending, operatorsv1alpha1.CSVReasonOperatorConditionNotUpgradeable)
			w.reports(metav1.ConditionFalse, "Migrating", gen)
			w.waitOCSpec(v1, metav1.ConditionFalse, "Migrating")
			time.Sleep(2 * time.Second) // OLM keeps holding
			phase, reason := w.csvPhase(v2)
			assert.Equal(t, "Pending/OperatorConditionNotUpgradeable", phase+"/"+reason, "held while the CR says False")

			start := time.Now()
			w.reports(metav1.ConditionTrue, "Idle", gen)
			w.waitUntil("v2 to leave Pending", 60*time.Second, func() bool {
				p, _ := w.csvPhase(v2)
				return p != string(operatorsv1alpha1.CSVPhasePending)
			})
			t.Logf("from the CR's fresh True to OLM's go-ahead: %s", time.Since(start).Round(time.Millisecond))
			w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
		})
	}
}

// TestBridgeDecisionLatency measures, with the bridge in-process, the
// time from the operator's status write to OLM's decision 20 times: the
// CR's False holding v2, then its fresh True releasing it, one upgrade
// per round is too slow, so a round is OLM's copy of the bridge's write
// (syncOperatorConditionStatus), which is what OLM's gate reads.
func TestBridgeDecisionLatency(t *testing.T) {
	w := newWorld(t, "none")
	w.running(false)
	w.bridgeRun(false)
	w.waitOCStatus(v1, metav1.ConditionTrue)
	gen := w.generation()
	var took []time.Duration
	for i := 0; i < 20; i++ {
		status, reason := metav1.ConditionFalse, "Migrating"
		if i%2 == 1 {
			status, reason = metav1.ConditionTrue, "Idle"
		}
		start := time.Now()
		w.reports(status, reason, gen)
		w.waitOCStatus(v1, status)
		took = append(took, time.Since(start))
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	t.Logf("from the CR's status write to OLM's copy in the OperatorCondition, 20 writes: median %s, worst %s",
		took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
	assert.Less(t, took[len(took)-1], 30*time.Second)
}

// TestBridgeRequestAck is lock flow B on real OLM: with the bridge and a
// RequestAck handshake (spec request), OLM holds v2 until the operator
// answers the bridge's request with a fresh True; a spec change after the
// answer is the operator's to defer, and does not hold v2 again.
func TestBridgeRequestAck(t *testing.T) {
	w := newWorld(t, "request-spec")
	w.running(false)
	w.bridgeRun(false)
	w.waitOCSpec(v1, metav1.ConditionFalse, bridge.ReasonNoRequest)
	w.installCSV(v2, "0.2.0", v1)
	w.waitOCSpec(v1, metav1.ConditionFalse, bridge.ReasonUnanswered)
	w.waitCSV(v2, operatorsv1alpha1.CSVPhasePending, operatorsv1alpha1.CSVReasonOperatorConditionNotUpgradeable)
	cr, err := w.cr().Get(context.Background(), w.name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1", cr.Object["spec"].(map[string]interface{})["upgradeRequest"], "the bridge's request")
	time.Sleep(2 * time.Second)
	phase, _ := w.csvPhase(v2)
	assert.Equal(t, string(operatorsv1alpha1.CSVPhasePending), phase, "no replacement without the operator's answer")
	w.reports(metav1.ConditionTrue, "UpgradeRequestAccepted", cr.GetGeneration())
	w.userSets("MariaDB") // after the answer: deferred by the operator
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
}
