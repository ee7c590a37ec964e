//go:build olmnative

package olm

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/simulate"
)

// The tests of this file run only on OLM patched with olm/patches (make
// olm-native-test builds it and passes -tags olmnative): OLM reads the
// status source the replaced CSV's annotation names, by the contract's
// strict gate (docs/contract.md section 5), with no bridge and no
// OperatorCondition handshake: the operator writes only its CR.

// csvMessage is a CSV's phase, reason and message.
func (w *world) csvMessage(name string) (phase, reason, message string) {
	csv, err := w.c.OLM.OperatorsV1alpha1().ClusterServiceVersions(w.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return "", "", err.Error()
	}
	return string(csv.Status.Phase), string(csv.Status.Reason), csv.Status.Message
}

// releaseLatency is the operator's write of a fresh Upgradeable=True on the
// CR, and the time from just before it until OLM moves name out of
// Pending.
func (w *world) releaseLatency(name string, gen int64) time.Duration {
	w.t.Helper()
	start := time.Now()
	w.reports(metav1.ConditionTrue, "Idle", gen)
	written := time.Since(start)
	deadline := start.Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if p, _, _ := w.csvMessage(name); p != "" && p != string(operatorsv1alpha1.CSVPhasePending) {
			d := time.Since(start)
			w.t.Logf("release latency: %s from the operator's write of a fresh Upgradeable=True to %s leaving Pending (%s); the write itself took %s", d.Round(time.Millisecond), name, p, written.Round(time.Millisecond))
			return d
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.t.Fatalf("%s did not leave Pending within 30s of a fresh Upgradeable=True; CSVs: %s", name, w.describeCSVs())
	return 0
}

// agreesWithPatchedOLM asserts that at every check of the recording the
// primary policy of s (strict) decided as the patched OLM did, but at the
// steps explained.
func agreesWithPatchedOLM(t *testing.T, s simulated, recording string, explained map[int]bool) {
	t.Helper()
	for _, v := range s.summary.Violations {
		if v.Rule == simulate.RuleCheckExpectation && explained[v.Step] {
			continue
		}
		assert.NotEqual(t, simulate.RuleCheckExpectation, v.Rule, "the strict gate disagrees with the patched OLM at step %d: %s\nrecording:\n%s", v.Step, v.Message, recording)
		assert.NotEqual(t, simulate.RuleStatusSourceNotRead, v.Rule, "step %d: %s", v.Step, v.Message)
	}
}

// recordedAgrees stops the recording and checks what it says of OLM: its
// checks are holds (check Block) and then the commit (check Allow) and
// the upgrade, at least one hold when held; and statuscheck simulate with
// the strict gate, replaying it, agrees with the patched OLM at every
// check and finds no upgrade while it blocked. It returns the recording
// and the replay.
func (w *world) recordedAgrees(rec *testutil.Recorder, held bool) (string, simulated) {
	w.t.Helper()
	return w.recordedAgreesOn(rec, held, false)
}

func (w *world) recordedAgreesOn(rec *testutil.Recorder, held, alsoCopy bool) (string, simulated) {
	w.t.Helper()
	t := w.t
	require.Equal(t, 0, rec.StopWith(syscall.SIGINT))
	recording := rec.Read()
	got := olmSteps(steps(t, rec.Trace))
	require.GreaterOrEqual(t, len(got), 2, recording)
	if held {
		require.GreaterOrEqual(t, len(got), 3, "a hold, the commit and the upgrade: %v\n%s", got, recording)
	}
	assert.Equal(t, []string{"check Allow", "upgrade"}, got[len(got)-2:], "the commit, then the replacement")
	for _, g := range got[:len(got)-2] {
		assert.Equal(t, "check Block", g, "every check before the commit held")
	}
	s := w.simulateWith(rec.Trace, "--bundle", w.bundle, "--policy", "strict")
	var explained map[int]bool
	if alsoCopy {
		explained = w.heldByTheCopy(rec.Trace)
	}
	agreesWithPatchedOLM(t, s, recording, explained)
	assert.False(t, s.has(simulate.RuleUpgradeWhileBlocked), "the upgrade came after a fresh True: %v", s.violations())
	return recording, s
}

// recordedAgreesWithCopy is recordedAgrees for a world in which the
// OperatorCondition's status copy (OLM's own, of its spec) may hold too:
// the patched OLM holds on it as OLM v0.46.0 does, and on the CR
// (TestNativeBridgeDefect5DuplicateEntries). A check that held where the
// strict gate allowed on every state since the last check is then OLM's
// hold on the copy, and the olm policy, replaying the same recording,
// must agree with it: it had a Block in its own window. (--bridge makes
// the olm policy read the OperatorCondition, as OLM v0.46.0 reads it.)
func (w *world) recordedAgreesWithCopy(rec *testutil.Recorder) {
	w.t.Helper()
	w.recordedAgreesOn(rec, true, true)
}

// heldByTheCopy: the checks of the recording at path that held (expect
// Block) where the olm policy, replaying it as the primary policy on the
// OperatorCondition's copy (--bridge), agreed with OLM.
func (w *world) heldByTheCopy(path string) map[int]bool {
	w.t.Helper()
	o := w.simulateWith(path, "--bundle", w.bundle, "--policy", "olm", "--bridge")
	disagrees := map[int]bool{}
	for _, v := range o.of(simulate.RuleCheckExpectation) {
		disagrees[v.Step] = true
	}
	out := map[int]bool{}
	for i, st := range steps(w.t, path) {
		if step := i + 1; st.Verb == v1alpha1.VerbCheck && st.Expect == contract.Block && !disagrees[step] {
			out[step] = true
		}
	}
	return out
}

// TestNativeHeldUntilFreshTrue: after a spec change the operator's True
// is outdated, and the patched OLM holds the replacement; then while the
// operator reports False, then Unknown, for the new generation; and
// releases it within a second of a fresh True, with no resync (OLM's is
// five minutes). statuscheck's record and simulate, strict policy, agree
// with OLM at every check.
func TestNativeHeldUntilFreshTrue(t *testing.T) {
	w := newWorld(t, "none")
	start := time.Now()
	w.running(false)
	rec := w.record()
	gen := w.userSets("MariaDB")
	w.installCSV(v2, "0.2.0", v1)
	w.waitHeld(v2, `"Upgradeable"="True" is outdated (observedGeneration 1, generation 2)`)
	t.Logf("%s: held on the outdated True", time.Since(start).Round(time.Millisecond))
	w.reports(metav1.ConditionFalse, "Migrating", gen)
	w.waitHeld(v2, `"Upgradeable"="False": Migrating`)
	t.Logf("%s: held on False", time.Since(start).Round(time.Millisecond))
	w.reports(metav1.ConditionUnknown, "Starting", gen)
	w.waitHeld(v2, `"Upgradeable"="Unknown"`)
	t.Logf("%s: held on Unknown", time.Since(start).Round(time.Millisecond))
	time.Sleep(time.Second) // held, not merely not yet released
	phase, reason, _ := w.csvMessage(v2)
	require.Equal(t, "Pending/OperatorConditionNotUpgradeable", phase+"/"+reason, "v2 while the operator says Unknown")

	d := w.releaseLatency(v2, gen)
	assert.Less(t, d, time.Second, "release latency")
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
	recording, s := w.recordedAgrees(rec, true)
	require.GreaterOrEqual(t, len(olmSteps(steps(t, rec.Trace))), 5, recording)

	// OLM's own comparison applied to the CR (the olm policy) differs
	// from the patch only where the operator says Unknown.
	so := w.simulateWith(rec.Trace, "--bundle", w.bundle, "--policy", "olm")
	for _, v := range so.of(simulate.RuleCheckExpectation) {
		assert.Contains(t, v.Message, "Unknown", "the olm policy and the patched OLM differ only on Unknown: step %d: %s", v.Step, v.Message)
	}
	t.Logf("strict: %v; olm: %v", s.violations(), so.violations())
}

// TestNativeAdminOverride: an admin's Upgradeable=True override on the
// replaced CSV's OperatorCondition releases a replacement the status
// source holds, and the recording's checks agree with the strict gate.
func TestNativeAdminOverride(t *testing.T) {
	w := newWorld(t, "none")
	w.running(false)
	rec := w.record()
	gen := w.userSets("MariaDB")
	w.reports(metav1.ConditionFalse, "Migrating", gen)
	w.installCSV(v2, "0.2.0", v1)
	w.waitHeld(v2, `"Upgradeable"="False": Migrating`)
	w.overrides(v1, metav1.ConditionTrue)
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
	recording, s := w.recordedAgrees(rec, true)
	assert.Contains(t, recording, "{actor: admin, target: OperatorCondition, update: ")
	assert.Equal(t, "check Block", olmSteps(steps(t, rec.Trace))[0])
	assert.False(t, s.has(simulate.RuleUnsafeApproval), "the admin decided: %v", s.violations())
}

// TestNativeWithoutAnnotationReadsTheOperatorCondition: a CSV without the
// annotation is gated as by unpatched OLM: on its OperatorCondition, not
// on the CR (a fresh True there does not release; an outdated one does
// not hold).
func TestNativeWithoutAnnotationReadsTheOperatorCondition(t *testing.T) {
	w := newWorld(t, "none")
	delete(w.csv.Annotations, "operatorframework.io/status-source")
	w.running(false)
	w.mirrors(v1, metav1.ConditionFalse, "Migrating")
	w.waitOCStatus(v1, metav1.ConditionFalse)
	w.installCSV(v2, "0.2.0", v1)
	w.waitHeld(v2, "Migrating")
	w.userSets("MariaDB") // the CR's True is outdated now: not read
	w.mirrors(v1, metav1.ConditionTrue, "Idle")
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
}

// TestNativeWhenAbsentBlock: with whenAbsent: Block, a replacement waits
// while the CR does not exist, and a fresh True on the CR, once made,
// releases it.
func TestNativeWhenAbsentBlock(t *testing.T) {
	w := newWorld(t, "none")
	w.csv.Annotations["operatorframework.io/status-source"] = `{"apiVersion":"cool.operators.corp/v1beta1","kind":"CoolOperator","name":"cool-operator","whenAbsent":"Block"}`
	w.installCSV(v1, "0.1.0", "")
	w.waitCSV(v1, operatorsv1alpha1.CSVPhaseSucceeded, "")
	w.installCSV(v2, "0.2.0", v1)
	w.waitHeld(v2, "does not exist (whenAbsent: Block)")
	w.createCR(map[string]interface{}{"storageLayer": "PostgreSQL"})
	w.waitHeld(v2, "has no Upgradeable condition")
	d := w.releaseLatency(v2, 1)
	assert.Less(t, d, time.Second, "release latency")
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")

	// An admin's override wins over a missing status source, as it wins
	// everything in OLM's gate: v3 is held while the CR is gone, and the
	// override on v2's OperatorCondition releases it.
	require.NoError(t, w.cr().Delete(context.Background(), w.name, metav1.DeleteOptions{}))
	w.installCSV(v3, "0.3.0", v2)
	w.waitHeld(v3, "does not exist (whenAbsent: Block)")
	w.overrides(v2, metav1.ConditionTrue)
	w.waitCSV(v3, operatorsv1alpha1.CSVPhaseSucceeded, "")
}

// TestNativeRecordingCopyHeldAfterCRTrue replays a recording CI made of
// TestNativeBridgeDefect5DuplicateEntries (testdata/recordings): OLM held
// v2 once more on the OperatorCondition copy it had read before the copy
// said True, while the CR already said a fresh True. The strict gate
// disagrees at that check; recordedAgreesWithCopy must explain it by the
// olm policy on the OperatorCondition, and only it: the other holds are
// the CR's, and the commit is explained by neither.
func TestNativeRecordingCopyHeldAfterCRTrue(t *testing.T) {
	w := &world{t: t, bundle: handshakeBundle("none")}
	path := filepath.Join(testutil.RepoRoot(), "test", "olm", "testdata", "recordings", "copy-held-after-cr-true.yaml")
	s := w.simulateWith(path, "--bundle", w.bundle, "--policy", "strict")
	var disagree []int
	for _, v := range s.of(simulate.RuleCheckExpectation) {
		disagree = append(disagree, v.Step)
	}
	require.Equal(t, []int{12}, disagree, "the strict gate disagrees with OLM's late hold only")
	explained := w.heldByTheCopy(path)
	assert.True(t, explained[12], "the late hold is the copy's: %v", explained)
	assert.False(t, explained[4], "step 4 held on the CR; the copy said True then")
	assert.False(t, explained[13], "the commit (expect Allow) is never explained")
}
