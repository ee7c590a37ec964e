package olm

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/statuscheck/statuscheck/pkg/bridge"
	"github.com/statuscheck/statuscheck/pkg/bridge/controller"
)

// Issue 25's defects 1 to 6 on real OLM v0.46.0, each with the bridge as
// a process (`statuscheck bridge`) and OLM's own decision on the
// replacement asserted: v2 held at OLM's gate while the CR does not
// allow, released after a fresh True. Each fails on the bridge before the
// issue (run the tier with STATUSCHECK_BINARY set to a binary of the
// earlier code); each checks first what that bridge got wrong, so that it
// fails there and then rather than at a timeout.

// request is the bridge's request as the CR holds it: the token at
// spec.upgradeRequest ("" when none) and the record the bridge keeps
// beside it (bridge.AnnotationRequest; nil when none).
func (w *world) request() (string, *bridge.RequestRecord) {
	w.t.Helper()
	cr, err := w.cr().Get(context.Background(), w.name, metav1.GetOptions{})
	require.NoError(w.t, err)
	token, _, _ := unstructured.NestedString(cr.Object, "spec", "upgradeRequest")
	return token, bridge.RecordOf(cr)
}

// entryHistory watches a CSV's OperatorCondition from now on and keeps
// the status of its spec's Upgradeable entry after every write that
// changed it (a watch sees every write, where sampling could miss one);
// stop ends the watch and returns the statuses, the one it started from
// first.
func (w *world) entryHistory(csv string) (stop func() []metav1.ConditionStatus) {
	w.t.Helper()
	oc := w.oc(csv)
	var history []metav1.ConditionStatus
	keep := func(oc *operatorsv2.OperatorCondition) {
		if c := meta.FindStatusCondition(oc.Spec.Conditions, "Upgradeable"); c != nil && (len(history) == 0 || history[len(history)-1] != c.Status) {
			history = append(history, c.Status)
		}
	}
	keep(oc)
	ctx, cancel := context.WithCancel(context.Background())
	watcher, err := w.c.OLM.OperatorsV2().OperatorConditions(w.ns).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", csv).String(), ResourceVersion: oc.ResourceVersion})
	require.NoError(w.t, err)
	done := make(chan bool)
	go func() {
		for ev := range watcher.ResultChan() {
			if oc, ok := ev.Object.(*operatorsv2.OperatorCondition); ok {
				keep(oc)
			}
		}
		done <- ctx.Err() == nil
	}()
	return func() []metav1.ConditionStatus {
		cancel()
		assert.False(w.t, <-done, "the watch of %s ended before the test did: writes may be missing", csv)
		return history
	}
}

// TestDefect1FreshUnknownHolds: the operator reports a fresh
// Upgradeable=Unknown (HCO does on start-up). OLM's isOperatorUpgradeable
// blocks only on False, so the bridge writes False: OLM holds v2 until
// the operator's fresh True.
func TestDefect1FreshUnknownHolds(t *testing.T) {
	w := newWorld(t, "none")
	w.running(false)
	w.bridgeProcess(w.c.Kubeconfig, "--bundle", w.bundle)
	w.waitOCSpec(v1, metav1.ConditionTrue, bridge.ReasonUpgradeable)

	gen := w.generation()
	w.reports(metav1.ConditionUnknown, "Starting", gen)
	c := w.waitEntry(v1, "the bridge's entry for the fresh Unknown", func(c metav1.Condition) bool { return c.Reason == "Starting" })
	require.Equal(t, metav1.ConditionFalse, c.Status, "a fresh Unknown is written as False: %+v", c)
	w.installHeld("Upgradeable=Unknown")

	w.reports(metav1.ConditionTrue, "Idle", gen)
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
}

// TestDefect2RequestThatDidNotMoveGenerationIsNeverAnswered: RequestAck
// with a spec request at a field the CRD does not declare, so the
// apiserver prunes it and the CR's generation stays. The operator's True
// at that generation, old or written again, is no answer to it: the
// entry says so (UpgradeRequestNotObservable) and OLM holds v2, until an
// admin's override on the OperatorCondition, which OLM honours.
func TestDefect2RequestThatDidNotMoveGenerationIsNeverAnswered(t *testing.T) {
	dir := copyBundle(t, "request-spec")
	file := filepath.Join(dir, "manifests", "cool-operator.clusterserviceversion.yaml")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	pruned := strings.Replace(string(data), `"specPath":".spec.upgradeRequest"`, `"specPath":".spec.notInTheSchema"`, 1)
	require.NotEqual(t, string(data), pruned, "the request moved to a field the CRD does not declare")
	require.NoError(t, os.WriteFile(file, []byte(pruned), 0o644))
	w := newWorldAt(t, dir)
	w.running(false)
	p := w.bridgeProcess(w.c.Kubeconfig, "--bundle", w.bundle)
	w.waitOCSpec(v1, metav1.ConditionFalse, bridge.ReasonNoRequest)
	gen := w.generation()

	w.installCSV(v2, "0.2.0", v1)
	c := w.waitEntry(v1, "the bridge's decision on its request", func(c metav1.Condition) bool {
		return c.Reason != bridge.ReasonNoRequest && c.Reason != bridge.ReasonRequested
	})
	require.Equal(t, bridge.ReasonNotObservable, c.Reason, "%+v", c)
	require.Equal(t, metav1.ConditionFalse, c.Status)
	_, rec := w.request()
	require.NotNil(t, rec, "the request's record on the CR")
	assert.Equal(t, gen, w.generation(), "the apiserver pruned the request: the generation did not move")
	w.waitHeld(v2, "never answered")

	w.reports(metav1.ConditionTrue, "StillIdle", gen) // fresh, at the generation the request did not move
	p.waitSyncs(3)
	es := w.entries(v1)
	require.Len(t, es, 1)
	assert.Equal(t, bridge.ReasonNotObservable, es[0].Reason, "a True at the unchanged generation is no answer: %+v", es[0])
	w.waitHeld(v2, "never answered")

	w.overrides(v1, metav1.ConditionTrue)
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
}

// TestDefect3RequestStateLivesInTheCluster: under RequestAck the request
// is read back from the CR on every sync, so two bridge processes (two
// replicas, or a restart) make one request and agree on the entry, and a
// revert of the request plus a spec change is asked again.
func TestDefect3RequestStateLivesInTheCluster(t *testing.T) {
	t.Run("two bridges make one request and the entry does not flip", func(t *testing.T) {
		w := newWorld(t, "request-spec")
		w.running(false)
		a := w.bridgeProcess(w.c.Kubeconfig, "--bundle", w.bundle)
		b := w.bridgeProcess(w.c.Kubeconfig, "--bundle", w.bundle)
		w.waitOCSpec(v1, metav1.ConditionFalse, bridge.ReasonNoRequest)
		history := w.entryHistory(v1)

		w.installCSV(v2, "0.2.0", v1)
		w.waitOCSpec(v1, metav1.ConditionFalse, bridge.ReasonUnanswered)
		a.waitSyncs(3)
		b.waitSyncs(3)
		const requests = "statuscheck_bridge_upgrade_requests_total"
		token, rec := w.request()
		require.Equal(t, "1", token, "one request, whatever the number of bridges (%v written)", a.metric(requests)+b.metric(requests))
		assert.Equal(t, 1.0, a.metric(requests)+b.metric(requests), "one request written")
		if assert.NotNil(t, rec, "the request's record on the CR") {
			assert.Equal(t, int64(1), rec.Token)
			assert.Equal(t, v2, rec.CSV)
		}
		w.waitHeld(v2, "request 1 unanswered")

		w.reports(metav1.ConditionTrue, "UpgradeRequestAccepted", w.generation())
		w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
		a.waitSyncs(3)
		b.waitSyncs(3)
		got := history()
		assert.Equal(t, []metav1.ConditionStatus{metav1.ConditionFalse, metav1.ConditionTrue}, got, "the entry went True once and never back")
		token, _ = w.request()
		assert.Equal(t, "1", token, "still one request")
		assert.Equal(t, 1.0, a.metric(requests)+b.metric(requests), "still one request written")
	})

	// An admin's override (False) holds v2 at OLM's gate whatever the
	// entry says, so the revert and the spec change land after the answer
	// and before the replacement every time; with the override gone, OLM
	// decides on the entry.
	t.Run("a revert and a spec change before the replacement hold it again", func(t *testing.T) {
		w := newWorld(t, "request-spec")
		w.running(false)
		p := w.bridgeProcess(w.c.Kubeconfig, "--bundle", w.bundle)
		w.waitOCSpec(v1, metav1.ConditionFalse, bridge.ReasonNoRequest)
		w.overrides(v1, metav1.ConditionFalse)
		w.installCSV(v2, "0.2.0", v1)
		w.waitOCSpec(v1, metav1.ConditionFalse, bridge.ReasonUnanswered)
		w.reports(metav1.ConditionTrue, "UpgradeRequestAccepted", w.generation())
		w.waitOCSpec(v1, metav1.ConditionTrue, bridge.ReasonAnswered)
		w.waitHeld(v2, "set by an admin")

		// GitOps puts the spec back as it keeps it (no request), then a
		// user changes it: the operator's True is for neither.
		w.updateCR("argocd-controller", func(cr *unstructured.Unstructured) {
			unstructured.RemoveNestedField(cr.Object, "spec", "upgradeRequest")
		})
		w.userSets("MariaDB")
		p.waitSyncs(3)
		es := w.entries(v1)
		require.Len(t, es, 1)
		require.Equal(t, metav1.ConditionFalse, es[0].Status, "a reverted request is not answered: %+v", es[0])
		token, rec := w.request()
		assert.Equal(t, "2", token, "asked again, with a new token")
		if assert.NotNil(t, rec) {
			assert.Equal(t, int64(2), rec.Token)
		}

		w.writeOC(v1, "kubectl-edit", func(oc *operatorsv2.OperatorCondition) { oc.Spec.Overrides = nil })
		w.waitHeld(v2, "request 2 unanswered")
		w.reports(metav1.ConditionTrue, "UpgradeRequestAccepted", w.generation())
		w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
	})
}

// TestDefect4AnotherWriterIsNotOverwritten: the operator still writes
// its own OperatorCondition (operator-lib's conditions.Set, as HCO does)
// and says False there while its CR says True. The bridge writes
// nothing: it says so (its log, an Event, its other-writer metric,
// /readyz), the entry stays the operator's through its resyncs, and OLM,
// which reads that entry, holds v2 until the operator's own True.
func TestDefect4AnotherWriterIsNotOverwritten(t *testing.T) {
	w := newWorld(t, "none")
	w.running(false)
	w.mirrors(v1, metav1.ConditionFalse, "Migrating")
	p := w.bridgeProcess(w.c.Kubeconfig, "--bundle", w.bundle)
	const yields = "cool-operator also writes OperatorCondition"
	w.waitUntil("the bridge to yield or to write", 60*time.Second, func() bool {
		es := w.entries(v1)
		return strings.Contains(p.stderr.String(), yields) || len(es) > 0 && es[0].Reason == bridge.ReasonUpgradeable
	})
	es := w.entries(v1)
	require.Len(t, es, 1)
	require.Equal(t, "Migrating", es[0].Reason, "the operator's entry, not overwritten: %+v", es[0])
	assert.Contains(t, p.stderr.String(), yields, "the bridge says it yields")

	w.installHeld("Migrating")
	p.waitSynced(3)
	oc := w.oc(v1)
	assert.Equal(t, "cool-operator", bridge.OtherWriter(oc), "the operator keeps spec.conditions")
	if c := meta.FindStatusCondition(oc.Spec.Conditions, "Upgradeable"); assert.NotNil(t, c) {
		assert.Equal(t, metav1.ConditionFalse, c.Status, "still the operator's after the bridge's resyncs: %+v", c)
		assert.Equal(t, "Migrating", c.Reason)
	}
	assert.Equal(t, 1.0, p.metric("statuscheck_bridge_other_writer"))
	if resp, err := http.Get("http://" + p.probe + "/readyz"); assert.NoError(t, err) {
		resp.Body.Close()
		assert.NotEqual(t, http.StatusOK, resp.StatusCode, "/readyz fails while it yields")
	}
	w.waitUntil("the bridge's Event on the OperatorCondition", 30*time.Second, func() bool {
		evs, err := w.c.Kube.CoreV1().Events(w.ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, ev := range evs.Items {
			if ev.InvolvedObject.Name == v1 && ev.Reason == "OtherWriter" {
				return true
			}
		}
		return false
	})
	phase, _ := w.csvPhase(v2)
	assert.Equal(t, string(operatorsv1alpha1.CSVPhasePending), phase, "held by the operator's own False")

	w.mirrors(v1, metav1.ConditionTrue, "Idle")
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
}

// TestDefect5DuplicateEntriesAreFolded: two Upgradeable entries, False
// then True, left under the bridge's own field manager (an older bridge),
// while the CR says False. meta.SetStatusCondition sets the first, and
// OLM's status copy lets the last win, which would release v2; the
// bridge leaves one entry, False, OLM's copy says False and v2 is held
// until the operator's fresh True.
func TestDefect5DuplicateEntriesAreFolded(t *testing.T) {
	w := newWorld(t, "none")
	w.running(false)
	gen := w.generation()
	w.reports(metav1.ConditionFalse, "Migrating", gen)
	w.writeOC(v1, bridge.FieldManager, func(oc *operatorsv2.OperatorCondition) {
		oc.Spec.Conditions = []metav1.Condition{
			{Type: "Upgradeable", Status: metav1.ConditionFalse, Reason: "Old", Message: "an older bridge's", LastTransitionTime: metav1.Now()},
			{Type: "Upgradeable", Status: metav1.ConditionTrue, Reason: "Stale", Message: "an older bridge's", LastTransitionTime: metav1.Now()},
		}
	})
	w.bridgeProcess(w.c.Kubeconfig, "--bundle", w.bundle)
	w.waitEntry(v1, "the bridge's entry for the CR's False", func(c metav1.Condition) bool { return c.Reason == "Migrating" })
	es := w.entries(v1)
	require.Len(t, es, 1, "one Upgradeable entry: %+v", es)
	assert.Equal(t, metav1.ConditionFalse, es[0].Status)
	w.waitOCStatus(v1, metav1.ConditionFalse)
	assert.Equal(t, "Migrating", meta.FindStatusCondition(w.oc(v1).Status.Conditions, "Upgradeable").Reason, "OLM's status copy")

	w.installHeld("Migrating")
	w.reports(metav1.ConditionTrue, "Idle", gen)
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
}

// TestDefect6StopWithdrawsTrue: SIGTERM to the bridge while its entry is
// True and no CSV replaces the running one. It withdraws the True
// (False, StatusSourceBridgeStopped) and exits 0: nothing keeps the entry
// equal to the CR any more, so a replacement installed then is held by
// OLM, until a bridge runs again and decides on the CR's fresh True. It
// logs the time from SIGTERM to the withdrawn False and to the exit.
func TestDefect6StopWithdrawsTrue(t *testing.T) {
	w := newWorld(t, "none")
	w.running(false)
	p := w.bridgeProcess(w.c.Kubeconfig, "--bundle", w.bundle)
	w.waitOCSpec(v1, metav1.ConditionTrue, bridge.ReasonUpgradeable)
	w.waitOCStatus(v1, metav1.ConditionTrue)

	start := time.Now()
	p.terminate()
	var withdrawn time.Duration
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		if es := w.entries(v1); len(es) > 0 && es[0].Status == metav1.ConditionFalse {
			withdrawn = time.Since(start)
			return true, nil
		}
		return !p.alive(), nil
	})
	require.NoError(t, err, "the withdrawal or the exit after SIGTERM; stderr:\n%s", p.stderr)
	require.NoError(t, p.stop(), "exit 0 on SIGTERM; stderr:\n%s", p.stderr)
	es := w.entries(v1)
	require.Len(t, es, 1)
	require.Equal(t, metav1.ConditionFalse, es[0].Status, "the True withdrawn on a graceful stop: %+v", es[0])
	assert.Equal(t, bridge.ReasonStopped, es[0].Reason)
	t.Logf("from SIGTERM to the withdrawn False: %s; to the exit: %s", withdrawn.Round(time.Millisecond), p.end.Sub(start).Round(time.Millisecond))

	w.installHeld("bridge stopped")

	// A bridge again: it decides on the CR's fresh True.
	w.bridgeProcess(w.c.Kubeconfig, "--bundle", w.bundle)
	w.waitOCSpec(v1, metav1.ConditionTrue, bridge.ReasonUpgradeable)
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
}

// TestBridgeWindowOperatorConditionMadeAgain measures the window
// docs/bridge.md bounds by --resync: an admin deletes v1's
// OperatorCondition while the bridge keeps it False; OLM's generator makes
// it again, empty (which allows: TestPoint2OperatorConditionDeletedAndMadeAgain),
// and the bridge, which cannot watch it (OLM's Role grants get, update and
// patch), writes its entry again at its next resync (the default, 10 s).
func TestBridgeWindowOperatorConditionMadeAgain(t *testing.T) {
	w := newWorld(t, "none")
	w.running(false)
	w.bridgeProcess(w.c.Kubeconfig, "--bundle", w.bundle, "--resync", controller.DefaultResync.String())
	gen := w.generation()
	w.reports(metav1.ConditionFalse, "Migrating", gen)
	w.waitOCSpec(v1, metav1.ConditionFalse, "Migrating")
	ctx := context.Background()
	old := w.oc(v1)
	require.NoError(t, w.c.OLM.OperatorsV2().OperatorConditions(w.ns).Delete(ctx, v1, metav1.DeleteOptions{}))
	deleted := time.Now()
	w.waitUntil("OLM to make the OperatorCondition again", 60*time.Second, func() bool {
		oc, err := w.c.OLM.OperatorsV2().OperatorConditions(w.ns).Get(ctx, v1, metav1.GetOptions{})
		return err == nil && oc.UID != old.UID
	})
	remade := time.Since(deleted)
	w.waitOCSpec(v1, metav1.ConditionFalse, "Migrating")
	window := time.Since(deleted)
	t.Logf("OperatorCondition deleted: OLM made it again, empty, %s later; the bridge's entry was back %s after the delete (--resync %s)",
		remade.Round(time.Millisecond), window.Round(time.Millisecond), controller.DefaultResync)
}
