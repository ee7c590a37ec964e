package olm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
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
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/bridge"
	"github.com/statuscheck/statuscheck/pkg/source"
)

// bridgeRun starts the bridge for v1's OperatorCondition, in-process (the
// Runnable) or as `statuscheck bridge`, until the test ends.
func (w *world) bridgeRun(process bool) {
	w.t.Helper()
	if process {
		w.bridgeProcess(w.c.Kubeconfig, "--bundle", w.bundle)
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

// bridgeProcess runs `statuscheck bridge` for v1's OperatorCondition
// against the server kubeconfig names, until the test ends, and checks it
// exits 0 on SIGTERM (it never crashed).
func (w *world) bridgeProcess(kubeconfig string, args ...string) *testutil.SyncBuffer {
	w.t.Helper()
	cmd := exec.Command(testutil.Binary(w.t), append([]string{"bridge", "--kubeconfig", kubeconfig, "-n", w.ns,
		"--operator-condition-name", v1, "--resync", "1s",
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0"}, args...)...)
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
	return stderr
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
// time from the operator's status write to OLM's decision on the
// replacing CSV, 20 times: v2 is held in Pending while the CR says False,
// and each round the operator reports False for another reason; OLM's
// decision is v2's status message, which OLM writes from the condition it
// read (operator-lifecycle-manager v0.46.0
// pkg/controller/operators/olm/operator.go, transitionCSVState:
// "operator is not upgradeable: ..."). It also times OLM's copy into the
// OperatorCondition's status (syncOperatorConditionStatus) on the way,
// and ends with the release: a fresh True until v2 leaves Pending.
func TestBridgeDecisionLatency(t *testing.T) {
	w := newWorld(t, "none")
	w.running(false)
	w.bridgeRun(false)
	w.waitOCStatus(v1, metav1.ConditionTrue)
	gen := w.generation()
	w.reports(metav1.ConditionFalse, "Migrating", gen)
	w.installCSV(v2, "0.2.0", v1)
	w.waitCSV(v2, operatorsv1alpha1.CSVPhasePending, operatorsv1alpha1.CSVReasonOperatorConditionNotUpgradeable)
	ctx := context.Background()
	var toCopy, toDecision []time.Duration
	for i := 0; i < 20; i++ {
		reason := fmt.Sprintf("MigrationStep%d", i)
		start := time.Now()
		w.reports(metav1.ConditionFalse, reason, gen)
		var copied time.Duration
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
			if copied == 0 {
				oc, err := w.c.OLM.OperatorsV2().OperatorConditions(w.ns).Get(ctx, v1, metav1.GetOptions{})
				if c := (*metav1.Condition)(nil); err == nil {
					c = meta.FindStatusCondition(oc.Status.Conditions, "Upgradeable")
					if c != nil && c.Reason == reason && c.ObservedGeneration == oc.Generation {
						copied = time.Since(start)
					}
				}
			}
			csv, err := w.c.OLM.OperatorsV1alpha1().ClusterServiceVersions(w.ns).Get(ctx, v2, metav1.GetOptions{})
			return err == nil && csv.Status.Phase == operatorsv1alpha1.CSVPhasePending && strings.Contains(csv.Status.Message, reason), nil
		})
		require.NoError(t, err, "OLM's decision on %s for %s; CSVs: %s", v2, reason, w.describeCSVs())
		toDecision = append(toDecision, time.Since(start))
		if copied == 0 {
			copied = toDecision[len(toDecision)-1]
		}
		toCopy = append(toCopy, copied)
	}
	start := time.Now()
	w.reports(metav1.ConditionTrue, "Idle", gen)
	w.waitUntil("v2 to leave Pending", 60*time.Second, func() bool {
		p, _ := w.csvPhase(v2)
		return p != string(operatorsv1alpha1.CSVPhasePending)
	})
	release := time.Since(start)
	stat := func(d []time.Duration) string {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return fmt.Sprintf("median %s, worst %s", d[len(d)/2].Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond))
	}
	t.Logf("from the CR's status write, 20 writes: to OLM's copy in the OperatorCondition %s; to OLM's decision on %s (its Pending message) %s; the release (fresh True to v2 leaving Pending) %s",
		stat(toCopy), v2, stat(toDecision), release.Round(time.Millisecond))
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
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

// TestBridgeSurvivesACutApiserver runs `statuscheck bridge` (the process,
// as its pod would) through a proxy and cuts it off from the apiserver
// while v2 is held: during the cut the operator reports a fresh True and
// the user then changes the spec, so the True the bridge never read is
// outdated by the time it can read again. OLM keeps holding v2 throughout
// (the bridge wrote nothing it had not read), the bridge comes back on
// its own and writes the outdated verdict, and v2 goes ahead only after
// the operator's fresh True; the process exits 0 on SIGTERM at the end.
func TestBridgeSurvivesACutApiserver(t *testing.T) {
	w := newWorld(t, "none")
	w.running(false)
	kc, err := clientcmd.LoadFromFile(w.c.Kubeconfig)
	require.NoError(t, err)
	var host string
	for _, cl := range kc.Clusters {
		host = strings.TrimPrefix(cl.Server, "https://")
	}
	px := testutil.NewProxy(t, host)
	w.bridgeProcess(testutil.KubeconfigVia(t, w.c.Kubeconfig, px.Addr()), "--bundle", w.bundle)
	w.waitOCSpec(v1, metav1.ConditionTrue, bridge.ReasonUpgradeable)

	gen := w.generation()
	w.reports(metav1.ConditionFalse, "Migrating", gen)
	w.waitOCSpec(v1, metav1.ConditionFalse, "Migrating")
	w.installCSV(v2, "0.2.0", v1)
	w.waitCSV(v2, operatorsv1alpha1.CSVPhasePending, operatorsv1alpha1.CSVReasonOperatorConditionNotUpgradeable)

	px.Cut()
	w.reports(metav1.ConditionTrue, "Idle", gen) // fresh, but the bridge cannot read it
	time.Sleep(1500 * time.Millisecond)
	gen = w.userSets("MariaDB") // now the True is outdated
	time.Sleep(3 * time.Second) // three resyncs of the bridge fail
	phase, reason := w.csvPhase(v2)
	assert.Equal(t, "Pending/OperatorConditionNotUpgradeable", phase+"/"+reason, "held while the bridge is cut off")
	oc, err := w.c.OLM.OperatorsV2().OperatorConditions(w.ns).Get(context.Background(), v1, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "Migrating", meta.FindStatusCondition(oc.Spec.Conditions, "Upgradeable").Reason, "nothing written while cut off")

	px.Restore()
	w.waitOCSpec(v1, metav1.ConditionFalse, bridge.ReasonOutdated) // it never wrote the True it did not read
	phase, _ = w.csvPhase(v2)
	assert.Equal(t, string(operatorsv1alpha1.CSVPhasePending), phase)
	w.reports(metav1.ConditionTrue, "Idle", gen)
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
}

// TestGeneratedBridgeRunsAsItsServiceAccount installs, on real OLM, a
// bundle `statuscheck generate --bridge` wrote (RequestAck with a spec
// request, the most the bridge needs), and runs `statuscheck bridge` as
// the sidecar would: as the deployment's service account (impersonated:
// the tier has no kubelet), with no flag naming the status source, so it
// reads the running CSV's annotation. What OLM grants it (the Role the
// OperatorCondition controller makes) and what generate added to the
// CSV's permissions (which the InstallPlan's Role carries) are all it
// has, and they are enough: the request, the answer and the upgrade go
// through, and nothing is forbidden once it runs. It is started before
// the CSV and its RBAC exist, as a sidecar may be: it says why it cannot
// read the status source yet and retries, instead of crash-looping.
func TestGeneratedBridgeRunsAsItsServiceAccount(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join(testutil.RepoRoot(), "testdata", "bundles", "handshake", "request-spec"))))
	out, err := exec.Command(testutil.Binary(t), "generate", "-w", "--bridge", "quay.io/statuscheck/statuscheck:v0.1.0", dir).CombinedOutput()
	require.NoError(t, err, "%s", out)
	w := newWorldAt(t, dir)
	require.Len(t, w.csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.Containers, 2, "the sidecar is in the CSV")
	kc, err := clientcmd.LoadFromFile(w.c.Kubeconfig)
	require.NoError(t, err)
	sa := w.csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.ServiceAccountName
	for _, ai := range kc.AuthInfos {
		ai.Impersonate = "system:serviceaccount:" + w.ns + ":" + sa
	}
	asSA := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, asSA))
	stderr := w.bridgeProcess(asSA)
	w.waitUntil("the bridge to say it cannot read the status source yet", 30*time.Second, func() bool {
		return strings.Contains(stderr.String(), "cannot read the status source yet; retrying")
	})
	w.running(false)

	w.waitOCSpec(v1, metav1.ConditionFalse, bridge.ReasonNoRequest)
	w.installCSV(v2, "0.2.0", v1)
	w.waitOCSpec(v1, metav1.ConditionFalse, bridge.ReasonUnanswered)
	cr, err := w.cr().Get(context.Background(), w.name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1", cr.Object["spec"].(map[string]interface{})["upgradeRequest"], "the bridge's request, patched as the service account")
	w.reports(metav1.ConditionTrue, "UpgradeRequestAccepted", cr.GetGeneration())
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
	_, running, found := strings.Cut(stderr.String(), "wrote Upgradeable")
	require.True(t, found, "stderr:\n%s", stderr)
	assert.NotContains(t, strings.ToLower(running), "forbidden", "the service account's RBAC is enough")
}
