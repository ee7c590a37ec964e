//go:build olmnative

package olm

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/statuscheck/statuscheck/pkg/bridge"
)

// The bridge's scenarios (bridge_test.go, bridge_defects_test.go) run
// without the bridge, on OLM patched with olm/patches: the operator
// writes only its CR, nobody writes the OperatorCondition's
// spec.conditions unless the scenario says so, and what is asserted is
// the patched OLM's own decision on the replacement (its Pending message,
// statusSourceUpgradeable's, olm/patches/0001): v2 held in
// Pending/OperatorConditionNotUpgradeable while the CR does not say a
// fresh True, released after one. TestNativeBridgeX is TestBridgeX or
// TestX of those files. Each first checks what OLM v0.46.0 unpatched gets
// wrong there (it reads only the OperatorCondition, which is empty or
// says otherwise than the CR), at OLM's first decision on v2
// (holdsAtOnce), so that on an unpatched OLM it fails there and then
// rather than at a timeout.
//
// Left out: the scenarios of the RequestAck handshake (request-spec and
// request-annotation bundles: TestBridgeRequestAck, TestDefect2...,
// TestDefect3...), whose native versions, on patch 0003's RequestAck, are
// in native_requestack_test.go; TestGeneratedBridgeRunsAsItsServiceAccount,
// which tests the bridge's own RBAC; and TestBridgeSurvivesACutApiserver, which has no
// native version: it cuts the bridge's own connection (a proxy between
// the `statuscheck bridge` process and the apiserver) and asserts that
// the bridge writes nothing it did not read. Without the bridge there is
// no second process and no copy to go stale: the only reader is OLM, in
// this test binary, on the connection every test of the binary shares
// (cluster_test.go, startOLM), so cutting it would stall the OLM of all
// the other tests, and would test OLM's informers' relist, not the
// status-source gate. What is left of the property, that OLM decides only
// on what it has read, holds by construction: the patched OLM reads the
// CR at each decision (through its informer's cache once synced,
// patch 0002), and a decision it cannot write during a cut is made again
// on what it reads after it.

// heldPhase is v2's phase and reason while OLM holds it at its gate.
const heldPhase = string(operatorsv1alpha1.CSVPhasePending) + "/" + string(operatorsv1alpha1.CSVReasonOperatorConditionNotUpgradeable)

// statusSourceRef is how the patched OLM names the handshake bundles'
// status source in its messages (statusSource.String).
const statusSourceRef = "cool.operators.corp/v1beta1 CoolOperator/cool-operator"

// olmSaysNot is the patched OLM's Pending message when the CR's Upgradeable
// is fresh and not True (status, with the operator's message: reports
// writes the reason as the message too); OLM's transitionCSVState adds
// "operator is not upgradeable: " to what the gate says.
func olmSaysNot(status metav1.ConditionStatus, message string) string {
	return fmt.Sprintf(`operator is not upgradeable: the operator is not upgradeable: %s "Upgradeable"=%q: %s`, statusSourceRef, status, message)
}

// olmOutdated is the patched OLM's Pending message when the CR's Upgradeable
// is status for generation observed while the CR is at generation.
func olmOutdated(status metav1.ConditionStatus, observed, generation int64) string {
	return fmt.Sprintf(`operator is not upgradeable: the status source %s condition "Upgradeable"=%q is outdated (observedGeneration %d, generation %d)`, statusSourceRef, status, observed, generation)
}

// gateDecision waits for OLM's first decision on csv at its gate and
// returns the CSV's phase, reason and message then: the first Pending
// sync after the one that made it Pending/RequirementsUnknown reads the
// gate first (transitionCSVState), and either holds it there
// (OperatorConditionNotUpgradeable) or goes on to its requirements.
func (w *world) gateDecision(csv string) (phase, reason, message string) {
	w.t.Helper()
	w.waitUntil("OLM's first decision at its gate on "+csv, 60*time.Second, func() bool {
		phase, reason, message = w.csvMessage(csv)
		return phase != "" && !(phase == string(operatorsv1alpha1.CSVPhasePending) && reason == string(operatorsv1alpha1.CSVReasonRequirementsUnknown))
	})
	return phase, reason, message
}

// holdsAtOnce requires that OLM's first decision on csv is a hold with
// exactly message. OLM v0.46.0 unpatched, reading only the
// OperatorCondition, lets csv through at this decision in every scenario
// here (or holds it with a message of the OperatorCondition's).
func (w *world) holdsAtOnce(csv, message string) {
	w.t.Helper()
	phase, reason, msg := w.gateDecision(csv)
	require.Equal(w.t, heldPhase, phase+"/"+reason, "OLM's first decision on %s (%s): an OLM that does not read the CR lets it through", csv, msg)
	require.Equal(w.t, message, msg, "OLM's own message, from the CR")
}

// keepsHolding requires that csv stays held with exactly message for d
// (polled every 50 ms): held, not merely not released yet.
func (w *world) keepsHolding(csv, message string, d time.Duration) {
	w.t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		w.heldOn(csv, message)
	}
}

// heldOn fails unless csv is held (heldPhase) on exactly message.
func (w *world) heldOn(csv, message string) {
	w.t.Helper()
	if phase, reason, msg := w.csvMessage(csv); phase+"/"+reason != heldPhase || msg != message {
		w.t.Fatalf("%s is %s/%s (%s), not held on %q; CSVs: %s", csv, phase, reason, msg, message, w.describeCSVs())
	}
}

// noOperatorConditionWriter asserts that nobody wrote v1's
// OperatorCondition's Upgradeable (no bridge, no mirror), and so that OLM
// copied none into its status: the decision can only be from the CR.
func (w *world) noOperatorConditionWriter() {
	w.t.Helper()
	oc := w.oc(v1)
	assert.Empty(w.t, w.entries(v1), "no Upgradeable entry in %s's spec.conditions", v1)
	assert.Nil(w.t, meta.FindStatusCondition(oc.Status.Conditions, "Upgradeable"), "no Upgradeable in %s's status", v1)
}

// TestNativeBridgeHoldsAndReleases is TestBridgeHoldsAndReleases without
// the bridge: after a spec change the CR's True is outdated and OLM holds
// v2 on it, v1 Replacing meanwhile; then on the operator's False for the
// new generation, for as long as it says so; and it releases v2 on a
// fresh True, within a second.
func TestNativeBridgeHoldsAndReleases(t *testing.T) {
	w := newWorld(t, "none")
	w.running(false)
	gen := w.userSets("MariaDB") // the CR's True is outdated now
	require.Equal(t, int64(2), gen)
	w.installCSV(v2, "0.2.0", v1)
	w.holdsAtOnce(v2, olmOutdated(metav1.ConditionTrue, 1, 2))
	// docs/contract.md section 3: v1 is Replacing while the gate holds v2.
	w.waitCSV(v1, operatorsv1alpha1.CSVPhaseReplacing, "")

	w.reports(metav1.ConditionFalse, "Migrating", gen)
	w.waitHeld(v2, olmSaysNot(metav1.ConditionFalse, "Migrating"))
	w.keepsHolding(v2, olmSaysNot(metav1.ConditionFalse, "Migrating"), 2*time.Second)
	w.noOperatorConditionWriter()

	d := w.releaseLatency(v2, gen)
	assert.Less(t, d, time.Second, "release latency")
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
}

// TestNativeBridgeDecisionLatency is TestBridgeDecisionLatency without
// the bridge: v2 held on the CR's False, 20 status writes of False for
// another reason each, timed to OLM's decision (v2's Pending message
// naming it: decisionLatency); then the release, timed from the fresh
// True to v2 leaving Pending (releaseLatency), over five upgrades in a row
// (v1 to v2, v2 to v3, ..., each held on False first). There is no copy
// into the OperatorCondition to time: OLM reads the CR. Every decision is
// bounded far below OLM's resync (five minutes, cluster_test.go): OLM
// decides on the CR's change, not on a timer.
func TestNativeBridgeDecisionLatency(t *testing.T) {
	w := newWorld(t, "none")
	w.running(false)
	gen := w.generation()
	w.reports(metav1.ConditionFalse, "Migrating", gen)
	w.installCSV(v2, "0.2.0", v1)
	w.holdsAtOnce(v2, olmSaysNot(metav1.ConditionFalse, "Migrating"))
	decisions := w.decisionLatency(func(reason string) { w.reports(metav1.ConditionFalse, reason, gen) })
	w.noOperatorConditionWriter()

	const runs = 5
	var releases []time.Duration
	replaced, next := v1, v2
	for i := 0; i < runs; i++ {
		if i > 0 {
			w.reports(metav1.ConditionFalse, "Migrating", gen)
			version := fmt.Sprintf("0.%d.0", i+2)
			next = "cool-operator.v" + version
			w.installCSV(next, version, replaced)
			w.holdsAtOnce(next, olmSaysNot(metav1.ConditionFalse, "Migrating"))
		}
		releases = append(releases, w.releaseLatency(next, gen))
		w.waitCSV(next, operatorsv1alpha1.CSVPhaseSucceeded, "")
		replaced = next
	}
	t.Logf("from the CR's status write: to OLM's decision on %s (its Pending message), %d writes: %s; release latency (fresh True to the replacement leaving Pending), %d upgrades: %s",
		v2, len(decisions), stat(decisions), runs, stat(releases))
	assert.Less(t, median(decisions), time.Second, "OLM's decision, median")
	assert.Less(t, median(releases), time.Second, "release latency, median")
	assert.Less(t, slices.Max(slices.Concat(decisions, releases)), 10*time.Second, "every decision well within OLM's resync")
}

// TestNativeBridgeDefect1FreshUnknownHolds is TestDefect1FreshUnknownHolds
// without the bridge: the operator reports a fresh Upgradeable=Unknown
// (HCO does on start-up). OLM v0.46.0's own gate blocks only on False
// (the bridge had to write False for it); the patched OLM holds v2 on the
// CR's Unknown itself, until the operator's fresh True.
func TestNativeBridgeDefect1FreshUnknownHolds(t *testing.T) {
	w := newWorld(t, "none")
	w.running(false)
	gen := w.generation()
	w.reports(metav1.ConditionUnknown, "Starting", gen)
	w.installCSV(v2, "0.2.0", v1)
	w.holdsAtOnce(v2, olmSaysNot(metav1.ConditionUnknown, "Starting"))
	w.keepsHolding(v2, olmSaysNot(metav1.ConditionUnknown, "Starting"), 2*time.Second)
	w.noOperatorConditionWriter()

	w.releaseLatency(v2, gen)
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
}

// TestNativeBridgeDefect4AnotherWriterStillHolds is
// TestDefect4AnotherWriterIsNotOverwritten without the bridge: another
// writer (the operator's own OperatorCondition write, operator-lib's
// conditions.Set, as HCO does) keeps an Upgradeable entry in v1's
// OperatorCondition's spec.conditions that says otherwise than the CR.
// The patched OLM gates on both: the entry's True does not release v2
// while the CR says False, and the entry's False holds v2 though the CR
// says a fresh True (a new signal only adds holds), until the entry says
// True again.
func TestNativeBridgeDefect4AnotherWriterStillHolds(t *testing.T) {
	w := newWorld(t, "none")
	w.running(false)
	gen := w.generation()
	w.reports(metav1.ConditionFalse, "Migrating", gen)
	w.mirrors(v1, metav1.ConditionTrue, "Idle")
	w.waitOCStatus(v1, metav1.ConditionTrue) // OLM's copy: a fresh True, which OLM v0.46.0 allows on

	w.installCSV(v2, "0.2.0", v1)
	w.holdsAtOnce(v2, olmSaysNot(metav1.ConditionFalse, "Migrating"))
	w.keepsHolding(v2, olmSaysNot(metav1.ConditionFalse, "Migrating"), 2*time.Second)

	// The other writer says False now, and the CR a fresh True: the
	// OperatorCondition holds v2.
	w.mirrors(v1, metav1.ConditionFalse, "OtherWriterSaysNo")
	w.waitOCStatus(v1, metav1.ConditionFalse)
	w.reports(metav1.ConditionTrue, "Idle", gen)
	w.waitHeld(v2, olmOperatorConditionSaysNot("OtherWriterSaysNo"))
	w.keepsHolding(v2, olmOperatorConditionSaysNot("OtherWriterSaysNo"), time.Second)

	w.mirrors(v1, metav1.ConditionTrue, "OtherWriterSaysYes")
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
}

// olmOperatorConditionSaysNot is OLM's Pending message when the
// OperatorCondition's Upgradeable is False, with its message (OLM
// v0.46.0's own).
func olmOperatorConditionSaysNot(message string) string {
	return "operator is not upgradeable: the operator is not upgradeable: " + message
}

// olmOperatorConditionOutdated is OLM v0.46.0's own Pending message when
// the OperatorCondition's status entry is for an older generation of it
// (isOperatorUpgradeable).
func olmOperatorConditionOutdated(status metav1.ConditionStatus) string {
	return fmt.Sprintf("operator is not upgradeable: the operatorcondition status %q=%q is outdated", "Upgradeable", status)
}

// TestNativeBridgeDefect5DuplicateEntries is
// TestDefect5DuplicateEntriesAreFolded without the bridge: two
// Upgradeable entries in v1's OperatorCondition's spec.conditions (left
// by an older bridge), False then True, while the CR says False. OLM's
// status copy lets the last entry win, True, which OLM v0.46.0 allows on
// (the bridge had to fold them); the patched OLM reads the CR and holds
// v2. With the entries swapped (OLM's copy False) OLM holds v2 on the
// copy though the CR says a fresh True, as OLM v0.46.0 does; swapped
// back, the CR's True and the copy's True release it. The recording
// agrees with the strict gate (the CR) but where the copy held, and
// there with the olm policy (recordedAgreesWithCopy). (The CR
// cannot hold duplicates: its conditions are a map list keyed by type,
// and the apiserver refuses a second Upgradeable there.)
func TestNativeBridgeDefect5DuplicateEntries(t *testing.T) {
	w := newWorld(t, "none")
	w.running(false)
	rec := w.record()
	gen := w.generation()
	w.reports(metav1.ConditionFalse, "Migrating", gen)
	duplicates := func(first, second metav1.ConditionStatus) {
		w.writeOC(v1, bridge.FieldManager, func(oc *operatorsv2.OperatorCondition) {
			entry := func(s metav1.ConditionStatus) metav1.Condition {
				return metav1.Condition{Type: "Upgradeable", Status: s, Reason: "Stale" + string(s), Message: "an older bridge's", LastTransitionTime: metav1.Now()}
			}
			oc.Spec.Conditions = []metav1.Condition{entry(first), entry(second)}
		})
	}
	duplicates(metav1.ConditionFalse, metav1.ConditionTrue)
	w.waitOCStatus(v1, metav1.ConditionTrue) // the last wins in OLM's copy: OLM v0.46.0 allows
	require.Len(t, w.entries(v1), 2, "both entries stay")

	w.installCSV(v2, "0.2.0", v1)
	w.holdsAtOnce(v2, olmSaysNot(metav1.ConditionFalse, "Migrating"))
	w.keepsHolding(v2, olmSaysNot(metav1.ConditionFalse, "Migrating"), time.Second)

	// Swapped, OLM's copy says False: it holds v2 though the CR says a
	// fresh True (both gates), as OLM v0.46.0 does; swapped back, the
	// CR's True and the copy's True release it.
	duplicates(metav1.ConditionTrue, metav1.ConditionFalse)
	w.waitOCStatus(v1, metav1.ConditionFalse)
	w.reports(metav1.ConditionTrue, "Idle", gen)
	w.waitHeld(v2, olmOperatorConditionSaysNot("an older bridge's"))
	duplicates(metav1.ConditionFalse, metav1.ConditionTrue)
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")

	// The CR refuses a duplicate (the status source's own list is a map).
	cr, err := w.cr().Get(context.Background(), w.name, metav1.GetOptions{})
	require.NoError(t, err)
	conds, _, _ := unstructured.NestedSlice(cr.Object, "status", "conditions")
	require.Len(t, conds, 1)
	dup := map[string]interface{}{"type": "Upgradeable", "status": "False", "reason": "Second", "message": "a second entry",
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339), "observedGeneration": gen}
	require.NoError(t, unstructured.SetNestedSlice(cr.Object, append(conds, dup), "status", "conditions"))
	_, err = w.cr().UpdateStatus(context.Background(), cr, metav1.UpdateOptions{FieldManager: "cool-operator"})
	assert.True(t, apierrors.IsInvalid(err), "a second Upgradeable on the CR is refused: %v", err)

	w.recordedAgreesWithCopy(rec)
}

// TestNativeBridgeDefect6 is TestDefect6StopWithdrawsTrue without the
// bridge. That defect was a copy of the verdict outliving its writer: a
// stopped bridge left its last True in the OperatorCondition, where
// nothing kept it equal to the CR; the fix withdraws it (False,
// StatusSourceBridgeStopped), and OLM v0.46.0 then holds every
// replacement until a bridge runs again. The patched OLM keeps no copy:
// the verdict is made from the CR, in the cluster, at each decision, so
// there is nothing to stop and nothing to withdraw. What a bridge left
// behind when it stopped (a cluster moving from the bridge to the patched
// OLM has it): its True, left by a bridge killed before it could withdraw
// it, does not release a replacement the CR holds; its withdrawn False
// holds, as any OperatorCondition's False does (the patched OLM gates on
// both), until it is taken off.
// Deleting and remaking the OperatorCondition is
// TestNativeBridgeWindowOperatorConditionMadeAgain's.
func TestNativeBridgeDefect6(t *testing.T) {
	left := func(w *world, status metav1.ConditionStatus, reason, message string) {
		w.writeOC(v1, bridge.FieldManager, func(oc *operatorsv2.OperatorCondition) {
			meta.SetStatusCondition(&oc.Spec.Conditions, metav1.Condition{Type: "Upgradeable", Status: status, Reason: reason, Message: message})
		})
		w.waitOCStatus(v1, status)
	}
	t.Run("a killed bridge's True does not release", func(t *testing.T) {
		w := newWorld(t, "none")
		w.running(false)
		rec := w.record()
		left(w, metav1.ConditionTrue, bridge.ReasonUpgradeable, "Upgradeable=True (observedGeneration 1, generation 1)")
		gen := w.userSets("MariaDB") // the CR's True is outdated; the bridge's stays
		w.installCSV(v2, "0.2.0", v1)
		w.holdsAtOnce(v2, olmOutdated(metav1.ConditionTrue, 1, gen))
		w.keepsHolding(v2, olmOutdated(metav1.ConditionTrue, 1, gen), time.Second)
		w.releaseLatency(v2, gen)
		w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
		w.recordedAgrees(rec, true)
	})
	t.Run("a stopped bridge's withdrawn False holds until it is taken off", func(t *testing.T) {
		w := newWorld(t, "none")
		w.running(false) // the CR: a fresh True
		stopped := "statuscheck bridge stopped: nothing keeps this entry equal to the status source until it runs again"
		left(w, metav1.ConditionFalse, bridge.ReasonStopped, stopped)
		w.installCSV(v2, "0.2.0", v1)
		w.holdsAtOnce(v2, olmOperatorConditionSaysNot(stopped))
		// Taking the entry off the spec is not enough: OLM's
		// OperatorCondition controller (v0.46.0,
		// operatorcondition_controller.go syncOperatorConditionStatus)
		// copies spec entries to the status but never removes one, so the
		// status keeps the False, now outdated, and holds. Whoever moves
		// from the bridge to the patched OLM deletes the OperatorCondition
		// (OLM's generator makes it again, empty; or an admin overrides):
		// then the CR decides.
		w.writeOC(v1, bridge.FieldManager, func(oc *operatorsv2.OperatorCondition) { oc.Spec.Conditions = nil })
		w.waitHeld(v2, olmOperatorConditionOutdated(metav1.ConditionFalse))
		w.keepsHolding(v2, olmOperatorConditionOutdated(metav1.ConditionFalse), time.Second)
		require.NoError(t, w.c.OLM.OperatorsV2().OperatorConditions(w.ns).Delete(context.Background(), v1, metav1.DeleteOptions{}))
		w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
	})
}

// TestNativeBridgeWindowOperatorConditionMadeAgain is
// TestBridgeWindowOperatorConditionMadeAgain without the bridge: an admin
// deletes v1's OperatorCondition while v2 is held on the CR's False; OLM's
// generator makes it again, empty, which OLM v0.46.0 allows on
// (TestPoint2OperatorConditionDeletedAndMadeAgain), and which the bridge
// filled again only at its next resync (the window that test measures).
// The patched OLM has no such window: it keeps holding v2 on the CR while
// the OperatorCondition is gone and once it is back, empty, and decides
// on the CR after it (the operator's next False shows in v2's message),
// until the fresh True.
func TestNativeBridgeWindowOperatorConditionMadeAgain(t *testing.T) {
	w := newWorld(t, "none")
	w.running(false)
	rec := w.record()
	gen := w.generation()
	w.reports(metav1.ConditionFalse, "Migrating", gen)
	w.installCSV(v2, "0.2.0", v1)
	w.holdsAtOnce(v2, olmSaysNot(metav1.ConditionFalse, "Migrating"))

	ctx := context.Background()
	old := w.oc(v1)
	require.NoError(t, w.c.OLM.OperatorsV2().OperatorConditions(w.ns).Delete(ctx, v1, metav1.DeleteOptions{}))
	deleted := time.Now()
	var remade time.Duration
	var again *operatorsv2.OperatorCondition
	for end := deleted.Add(3 * time.Second); time.Now().Before(end) || remade == 0; time.Sleep(20 * time.Millisecond) {
		if phase, reason, msg := w.csvMessage(v2); phase+"/"+reason != heldPhase || msg != olmSaysNot(metav1.ConditionFalse, "Migrating") {
			t.Fatalf("%s after %s's OperatorCondition was deleted (%s ago; made again: %v): %s/%s (%s); CSVs: %s",
				v2, v1, time.Since(deleted).Round(time.Millisecond), remade != 0, phase, reason, msg, w.describeCSVs())
		}
		if remade == 0 {
			if oc, err := w.c.OLM.OperatorsV2().OperatorConditions(w.ns).Get(ctx, v1, metav1.GetOptions{}); err == nil && oc.UID != old.UID {
				remade, again = time.Since(deleted), oc
			}
		}
		require.Less(t, time.Since(deleted), 60*time.Second, "OLM's generator did not make the OperatorCondition again")
	}
	assert.Empty(t, again.Spec.Conditions, "made again empty")
	assert.Empty(t, again.Spec.Overrides)
	t.Logf("OperatorCondition deleted: OLM made it again, empty, %s later; %s held on the CR throughout (%s)",
		remade.Round(time.Millisecond), v2, time.Since(deleted).Round(time.Millisecond))

	w.reports(metav1.ConditionFalse, "StillMigrating", gen)
	w.waitHeld(v2, olmSaysNot(metav1.ConditionFalse, "StillMigrating"))
	w.releaseLatency(v2, gen)
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")

	recording, _ := w.recordedAgrees(rec, true)
	assert.Contains(t, recording, "{actor: admin, target: OperatorCondition, delete: {}")
	assert.Contains(t, recording, "{actor: olm, target: OperatorCondition, create: ")
}
