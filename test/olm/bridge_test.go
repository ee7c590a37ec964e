package olm

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/bridge"
	"github.com/statuscheck/statuscheck/pkg/bridge/controller"
	"github.com/statuscheck/statuscheck/pkg/bridge/sidecar"
	"github.com/statuscheck/statuscheck/pkg/contract"
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
	r, err := controller.NewWithClient(w.c.Dyn, controller.Options{Source: sctx.Source, Tokens: sctx.Tokens, Resource: coolGVR, Namespaced: true,
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
func (w *world) bridgeProcess(kubeconfig string, args ...string) *bridgeProc {
	w.t.Helper()
	return w.startBridge(kubeconfig, nil, append([]string{"-n", w.ns, "--operator-condition-name", v1}, args...)...)
}

// bridgeProc is a running `statuscheck bridge`.
type bridgeProc struct {
	w      *world
	cmd    *exec.Cmd
	stderr *testutil.SyncBuffer
	// metrics and probe are where it serves /metrics and /readyz.
	metrics, probe string
	// exited is closed once the process has ended; err is then its exit
	// (nil: exit 0) and end when it ended.
	exited chan struct{}
	err    error
	end    time.Time
	term   sync.Once
}

// startBridge runs `statuscheck bridge` against the server kubeconfig
// names with env added to the test's environment and args after the
// tier's flags (--resync 1s, metrics and probes on free local ports),
// until the test ends, and checks it exits 0 on SIGTERM (it never
// crashed).
func (w *world) startBridge(kubeconfig string, env []string, args ...string) *bridgeProc {
	w.t.Helper()
	p := &bridgeProc{w: w, stderr: &testutil.SyncBuffer{}, metrics: testutil.FreeAddr(w.t), probe: testutil.FreeAddr(w.t), exited: make(chan struct{})}
	p.cmd = exec.Command(testutil.Binary(w.t), append([]string{"bridge", "--kubeconfig", kubeconfig, "--resync", "1s",
		"--metrics-bind-address", p.metrics, "--health-probe-bind-address", p.probe}, args...)...)
	p.cmd.Stderr = p.stderr
	p.cmd.Env = append(append(os.Environ(), "STATUSCHECK_DEBUG_PEAK_MEMORY=1"), env...)
	require.NoError(w.t, p.cmd.Start())
	started := time.Now()
	go func() {
		p.err = p.cmd.Wait()
		p.end = time.Now()
		close(p.exited)
	}()
	w.t.Cleanup(func() {
		assert.NoError(w.t, p.stop(), "exit 0 on SIGTERM; stderr:\n%s", p.stderr)
		// The binary's own VmHWM (a child's rusage counts this test
		// process's pages too; internal/cli, PeakMemoryEnv).
		if m := regexp.MustCompile(`peak memory (\d+) kB`).FindStringSubmatch(p.stderr.String()); m != nil && p.cmd.ProcessState != nil {
			kb, _ := strconv.Atoi(m[1])
			w.t.Logf("statuscheck bridge: CPU %s over %s, peak RSS %d MiB",
				(p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()).Round(time.Millisecond), p.end.Sub(started).Round(time.Second), kb>>10)
		}
	})
	return p
}

// terminate sends SIGTERM once, as the kubelet does to a pod that stops
// (a second signal makes controller-runtime's handler exit 1 at once).
func (p *bridgeProc) terminate() {
	p.term.Do(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
	})
}

// stop sends SIGTERM and waits for the exit: nil is exit 0.
func (p *bridgeProc) stop() error {
	p.terminate()
	select {
	case <-p.exited:
		return p.err
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("no exit within 15 s of SIGTERM (killed: %v)", p.err)
	}
}

// alive reports whether the process has not ended.
func (p *bridgeProc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// metric is the sum of a metric's series at the process's /metrics (0
// while it serves none).
func (p *bridgeProc) metric(name string) float64 {
	resp, err := http.Get("http://" + p.metrics + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), name)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		f := strings.Fields(rest)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// waitSyncs waits until the process has decided n more times
// (statuscheck_bridge_decisions_total, which every version of the bridge
// counts once per sync that read and decided). A sync writes after it
// counts: with n >= 2, what the first n-1 of them wrote is written.
func (p *bridgeProc) waitSyncs(n int) {
	p.w.t.Helper()
	const decisions = "statuscheck_bridge_decisions_total"
	from := p.metric(decisions)
	p.w.waitUntil(fmt.Sprintf("%d more decisions of the bridge", n), 30*time.Second, func() bool { return p.metric(decisions) >= from+float64(n) })
}

// waitSynced waits until the process has ended n more syncs without an
// error, by statuscheck_bridge_last_sync_timestamp_seconds: a sync that
// yields to another writer decides nothing, so waitSyncs cannot count it.
func (p *bridgeProc) waitSynced(n int) {
	p.w.t.Helper()
	const lastSync = "statuscheck_bridge_last_sync_timestamp_seconds"
	since := float64(time.Now().UnixNano()) / 1e9
	for i := 0; i < n; i++ {
		p.w.waitUntil(fmt.Sprintf("sync %d of %d of the bridge", i+1, n), 30*time.Second, func() bool { return p.metric(lastSync) > since })
		since = p.metric(lastSync)
	}
}

// entries lists the Upgradeable entries of a CSV's OperatorCondition's
// spec.conditions, as read now (nil when it does not exist).
func (w *world) entries(csv string) []metav1.Condition {
	w.t.Helper()
	oc, err := w.c.OLM.OperatorsV2().OperatorConditions(w.ns).Get(context.Background(), csv, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	var out []metav1.Condition
	for _, c := range oc.Spec.Conditions {
		if c.Type == "Upgradeable" {
			out = append(out, c)
		}
	}
	return out
}

// waitEntry waits until the (first) Upgradeable entry of a CSV's
// OperatorCondition's spec is one ok accepts, and returns it.
func (w *world) waitEntry(csv, what string, ok func(metav1.Condition) bool) metav1.Condition {
	w.t.Helper()
	var got metav1.Condition
	w.waitUntil(what+" in "+csv, 60*time.Second, func() bool {
		es := w.entries(csv)
		if len(es) == 0 || !ok(es[0]) {
			return false
		}
		got = es[0]
		return true
	})
	return got
}

// waitOCSpec waits until the bridge has written Upgradeable=status with
// reason into the OperatorCondition's spec.
func (w *world) waitOCSpec(csv string, status metav1.ConditionStatus, reason string) {
	w.t.Helper()
	w.waitEntry(csv, "the bridge's Upgradeable="+string(status)+" ("+reason+")", func(c metav1.Condition) bool {
		return c.Status == status && c.Reason == reason
	})
}

// installHeld installs v2, replacing v1, and waits until OLM holds it at
// its gate on a condition whose message contains why.
func (w *world) installHeld(why string) {
	w.t.Helper()
	w.installCSV(v2, "0.2.0", v1)
	w.waitHeld(v2, why)
}

// waitHeld waits until OLM holds csv at its gate
// (Pending/OperatorConditionNotUpgradeable) on a condition whose message
// contains why: OLM writes the message from the condition it read
// (transitionCSVState: "operator is not upgradeable: ...").
func (w *world) waitHeld(csv, why string) {
	w.t.Helper()
	w.waitUntil(fmt.Sprintf("OLM to hold %s on %q", csv, why), 90*time.Second, func() bool {
		c, err := w.c.OLM.OperatorsV1alpha1().ClusterServiceVersions(w.ns).Get(context.Background(), csv, metav1.GetOptions{})
		return err == nil && c.Status.Phase == operatorsv1alpha1.CSVPhasePending &&
			c.Status.Reason == operatorsv1alpha1.CSVReasonOperatorConditionNotUpgradeable && strings.Contains(c.Status.Message, why)
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
// its sidecar would run in the pod of the Deployment OLM made: as the
// deployment's service account (impersonated: the tier has no kubelet),
// with the container's environment as the kubelet would give it (OLM's
// OPERATOR_CONDITION_NAME, and the downward API's namespace and status
// source: the pod template's copy of the CSV's annotation), and no flag
// naming the status source or the OperatorCondition. What OLM grants it
// (the Role the OperatorCondition controller makes) and what generate
// added to the CSV's permissions (which the InstallPlan's Role carries)
// are all it has, and they are enough: the request, the answer and the
// upgrade go through, and nothing is forbidden. Each of them is needed:
// with a rule generate added taken out, or without the downward API's
// status source (the bridge then reads the running CSV, which no rule
// lets it get any more), the apiserver refuses the service account what
// the bridge asks (a SubjectAccessReview), and the bridge fails on it,
// writes nothing and keeps retrying instead of crash-looping.
func TestGeneratedBridgeRunsAsItsServiceAccount(t *testing.T) {
	dir := copyBundle(t, "request-spec")
	out, err := exec.Command(testutil.Binary(t), "generate", "-w", "--bridge", "quay.io/statuscheck/statuscheck:v0.1.0", dir).CombinedOutput()
	require.NoError(t, err, "%s", out)
	added := addedRules(readCSV(t, handshakeBundle("request-spec")), readCSV(t, dir))
	require.NotEmpty(t, added, "generate grants the bridge what the operator's own rules lack")

	t.Run("as generated", func(t *testing.T) {
		w, p := generatedBridge(t, dir, nil, "")
		w.waitOCSpec(v1, metav1.ConditionFalse, bridge.ReasonNoRequest)
		assert.Contains(t, p.stderr.String(), `from="$`+sidecar.EnvStatusSource+`"`, "the status source from the downward API")
		w.installCSV(v2, "0.2.0", v1)
		w.waitOCSpec(v1, metav1.ConditionFalse, bridge.ReasonUnanswered)
		token, _ := w.request()
		assert.Equal(t, "1", token, "the bridge's request, patched as the service account")
		w.reports(metav1.ConditionTrue, "UpgradeRequestAccepted", w.generation())
		w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
		assert.NotContains(t, strings.ToLower(p.stderr.String()), "forbidden", "the service account's RBAC is enough")
	})
	// refused checks that the apiserver refuses the service account each
	// of attrs (a SubjectAccessReview: the RBAC at hand, not the bridge,
	// decides), that the bridge failed on it three times (it retried) in error
	// lines that name the resource, that it still runs (no crash loop)
	// and that it wrote nothing.
	refused := func(t *testing.T, w *world, p *bridgeProc, attrs ...authorizationv1.ResourceAttributes) {
		t.Helper()
		sa := w.csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.ServiceAccountName
		for _, a := range attrs {
			a.Namespace = w.ns
			sar, err := w.c.Kube.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: "system:serviceaccount:" + w.ns + ":" + sa, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + w.ns, "system:authenticated"},
				ResourceAttributes: &a}}, metav1.CreateOptions{})
			require.NoError(t, err)
			require.False(t, sar.Status.Allowed, "%s may %s %s %q: %s", sa, a.Verb, a.Resource, a.Name, sar.Status.Reason)
		}
		resource := attrs[0].Resource
		err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			n := 0
			for _, line := range strings.Split(p.stderr.String(), "\n") {
				if strings.HasPrefix(line, "E") && strings.Contains(line, resource) {
					n++
				}
			}
			return n >= 3, nil
		})
		require.NoError(t, err, "the bridge failed on %s three times; stderr:\n%s", resource, p.stderr)
		assert.True(t, p.alive(), "it retries instead of crash-looping; stderr:\n%s", p.stderr)
		assert.Empty(t, w.entries(v1), "nothing written")
	}
	t.Run("without $"+sidecar.EnvStatusSource, func(t *testing.T) {
		w, p := generatedBridge(t, dir, nil, sidecar.EnvStatusSource)
		refused(t, w, p, authorizationv1.ResourceAttributes{Verb: "get", Group: contract.CSVResource.Group, Resource: contract.CSVResource.Resource, Name: v1})
		assert.Contains(t, p.stderr.String(), "cannot read the status source yet; retrying")
		assert.Contains(t, p.stderr.String(), "forbidden")
	})
	for _, r := range added {
		t.Run("without "+sidecar.Describe(r), func(t *testing.T) {
			w, p := generatedBridge(t, dir, func(csv *operatorsv1alpha1.ClusterServiceVersion) {
				for i := range csv.Spec.InstallStrategy.StrategySpec.Permissions {
					perm := &csv.Spec.InstallStrategy.StrategySpec.Permissions[i]
					perm.Rules = slices.DeleteFunc(perm.Rules, func(x rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(x, r) })
				}
			}, "")
			var attrs []authorizationv1.ResourceAttributes
			for _, verb := range r.Verbs {
				a := authorizationv1.ResourceAttributes{Verb: verb, Group: r.APIGroups[0], Resource: r.Resources[0]}
				if len(r.ResourceNames) > 0 {
					a.Name = r.ResourceNames[0]
				}
				attrs = append(attrs, a)
			}
			refused(t, w, p, attrs...)
		})
	}
}

// addedRules lists the rules of to's permissions that from's do not have.
func addedRules(from, to *operatorsv1alpha1.ClusterServiceVersion) []rbacv1.PolicyRule {
	var had, out []rbacv1.PolicyRule
	for _, p := range from.Spec.InstallStrategy.StrategySpec.Permissions {
		had = append(had, p.Rules...)
	}
	for _, p := range to.Spec.InstallStrategy.StrategySpec.Permissions {
		for _, r := range p.Rules {
			if !slices.ContainsFunc(had, func(h rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(h, r) }) {
				out = append(out, r)
			}
		}
	}
	return out
}

// generatedBridge installs v1 of the generated bundle at dir (its CSV
// first changed by adjust, when given) and starts its sidecar's
// `statuscheck bridge` as the pod would run it: as the deployment's
// service account (impersonated), with the container's environment
// resolved from the Deployment OLM made (downwardEnv) but for the
// variable leave, and none of the flags that name what the environment
// says.
func generatedBridge(t *testing.T, dir string, adjust func(*operatorsv1alpha1.ClusterServiceVersion), leave string) (*world, *bridgeProc) {
	t.Helper()
	w := newWorldAt(t, dir)
	if adjust != nil {
		adjust(w.csv)
	}
	decl, err := sidecar.Declared(w.csv)
	require.NoError(t, err)
	require.NotNil(t, decl, "the bridge is declared in the CSV")
	w.running(false)
	dep, err := w.c.Kube.AppsV1().Deployments(w.ns).Get(context.Background(), decl.Deployment, metav1.GetOptions{})
	require.NoError(t, err, "the Deployment OLM made")
	env := slices.DeleteFunc(downwardEnv(t, dep, decl.Container), func(kv string) bool { return strings.HasPrefix(kv, leave+"=") })
	require.Contains(t, env, controller.EnvOperatorConditionName+"="+v1, "OLM's variable")

	kc, err := clientcmd.LoadFromFile(w.c.Kubeconfig)
	require.NoError(t, err)
	for _, ai := range kc.AuthInfos {
		ai.Impersonate = "system:serviceaccount:" + w.ns + ":" + dep.Spec.Template.Spec.ServiceAccountName
	}
	asSA := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, asSA))
	return w, w.startBridge(asSA, env)
}

// downwardEnv is the environment the kubelet gives a container of a
// Deployment's pods (kubernetes pkg/kubelet/kubelet_pods.go,
// makeEnvironmentVariables and podFieldSelectorRuntimeValue): each value
// as it is, and the downward API's fields of the pod, which are its
// template's (the pod's namespace is the Deployment's). What the tier
// cannot give as the kubelet would (the pod's name or IP, a $(VAR)
// reference to expand) fails the test.
func downwardEnv(t *testing.T, dep *appsv1.Deployment, container string) []string {
	t.Helper()
	i := slices.IndexFunc(dep.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == container })
	require.GreaterOrEqual(t, i, 0, "container %s in Deployment %s", container, dep.Name)
	field := regexp.MustCompile(`^metadata\.(annotations|labels)\['(.+)'\]$`)
	var out []string
	for _, e := range dep.Spec.Template.Spec.Containers[i].Env {
		switch {
		case e.ValueFrom == nil && !strings.Contains(e.Value, "$("):
			out = append(out, e.Name+"="+e.Value)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			out = append(out, e.Name+"="+dep.Namespace)
		case e.ValueFrom.FieldRef != nil && field.MatchString(e.ValueFrom.FieldRef.FieldPath):
			m := field.FindStringSubmatch(e.ValueFrom.FieldRef.FieldPath)
			of := dep.Spec.Template.Annotations
			if m[1] == "labels" {
				of = dep.Spec.Template.Labels
			}
			out = append(out, e.Name+"="+of[m[2]])
		default:
			t.Fatalf("%s of container %s: the tier cannot give %q %v", e.Name, container, e.Value, e.ValueFrom)
		}
	}
	return out
}
