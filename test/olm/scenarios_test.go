package olm

import (
	"context"
	"errors"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/simulate"
	"github.com/statuscheck/statuscheck/pkg/trace"
)

// The scenarios play an upgrade on real OLM with statuscheck record
// recording, and replay the recording with statuscheck simulate. OLM
// decides; the tests only play the user, the operator and an admin.
//
// The points 1 to 9 are issue 17's: each named test failed on the
// recorder before it was fixed (run the tier with STATUSCHECK_BINARY set
// to a binary of the earlier code to see it).

const (
	v1 = "cool-operator.v0.1.0"
	v2 = "cool-operator.v0.2.0"
	v3 = "cool-operator.v0.3.0"
)

// running installs the first version and waits until it runs: the CR
// reporting a fresh Upgradeable=True, v1 Succeeded, and, in the
// OperatorCondition handshake, its mirror copied by OLM.
func (w *world) running(mirror bool) {
	w.t.Helper()
	w.createCR(map[string]interface{}{"storageLayer": "PostgreSQL"})
	w.reports(metav1.ConditionTrue, "Idle", 1)
	w.installCSV(v1, "0.1.0", "")
	w.waitCSV(v1, operatorsv1alpha1.CSVPhaseSucceeded, "")
	if mirror {
		w.mirrors(v1, metav1.ConditionTrue, "Idle")
		w.waitOCStatus(v1, metav1.ConditionTrue)
	}
}

// steps reads a recording's steps.
func steps(t *testing.T, path string) []trace.Step {
	t.Helper()
	tr, err := trace.Open(path, trace.OpenOptions{Limits: trace.DefaultLimits})
	require.NoError(t, err)
	defer tr.Close()
	var out []trace.Step
	for {
		st, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		out = append(out, st)
	}
}

// olmSteps lists the OLM steps of a recording: "check Block", "check
// Allow", "upgrade".
func olmSteps(all []trace.Step) []string {
	var out []string
	for _, st := range all {
		switch st.Verb {
		case v1alpha1.VerbCheck:
			out = append(out, "check "+string(st.Expect))
		case v1alpha1.VerbUpgrade:
			out = append(out, "upgrade")
		}
	}
	return out
}

// agreesWithOLM asserts what the issue asks of the OLM model: at every
// check OLM really made, the olm policy's verdict is OLM's own decision
// (the recording's expect); a mismatch is a check-expectation.
func agreesWithOLM(t *testing.T, s simulated, recording string) {
	t.Helper()
	for _, v := range s.summary.Violations {
		assert.NotEqual(t, simulate.RuleCheckExpectation, v.Rule, "the model disagrees with OLM at step %d: %s\nrecording:\n%s", v.Step, v.Message, recording)
	}
}

// TestPoint6HeldAndReleased: in the OperatorCondition handshake, OLM holds the
// replacement while the operator's mirrored Upgradeable is False and
// replaces the operator once it is True. Point 6 too: each Pending sync
// that wrote is a check with OLM's decision, the move into Pending is
// none, the commit (InstallReady) is a check that allowed, and the move
// to Installing is the upgrade.
func TestPoint6HeldAndReleased(t *testing.T) {
	w := newWorld(t, "operatorcondition")
	w.running(true)
	rec := w.record()
	gen := w.userSets("MariaDB")
	w.reports(metav1.ConditionFalse, "Migrating", gen)
	w.mirrors(v1, metav1.ConditionFalse, "Migrating")
	w.waitOCStatus(v1, metav1.ConditionFalse)
	w.installCSV(v2, "0.2.0", v1)
	w.waitCSV(v2, operatorsv1alpha1.CSVPhasePending, operatorsv1alpha1.CSVReasonOperatorConditionNotUpgradeable)
	// docs/contract.md §3: the old CSV is Replacing while the gate holds
	// the new one (checkReplacementsAndUpdateStatus), so Replacing is not
	// an approval.
	w.waitCSV(v1, operatorsv1alpha1.CSVPhaseReplacing, "")
	phase, reason := w.csvPhase(v2)
	assert.Equal(t, "Pending/OperatorConditionNotUpgradeable", phase+"/"+reason, "v2 while v1 is Replacing")
	w.reports(metav1.ConditionTrue, "Idle", gen)
	w.mirrors(v1, metav1.ConditionTrue, "Idle")
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
	// §3: the new CSV's OperatorCondition starts empty but for its
	// deployments and service accounts; the next upgrade's gate reads it.
	oc := w.oc(v2)
	assert.Empty(t, oc.Spec.Conditions, "v2's OperatorCondition, spec")
	assert.Empty(t, oc.Spec.Overrides)
	assert.Empty(t, oc.Status.Conditions, "v2's OperatorCondition, status")
	assert.Equal(t, []string{"cool-operator"}, oc.Spec.Deployments)
	assert.Equal(t, []string{"cool-operator"}, oc.Spec.ServiceAccounts)
	require.Equal(t, 0, rec.StopWith(syscall.SIGINT))
	recording := rec.Read()

	got := olmSteps(steps(t, rec.Trace))
	require.GreaterOrEqual(t, len(got), 3, recording)
	assert.Equal(t, "check Block", got[0], "OLM's first decision is the hold")
	assert.Equal(t, []string{"check Allow", "upgrade"}, got[len(got)-2:], "the commit, then the replacement")
	for _, g := range got[:len(got)-2] {
		assert.Equal(t, "check Block", g, "every check before the commit held")
	}
	assert.Contains(t, recording, "entered Replacing")
	s := w.simulate(rec.Trace)
	agreesWithOLM(t, s, recording)
	assert.False(t, s.has(simulate.RuleUpgradeWhileBlocked), "the upgrade came after a fresh True: %v", s.violations())
	// The one finding is the handshake's flaw the contract names: after
	// the spec change (step 1) and the operator's False (step 2), OLM's
	// copy still said True, fresh for the OperatorCondition, while the CR
	// had moved on; from step 3 the operator's mirror closes the window.
	require.NotEmpty(t, s.summary.Violations)
	for _, v := range s.summary.Violations {
		assert.Equal(t, simulate.RuleUnsafeApproval, v.Rule, "%s at step %d: %s", v.Rule, v.Step, v.Message)
		assert.Contains(t, []int{1, 2}, v.Step, "before the mirror: %s\n%s", v.Message, recording)
	}
}

// TestPoint1FirstInstallWithReplaces: the resolver keeps a bundle's own
// spec.replaces on a first install, so v1 names a v0 that never ran here;
// the recorder must still take v1 for the running CSV.
func TestPoint1FirstInstallWithReplaces(t *testing.T) {
	w := newWorld(t, "operatorcondition")
	w.createCR(map[string]interface{}{"storageLayer": "PostgreSQL"})
	w.reports(metav1.ConditionTrue, "Idle", 1)
	rec := w.record() // before anything is installed
	w.installCSV(v1, "0.1.0", "cool-operator.v0.0.9")
	w.waitCSV(v1, operatorsv1alpha1.CSVPhaseSucceeded, "")
	w.mirrors(v1, metav1.ConditionFalse, "Migrating")
	w.waitOCStatus(v1, metav1.ConditionFalse)
	w.installCSV(v2, "0.2.0", v1)
	w.waitCSV(v2, operatorsv1alpha1.CSVPhasePending, operatorsv1alpha1.CSVReasonOperatorConditionNotUpgradeable)
	w.mirrors(v1, metav1.ConditionTrue, "Idle")
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
	require.Equal(t, 0, rec.StopWith(syscall.SIGINT))
	recording := rec.Read()
	got := olmSteps(steps(t, rec.Trace))
	require.NotEmpty(t, got, "OLM's steps are recorded although v1 replaces a CSV that is not there:\n%s", recording)
	assert.Equal(t, "check Block", got[0])
	assert.Equal(t, []string{"check Allow", "upgrade"}, got[len(got)-2:])
	agreesWithOLM(t, w.simulate(rec.Trace), recording)
}

// TestPoint2OperatorConditionDeletedAndMadeAgain: the recorder starts
// before v1 exists, so v1's OperatorCondition is first seen mid-way; an
// admin deletes it while the operator says False, OLM's generator makes
// it again, empty, and the gate, finding an empty one, lets the upgrade
// through. Every OperatorCondition step carries its generation, so the
// model's copy never falls behind.
func TestPoint2OperatorConditionDeletedAndMadeAgain(t *testing.T) {
	w := newWorld(t, "operatorcondition")
	w.createCR(map[string]interface{}{"storageLayer": "PostgreSQL"})
	w.reports(metav1.ConditionTrue, "Idle", 1)
	rec := w.record()
	w.installCSV(v1, "0.1.0", "")
	w.waitCSV(v1, operatorsv1alpha1.CSVPhaseSucceeded, "")
	w.mirrors(v1, metav1.ConditionFalse, "Migrating")
	w.waitOCStatus(v1, metav1.ConditionFalse)
	w.installCSV(v2, "0.2.0", v1)
	w.waitCSV(v2, operatorsv1alpha1.CSVPhasePending, operatorsv1alpha1.CSVReasonOperatorConditionNotUpgradeable)
	before, err := w.c.OLM.OperatorsV2().OperatorConditions(w.ns).Get(context.Background(), v1, metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, w.c.OLM.OperatorsV2().OperatorConditions(w.ns).Delete(context.Background(), v1, metav1.DeleteOptions{}))
	w.waitUntil("OLM's generator to make the OperatorCondition again", 60*time.Second, func() bool {
		oc, err := w.c.OLM.OperatorsV2().OperatorConditions(w.ns).Get(context.Background(), v1, metav1.GetOptions{})
		return err == nil && oc.UID != before.UID
	})
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
	require.Equal(t, 0, rec.StopWith(syscall.SIGINT))
	recording := rec.Read()
	assert.Contains(t, recording, "{actor: admin, target: OperatorCondition, delete: {}")
	assert.Contains(t, recording, "{actor: olm, target: OperatorCondition, create: ")
	got := olmSteps(steps(t, rec.Trace))
	require.NotEmpty(t, got, recording)
	assert.Equal(t, "upgrade", got[len(got)-1])
	s := w.simulate(rec.Trace)
	agreesWithOLM(t, s, recording)
	// The model's OperatorCondition kept up (no finding from a copy a
	// generation behind, "from the future"). The olm and naive gates
	// allowed on the empty OperatorCondition, as OLM did; the CR's own
	// Upgradeable was a fresh True (the operator wrote its False only
	// into the OperatorCondition), so that was no unsafe approval. The
	// strict gate, which wants a condition, blocked the replacement.
	assert.Equal(t, []string{"upgrade-while-blocked[strict]"}, s.violations(), "%s\n%s", recording, s.out)
	for _, v := range s.summary.Violations {
		assert.NotContains(t, v.Message, "future")
		assert.NotEqual(t, simulate.RuleGenerationModelMismatch, v.Rule)
	}
}

// TestPoint3SpecChangeBetweenCommitAndReplacement: OLM commits the
// upgrade (InstallReady) in the sync that finds the gate open; the
// deployment is replaced in a later one (installer.Install, then
// Installing). The test holds OLM's deployment write there, and the user
// changes the spec and the operator reports False meanwhile: the
// replacement goes ahead on a decision that no longer holds.
func TestPoint3SpecChangeBetweenCommitAndReplacement(t *testing.T) {
	w := newWorld(t, "none")
	w.running(false)
	gate := w.gateDeployments()
	rec := w.record()
	arrived, release := gate.holdWrites()
	defer release()
	w.installCSV(v2, "0.2.0", v1)
	select {
	case <-arrived: // installer.Install is writing the new deployment
	case <-time.After(90 * time.Second):
		t.Fatalf("OLM never wrote the new deployment; CSVs: %s", w.describeCSVs())
	}
	phase, _ := w.csvPhase(v2)
	require.Equal(t, string(operatorsv1alpha1.CSVPhaseInstallReady), phase, "committed, not yet replaced")
	gen := w.userSets("MariaDB")
	w.reports(metav1.ConditionFalse, "Migrating", gen)
	time.Sleep(500 * time.Millisecond) // the recorder sees both before the replacement
	release()
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
	require.Equal(t, 0, rec.StopWith(syscall.SIGINT))
	recording := rec.Read()
	all := steps(t, rec.Trace)
	got := olmSteps(all)
	require.GreaterOrEqual(t, len(got), 2, recording)
	assert.Equal(t, []string{"check Allow", "upgrade"}, got[len(got)-2:])
	var commit, upgrade, falseAt int
	for i, st := range all {
		switch {
		case st.Verb == v1alpha1.VerbCheck:
			commit = i
		case st.Verb == v1alpha1.VerbUpgrade:
			upgrade = i
		case st.Verb == v1alpha1.VerbUpdateStatus && st.Target == v1alpha1.TargetSource:
			falseAt = i
		}
	}
	assert.True(t, commit < falseAt && falseAt < upgrade, "the False lies between the commit and the replacement:\n%s", recording)
	s := w.simulate(rec.Trace)
	assert.ElementsMatch(t, []string{"olm", "strict", "naive"}, s.policiesOf(simulate.RuleUpgradeWhileBlocked), "the race is reported under every policy: %v", s.violations())
	for _, v := range s.of(simulate.RuleUpgradeWhileBlocked) {
		assert.Equal(t, simulate.KindRace, v.Kind, v.Message)
	}
}

// TestPoint4CRDeletedWithFinalizer: deleting a CR that has a finalizer
// marks it (deletionTimestamp, generation once); the operator's removal
// of the finalizer deletes it. That is a delete and an update, not an
// update of deletionTimestamp (which the apiserver refuses).
func TestPoint4CRDeletedWithFinalizer(t *testing.T) {
	w := newWorld(t, "none")
	w.running(false)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := w.cr().Get(context.Background(), w.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		obj.SetFinalizers([]string{"cool.operators.corp/cleanup"})
		_, err = w.cr().Update(context.Background(), obj, metav1.UpdateOptions{FieldManager: "cool-operator"})
		return err
	}))
	rec := w.record()
	require.NoError(t, w.cr().Delete(context.Background(), w.name, metav1.DeleteOptions{}))
	rec.WaitSteps(1)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := w.cr().Get(context.Background(), w.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		obj.SetFinalizers(nil)
		_, err = w.cr().Update(context.Background(), obj, metav1.UpdateOptions{FieldManager: "cool-operator"})
		return err
	}))
	rec.WaitSteps(2)
	require.Equal(t, 0, rec.StopWith(syscall.SIGINT))
	recording := rec.Read()
	all := steps(t, rec.Trace)
	require.Len(t, all, 2, recording)
	assert.Equal(t, v1alpha1.VerbDelete, all[0].Verb)
	assert.Equal(t, v1alpha1.VerbUpdate, all[1].Verb)
	s := w.simulate(rec.Trace)
	// No write the apiserver refuses (write-rejected), no generation it
	// would not give (generation-model-mismatch). The one finding is
	// true: the delete moved generation (the apiserver counts a
	// marking as a change: rest.BeforeDelete, delete.go), so the
	// operator's True is outdated, and only the naive policy, which
	// ignores observedGeneration, still allows.
	assert.Equal(t, []string{"unsafe-approval[naive]"}, s.violations(), "%s\n%s", recording, s.out)
	require.NotEmpty(t, s.summary.Final)
	assert.Contains(t, s.summary.Final[0].Reason, "does not exist", "the model's CR is gone, as the cluster's")
}

// TestPoint5FailedReplacementIsGatedAgain: the replacement fails (its
// deployment write is refused: Forbidden, which installer.Install makes
// InsufficientPermissions, unrecoverable, so Failed/InstallComponentFailedNoRetry
// and transitionCSVState leaves it alone), and is Failed when the
// recording starts. An RBAC change in the namespace is OLM's retry of such
// a CSV (syncObject: Pending/DetectedClusterChange); from Pending OLM gates
// it again, so the operator's False holds it before its True lets it
// through.
func TestPoint5FailedReplacementIsGatedAgain(t *testing.T) {
	w := newWorld(t, "operatorcondition")
	w.running(true)
	gate := w.gateDeployments()
	gate.refuse(true)
	w.installCSV(v2, "0.2.0", v1)
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseFailed, "")
	rec := w.record()
	w.mirrors(v1, metav1.ConditionFalse, "Migrating")
	w.waitOCStatus(v1, metav1.ConditionFalse)
	gate.refuse(false)
	w.changeRBAC()
	w.waitCSV(v2, operatorsv1alpha1.CSVPhasePending, operatorsv1alpha1.CSVReasonOperatorConditionNotUpgradeable)
	w.mirrors(v1, metav1.ConditionTrue, "Idle")
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
	require.Equal(t, 0, rec.StopWith(syscall.SIGINT))
	recording := rec.Read()
	got := olmSteps(steps(t, rec.Trace))
	require.NotEmpty(t, got, "a Failed replacement is not past the gate:\n%s", recording)
	assert.Equal(t, "check Block", got[0])
	assert.Equal(t, []string{"check Allow", "upgrade"}, got[len(got)-2:])
	s := w.simulate(rec.Trace)
	agreesWithOLM(t, s, recording)
	assert.False(t, s.has(simulate.RuleUpgradeWhileBlocked), "%v", s.violations())
}

// TestOutdatedConditionIsNotRead: today's OLM reads only the
// OperatorCondition; with the contract declared (no handshake), the
// operator's Upgradeable on the CR is outdated after a spec change, and
// OLM, finding an empty OperatorCondition, replaces the operator anyway.
// The recording shows it: OLM allowed (its expect) where the contract's
// gate blocks, on an OperatorCondition nobody wrote, which the replay
// diagnoses (status-source-not-read, not a check-expectation), and the
// upgrade happened while it blocked.
func TestOutdatedConditionIsNotRead(t *testing.T) {
	w := newWorld(t, "none")
	w.running(false)
	rec := w.record()
	w.userSets("MariaDB") // the operator has not reported on it yet
	w.installCSV(v2, "0.2.0", v1)
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
	require.Equal(t, 0, rec.StopWith(syscall.SIGINT))
	recording := rec.Read()
	got := olmSteps(steps(t, rec.Trace))
	assert.Equal(t, []string{"check Allow", "upgrade"}, got, recording)
	s := w.simulate(rec.Trace)
	assert.True(t, s.has(simulate.RuleStatusSourceNotRead), "OLM allowed where the contract blocks: %v", s.violations())
	agreesWithOLM(t, s, recording)
	assert.True(t, s.has(simulate.RuleUpgradeWhileBlocked), "%v", s.violations())
	for _, v := range s.of(simulate.RuleStatusSourceNotRead) {
		assert.Contains(t, v.Message, "outdated")
		assert.Contains(t, v.Message, "nobody wrote it")
		assert.Contains(t, v.Remediation, "generate -w --bridge IMAGE")
	}
}

// TestAdminOverride: an admin's spec.overrides Upgradeable=True lets the
// upgrade through while the operator says False; OLM's decision and the
// model's agree, and an approval an admin made is not the gate's.
func TestAdminOverride(t *testing.T) {
	w := newWorld(t, "operatorcondition")
	w.running(true)
	rec := w.record()
	w.mirrors(v1, metav1.ConditionFalse, "Migrating")
	w.waitOCStatus(v1, metav1.ConditionFalse)
	w.installCSV(v2, "0.2.0", v1)
	w.waitCSV(v2, operatorsv1alpha1.CSVPhasePending, operatorsv1alpha1.CSVReasonOperatorConditionNotUpgradeable)
	w.overrides(v1, metav1.ConditionTrue)
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
	require.Equal(t, 0, rec.StopWith(syscall.SIGINT))
	recording := rec.Read()
	assert.Contains(t, recording, "{actor: admin, target: OperatorCondition, update: ")
	got := olmSteps(steps(t, rec.Trace))
	require.NotEmpty(t, got, recording)
	assert.Equal(t, "check Block", got[0])
	assert.Equal(t, []string{"check Allow", "upgrade"}, got[len(got)-2:])
	s := w.simulate(rec.Trace)
	agreesWithOLM(t, s, recording)
	assert.False(t, s.has(simulate.RuleUpgradeWhileBlocked), "%v", s.violations())
	assert.False(t, s.has(simulate.RuleUnsafeApproval), "the admin decided: %v", s.violations())
}

// TestPoint7RunningCSVGoneSkipsTheGate: OLM's replace finder GETs the CSV
// being replaced; with it deleted, isReplacing returns nil and
// transitionCSVState never asks the gate. The recording says so, records
// no check from then on, and the replay shows the upgrade went round a
// gate that blocked.
func TestPoint7RunningCSVGoneSkipsTheGate(t *testing.T) {
	w := newWorld(t, "operatorcondition")
	w.running(true)
	rec := w.record()
	w.mirrors(v1, metav1.ConditionFalse, "Migrating")
	w.waitOCStatus(v1, metav1.ConditionFalse)
	w.installCSV(v2, "0.2.0", v1)
	w.waitCSV(v2, operatorsv1alpha1.CSVPhasePending, operatorsv1alpha1.CSVReasonOperatorConditionNotUpgradeable)
	require.NoError(t, w.c.OLM.OperatorsV1alpha1().ClusterServiceVersions(w.ns).Delete(context.Background(), v1, metav1.DeleteOptions{}))
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
	require.Equal(t, 0, rec.StopWith(syscall.SIGINT))
	recording := rec.Read()
	assert.Contains(t, recording, "OLM's gate is skipped")
	all := steps(t, rec.Trace)
	got := olmSteps(all)
	assert.Equal(t, []string{"check Block", "upgrade"}, got, "no check after the running CSV went:\n%s", recording)
	s := w.simulate(rec.Trace)
	assert.True(t, s.has(simulate.RuleUpgradeWhileBlocked), "the upgrade went round the gate: %v", s.violations())
	for _, v := range s.of(simulate.RuleUpgradeWhileBlocked) {
		assert.Equal(t, simulate.KindRoundTheGate, v.Kind, v.Message)
	}
}

// TestPoint8ListsAtOneRevision: the recorder's three starting lists are
// one moment of the cluster: the CSVs and OperatorConditions are listed
// at the resourceVersion of the CR's list (resourceVersionMatch=Exact).
// While the operator keeps writing the CR, the CSV written just after
// that revision is a recorded step, not part of the starting state.
func TestPoint8ListsAtOneRevision(t *testing.T) {
	w := newWorld(t, "operatorcondition")
	w.running(true)
	rec := w.record()
	recording := rec.Read()
	assert.Contains(t, recording, "lists at resourceVersion ", "the header says which revision the lists were taken at")
	var listRV string
	for _, line := range strings.Split(recording, "\n") {
		if i := strings.Index(line, "lists at resourceVersion "); i >= 0 {
			listRV = strings.TrimSuffix(strings.Fields(line[i+len("lists at resourceVersion "):])[0], ".")
		}
	}
	require.NotEmpty(t, listRV)
	oc, err := w.c.OLM.OperatorsV2().OperatorConditions(w.ns).Get(context.Background(), v1, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, recording, `"resourceVersion":"`+oc.ResourceVersion+`"`, "the header's OperatorCondition is the one at that revision")
	w.mirrors(v1, metav1.ConditionFalse, "Migrating")
	w.waitOCStatus(v1, metav1.ConditionFalse)
	rec.WaitSteps(2)
	require.Equal(t, 0, rec.StopWith(syscall.SIGINT))
	for _, st := range steps(t, rec.Trace) {
		assert.True(t, later(st.ResourceVersion, listRV), "step %s at %s comes after the lists' revision %s", st.Action(), st.ResourceVersion, listRV)
	}
}

// TestPoint9OneWriteWithoutStatusSubresource: without the status
// subresource an operator's one write carries spec and status and moves
// generation once; it is recorded as one update (it was two, moving the
// model's generation twice: a false generation-model-mismatch).
func TestPoint9OneWriteWithoutStatusSubresource(t *testing.T) {
	w := newWorld(t, "none")
	crdFile, ref := w.installNoSubresourceCRD()
	_, err := w.noSub().Create(context.Background(), &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": noSubGVR.GroupVersion().String(), "kind": "CoolNoSub",
		"metadata": map[string]interface{}{"name": w.name, "namespace": w.ns},
		"spec":     map[string]interface{}{"storageLayer": "PostgreSQL"}}}, metav1.CreateOptions{FieldManager: "kubectl-create"})
	require.NoError(t, err)
	rec := w.recordWith("--crd", crdFile, "--source", ref)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := w.noSub().Get(context.Background(), w.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		_ = unstructured.SetNestedField(obj.Object, "MariaDB", "spec", "storageLayer")
		obj.Object["status"] = map[string]interface{}{"conditions": []interface{}{map[string]interface{}{
			"type": "Upgradeable", "status": "False", "reason": "Migrating", "message": "m", "lastTransitionTime": "2026-12-01T00:00:00Z", "observedGeneration": obj.GetGeneration() + 1}}}
		_, err = w.noSub().Update(context.Background(), obj, metav1.UpdateOptions{FieldManager: "cool-operator"})
		return err
	}))
	rec.WaitSteps(1)
	time.Sleep(500 * time.Millisecond)
	require.Equal(t, 0, rec.StopWith(syscall.SIGINT))
	recording := rec.Read()
	all := steps(t, rec.Trace)
	require.Len(t, all, 1, "one write, one step:\n%s", recording)
	assert.Equal(t, v1alpha1.VerbUpdate, all[0].Verb)
	s := w.simulateWith(rec.Trace, "--crd", crdFile, "--source", ref)
	assert.False(t, s.has(simulate.RuleGenerationModelMismatch), "%v\n%s", s.violations(), recording)
}

// TestPoint7UnsafeFailForwardSkipsTheGate: with the OperatorGroup's
// upgradeStrategy TechPreviewUnsafeFailForward, a replacement that failed
// (v2) is itself replaced (v3) without waiting: OLM moves v2 to
// Replacing ungated (transitionCSVState, case Failed, before anything
// else) and v3's gate reads v2's OperatorCondition (isReplacing finds
// v2), which the running operator, v1, never writes. The test holds v2's
// deployment write (v2 committed), v1's operator says False, v3 arrives,
// and v2's write is refused with an error OLM retries: v2 fails, is
// replaced, and v3 goes ahead while v1 says False.
func TestPoint7UnsafeFailForwardSkipsTheGate(t *testing.T) {
	w := newWorld(t, "operatorcondition")
	w.failForward()
	w.running(true)
	gate := w.gateDeployments()
	rec := w.record()
	gate.refuseRetryably()
	arrived, release := gate.holdWrites()
	defer release()
	w.installCSV(v2, "0.2.0", v1)
	select {
	case <-arrived:
	case <-time.After(90 * time.Second):
		t.Fatalf("OLM never wrote v2's deployment; CSVs: %s", w.describeCSVs())
	}
	gate.refuse(false) // for v3; the held write is refused
	w.mirrors(v1, metav1.ConditionFalse, "Migrating")
	w.waitOCStatus(v1, metav1.ConditionFalse)
	w.installCSV(v3, "0.3.0", v2)
	release()
	w.waitCSV(v3, operatorsv1alpha1.CSVPhaseSucceeded, "")
	require.Equal(t, 0, rec.StopWith(syscall.SIGINT))
	recording := rec.Read()
	assert.Contains(t, recording, "which failed (UnsafeFailForward)")
	got := olmSteps(steps(t, rec.Trace))
	assert.Equal(t, []string{"check Allow", "upgrade"}, got, "v2's commit, then v3's replacement with no check of v1's gate:\n%s", recording)
	s := w.simulate(rec.Trace)
	agreesWithOLM(t, s, recording)
	assert.ElementsMatch(t, []string{"olm", "strict", "naive"}, s.policiesOf(simulate.RuleUpgradeWhileBlocked), "the running operator's False was gone round: %v\n%s", s.violations(), recording)
	for _, v := range s.of(simulate.RuleUpgradeWhileBlocked) {
		if v.Policy == "olm" {
			assert.Equal(t, simulate.KindRace, v.Kind, "olm's last check was v2's commit, which allowed: %s", v.Message)
		}
	}
}
