//go:build olmnative

package olm

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/simulate"
)

// The RequestAck handshake on OLM patched with olm/patches (0003): once a
// replacement is Pending, OLM writes an upgrade request to the status
// source and allows only on the operator's answer to it. These are the
// bridge's RequestAck scenarios (TestBridgeRequestAck, TestDefect2 and
// TestDefect3 in bridge_test.go and bridge_defects_test.go), run without
// the bridge: the request is OLM's, and so is the decision.

// olmRequest is OLM's request as the CR holds it: the token at
// spec.upgradeRequest ("" when none), the request annotation's token, and
// OLM's record (nil when none).
func (w *world) olmRequest() (spec, annotation string, rec *v1alpha1.ManagerRequestRecord) {
	w.t.Helper()
	cr, err := w.cr().Get(context.Background(), w.name, metav1.GetOptions{})
	require.NoError(w.t, err)
	spec, _, _ = unstructured.NestedString(cr.Object, "spec", "upgradeRequest")
	annotation = cr.GetAnnotations()[v1alpha1.DefaultRequestAnnotation]
	if raw, ok := cr.GetAnnotations()[v1alpha1.RequestRecordAnnotation]; ok {
		rec = &v1alpha1.ManagerRequestRecord{}
		require.NoError(w.t, json.Unmarshal([]byte(raw), rec), "OLM's record %s", raw)
	}
	return spec, annotation, rec
}

// answers is the operator's status write answering an annotation request:
// Upgradeable with og, and the token echoed at
// .status.observedUpgradeRequest.
func (w *world) answers(status metav1.ConditionStatus, reason string, og int64, echo string) {
	w.t.Helper()
	w.reportsWith(status, reason, og, map[string]interface{}{"observedUpgradeRequest": echo})
}

// TestNativeRequestAck: a spec request. OLM writes request 1 to
// spec.upgradeRequest (the generation moves) with its record, holds v2
// while the operator's True is the report from before the request, and
// releases it on the answer, a True for the request's generation; a
// user's spec change after the answer does not undo it. Once v2 runs OLM
// withdraws the request. The recording replays with the strict gate
// deciding as OLM did at every check.
func TestNativeRequestAck(t *testing.T) {
	w := newWorld(t, "request-spec")
	w.running(false)
	rec := w.record()
	start := time.Now()
	before := w.generation()
	w.installCSV(v2, "0.2.0", v1)
	// OLM's first sync writes the request ("requesting the answer of ...
	// (request 1)"), and the next, which the write brings, reads it back.
	w.waitHeld(v2, "upgrade request 1 to cool.operators.corp/v1beta1 CoolOperator/cool-operator is unanswered")
	spec, _, r := w.olmRequest()
	require.Equal(t, "1", spec, "OLM's request at spec.upgradeRequest")
	require.NotNil(t, r, "OLM's record of its request on the CR")
	assert.Equal(t, v1alpha1.ManagerRequestRecord{Token: 1, CSV: v2, Namespace: w.ns, Generation: before, UID: r.UID, SpecPath: ".spec.upgradeRequest"}, *r)
	gen := w.generation()
	require.Equal(t, before+1, gen, "the spec request moved the generation")

	w.reports(metav1.ConditionTrue, "OldReport", before) // a True from before the request is no answer
	time.Sleep(2 * time.Second)
	phase, reason, msg := w.csvMessage(v2)
	require.Equal(t, "Pending/OperatorConditionNotUpgradeable", phase+"/"+reason, "no replacement without the operator's answer: %s", msg)
	assert.Contains(t, msg, "is for generation 1, the request is generation 2")

	w.reports(metav1.ConditionFalse, "Migrating", gen)
	w.waitHeld(v2, `answered upgrade request 1 "Upgradeable"="False"`)
	// An admin's override False holds v2 whatever the answer, so that the
	// user's spec change lands after the answer and before the release
	// every time; with the override gone, the answer still stands.
	w.overrides(v1, metav1.ConditionFalse)
	w.reports(metav1.ConditionTrue, "UpgradeRequestAccepted", gen)
	w.waitHeld(v2, "set by an admin")
	w.userSets("MariaDB") // after the answer: deferred by the operator
	w.writeOC(v1, "kubectl-edit", func(oc *operatorsv2.OperatorCondition) { oc.Spec.Overrides = nil })
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
	t.Logf("%s: v2 succeeded", time.Since(start).Round(time.Millisecond))

	w.waitUntil("OLM to withdraw its request once v2 runs", 60*time.Second, func() bool {
		spec, _, r := w.olmRequest()
		return spec == "" && r != nil && r.CSV == ""
	})
	t.Logf("%s: the request withdrawn", time.Since(start).Round(time.Millisecond))
	_, _, r = w.olmRequest()
	assert.Equal(t, int64(1), r.Token, "the record keeps the count")

	recording, s := w.recordedAgrees(rec, true)
	assert.Contains(t, recording, "{actor: olm, request: ", "OLM's request is recorded as OLM's")
	assert.NotContains(t, recording, v1alpha1.RequestRecordAnnotation, "OLM's record is bookkeeping of the request, not a user's write")
	assert.False(t, s.has(simulate.RuleUnsafeApproval), "%v", s.violations())
}

// TestNativeRequestAckAnnotationEcho: an annotation request with an ack
// path. The annotation does not move the generation; the operator's echo
// of the token at .status.observedUpgradeRequest is the answer, and an
// old echo is none.
func TestNativeRequestAckAnnotationEcho(t *testing.T) {
	w := newWorld(t, "request-annotation-ack")
	w.running(false)
	gen := w.generation()
	w.installCSV(v2, "0.2.0", v1)
	w.waitHeld(v2, `upgrade request 1 to cool.operators.corp/v1beta1 CoolOperator/cool-operator is unanswered: .status.observedUpgradeRequest echoes ""`)
	_, annotation, r := w.olmRequest()
	require.Equal(t, "1", annotation, "OLM's request in the annotation")
	require.NotNil(t, r)
	assert.Equal(t, gen, w.generation(), "an annotation does not move the generation")

	w.answers(metav1.ConditionTrue, "Idle", gen, "0")
	w.waitHeld(v2, `.status.observedUpgradeRequest echoes "0"`)
	w.answers(metav1.ConditionFalse, "Migrating", gen, "1")
	w.waitHeld(v2, `answered upgrade request 1 "Upgradeable"="False"`)
	w.answers(metav1.ConditionTrue, "UpgradeRequestAccepted", gen, "1")
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
	w.waitUntil("OLM to withdraw its request annotation once v2 runs", 60*time.Second, func() bool {
		_, annotation, r := w.olmRequest()
		return annotation == "" && r != nil && r.CSV == ""
	})
}

// TestNativeRequestThatDidNotMoveGenerationIsNeverAnswered (the bridge's
// TestDefect2): a spec request at a field the CRD does not declare. The
// apiserver prunes it, the generation stays, and no True at that
// generation, old or written again, answers it: OLM holds v2 and says why,
// until an admin's override.
func TestNativeRequestThatDidNotMoveGenerationIsNeverAnswered(t *testing.T) {
	dir := copyBundle(t, "request-spec")
	file := filepath.Join(dir, "manifests", "cool-operator.clusterserviceversion.yaml")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	pruned := strings.Replace(string(data), `"specPath":".spec.upgradeRequest"`, `"specPath":".spec.notInTheSchema"`, 1)
	require.NotEqual(t, string(data), pruned)
	require.NoError(t, os.WriteFile(file, []byte(pruned), 0o644))
	w := newWorldAt(t, dir)
	w.running(false)
	gen := w.generation()

	w.installCSV(v2, "0.2.0", v1)
	w.waitHeld(v2, "never reached it (it holds no token at generation 1")
	_, _, r := w.olmRequest()
	require.NotNil(t, r, "OLM's record: the annotation is kept where the field is pruned")
	assert.Equal(t, int64(1), r.Token)
	assert.Equal(t, gen, w.generation(), "the apiserver pruned the request: the generation did not move")

	w.reports(metav1.ConditionTrue, "StillIdle", gen) // fresh, at the generation the request did not move
	time.Sleep(2 * time.Second)
	phase, reason, msg := w.csvMessage(v2)
	require.Equal(t, "Pending/OperatorConditionNotUpgradeable", phase+"/"+reason, msg)
	assert.Contains(t, msg, "never reached it")
	_, _, r = w.olmRequest()
	assert.Equal(t, int64(1), r.Token, "no second request: the first one is never answered")

	w.overrides(v1, metav1.ConditionTrue)
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
}

// TestNativeRequestStateLivesInTheCluster (the bridge's TestDefect3): OLM
// reads its request back from the CR on every sync, so the many syncs of
// a Pending CSV make one request; and a revert of the request (GitOps
// puts the spec back) plus a spec change after the answer is asked again,
// with the next token, and held until answered.
func TestNativeRequestStateLivesInTheCluster(t *testing.T) {
	w := newWorld(t, "request-spec")
	w.running(false)
	w.installCSV(v2, "0.2.0", v1)
	w.waitHeld(v2, "upgrade request 1 to cool.operators.corp/v1beta1 CoolOperator/cool-operator is unanswered")
	gen := w.generation()
	time.Sleep(2 * time.Second) // many syncs of the Pending v2 (OLM's Replacing loop requeues it on every sync)
	spec, _, r := w.olmRequest()
	assert.Equal(t, "1", spec, "one request, whatever the number of syncs")
	assert.Equal(t, gen, w.generation(), "nothing written to the spec since")
	require.NotNil(t, r)
	assert.Equal(t, int64(1), r.Token)

	// An admin's override (False) holds v2 whatever the answer, so that
	// the revert and the spec change land after the answer and before the
	// replacement every time; with the override gone, OLM decides on the
	// request again.
	w.overrides(v1, metav1.ConditionFalse)
	w.reports(metav1.ConditionTrue, "UpgradeRequestAccepted", w.generation())
	w.waitHeld(v2, "set by an admin")
	// GitOps puts the spec back as it keeps it (no request), then a user
	// changes it: the operator's True answers neither.
	w.updateCR("argocd-controller", func(cr *unstructured.Unstructured) {
		unstructured.RemoveNestedField(cr.Object, "spec", "upgradeRequest")
	})
	w.userSets("MariaDB")
	w.writeOC(v1, "kubectl-edit", func(oc *operatorsv2.OperatorCondition) { oc.Spec.Overrides = nil })
	w.waitHeld(v2, "upgrade request 2 to cool.operators.corp/v1beta1 CoolOperator/cool-operator is unanswered")
	spec, _, r = w.olmRequest()
	assert.Equal(t, "2", spec, "asked again, with the next token")
	assert.Equal(t, int64(2), r.Token)
	time.Sleep(time.Second)
	phase, _, msg := w.csvMessage(v2)
	require.Equal(t, string(operatorsv1alpha1.CSVPhasePending), phase, "held until request 2 is answered: %s", msg)
	w.reports(metav1.ConditionTrue, "UpgradeRequestAccepted", w.generation())
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
}

// TestNativeRequestAckLatency measures, over several upgrades, the two
// waits the handshake adds: from the replacing CSV's creation to OLM's
// request on the CR, and from the operator's answer (a True for the
// request's generation, written at once) to the replacement leaving
// Pending; and the window after the commit that the handshake covers.
// The release must be under a second and the request under five (it
// waits for the new CSV's first syncs): both ride on watch events (the
// CSV's, and the status source informer's), not on a resync (5 minutes).
func TestNativeRequestAckLatency(t *testing.T) {
	const runs = 5
	var asked, released, window []time.Duration
	for i := 0; i < runs; i++ {
		w := newWorld(t, "request-spec")
		w.running(false)
		start := time.Now()
		w.installCSV(v2, "0.2.0", v1)
		w.waitUntil("OLM's request", 30*time.Second, func() bool {
			spec, _, _ := w.olmRequest()
			return spec == "1"
		})
		asked = append(asked, time.Since(start))
		released = append(released, w.releaseLatency(v2, w.generation()))
		committed := time.Now()
		w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
		window = append(window, time.Since(committed))
	}
	t.Logf("request latency (CSV created to OLM's request on the CR, %d runs): %v", runs, roundAll(asked))
	t.Logf("answer latency (operator's answer to the replacement leaving Pending, %d runs): %v", runs, roundAll(released))
	// The window the handshake closes: after OLM's commit (v2 leaves
	// Pending) the gate is not asked again, and a False written before v2
	// runs is not seen; the operator that answered True starts nothing new
	// meanwhile. Polled every 50 ms.
	t.Logf("commit-to-replacement window (v2 leaving Pending to v2 Succeeded, %d runs): %v", runs, roundAll(window))
	for i := range asked {
		assert.Less(t, asked[i], 5*time.Second, "run %d: the request", i)
		assert.Less(t, released[i], time.Second, "run %d: the release", i)
	}
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

// TestNativeRequestAckChain (review finding 1 on patch 0003): v2 is held
// on its request when v3, which replaces v2, arrives. v3's gate reads
// v2's annotation, which names the same CR: the running operator's.
// Asking for itself, v3 would take v2's request for a stale one and the
// two would supersede each other's tokens on every sync for ever; v3
// asks nothing of its own, and the request to the running operator, made
// for v2, stands and counts for both. The operator's one answer releases
// the chain.
func TestNativeRequestAckChain(t *testing.T) {
	w := newWorld(t, "request-spec")
	w.running(false)
	w.installCSV(v2, "0.2.0", v1)
	w.waitHeld(v2, "upgrade request 1 to cool.operators.corp/v1beta1 CoolOperator/cool-operator is unanswered")
	w.installCSV(v3, "0.3.0", v2)
	w.waitHeld(v3, "upgrade request 1 to cool.operators.corp/v1beta1 CoolOperator/cool-operator is unanswered")
	gen := w.generation()
	time.Sleep(3 * time.Second) // many syncs of both Pending CSVs
	spec, _, r := w.olmRequest()
	require.NotNil(t, r)
	assert.Equal(t, "1", spec, "one request for the chain, not one per CSV")
	assert.Equal(t, v1alpha1.ManagerRequestRecord{Token: 1, CSV: v2, Namespace: w.ns, Generation: r.Generation, UID: r.UID, SpecPath: ".spec.upgradeRequest"}, *r)
	assert.Equal(t, gen, w.generation(), "no request written since: the generation stays")
	for _, csv := range []string{v2, v3} {
		phase, reason, msg := w.csvMessage(csv)
		assert.Equal(t, "Pending/OperatorConditionNotUpgradeable", phase+"/"+reason, "%s: %s", csv, msg)
	}

	// The answer releases v2, or v3 (OLM's replacement chain decides which
	// goes first). Once v2 runs, it is the running operator: its request
	// 1 is withdrawn when it succeeds, and v3 asks it, with token 2.
	w.reports(metav1.ConditionTrue, "UpgradeRequestAccepted", gen)
	asked := false
	w.waitUntil("v3 to succeed, or to ask v2's operator", 90*time.Second, func() bool {
		phase, _, msg := w.csvMessage(v3)
		asked = phase == string(operatorsv1alpha1.CSVPhasePending) && strings.Contains(msg, "upgrade request 2 to cool.operators.corp/v1beta1 CoolOperator/cool-operator is unanswered")
		return asked || phase == string(operatorsv1alpha1.CSVPhaseSucceeded)
	})
	if asked {
		spec, _, r := w.olmRequest()
		assert.Equal(t, "2", spec, "v3 asks the operator v2 now runs, with the next token")
		assert.Equal(t, v3, r.CSV)
		w.reports(metav1.ConditionTrue, "UpgradeRequestAccepted", w.generation())
	}
	t.Logf("v2 ran before v3 and was asked again: %v", asked)
	w.waitCSV(v3, operatorsv1alpha1.CSVPhaseSucceeded, "")
}

// TestNativeRequestRecordForged: a client that may update the CR rewrites
// OLM's record so that the operator's report from before the request
// answers it, under its own field manager or under OLM's
// (kubectl patch --field-manager=olm-status-source). OLM trusts only the
// record it wrote: it asks again, and the old report releases nothing.
func TestNativeRequestRecordForged(t *testing.T) {
	for _, manager := range []string{"kubectl-edit", "olm-status-source"} {
		t.Run(manager, func(t *testing.T) {
			w := newWorld(t, "request-spec")
			w.running(false)
			before := w.generation()
			w.reports(metav1.ConditionTrue, "Idle", before) // the operator's report from before any request
			w.installCSV(v2, "0.2.0", v1)
			w.waitHeld(v2, "upgrade request 1 to cool.operators.corp/v1beta1 CoolOperator/cool-operator is unanswered")
			_, _, r := w.olmRequest()
			require.NotNil(t, r)

			w.updateCR(manager, func(cr *unstructured.Unstructured) {
				forged := *r
				forged.Generation = 0 // so that the report from before the request answers it
				raw, err := json.Marshal(forged)
				require.NoError(t, err)
				a := cr.GetAnnotations()
				a[v1alpha1.RequestRecordAnnotation] = string(raw)
				cr.SetAnnotations(a)
			})
			w.waitHeld(v2, "upgrade request 2 to cool.operators.corp/v1beta1 CoolOperator/cool-operator is unanswered")
			spec, _, r2 := w.olmRequest()
			assert.Equal(t, "2", spec, "asked again: the record was not OLM's")
			assert.Equal(t, int64(2), r2.Token)
			phase, _, msg := w.csvMessage(v2)
			require.Equal(t, string(operatorsv1alpha1.CSVPhasePending), phase, "the old report released nothing: %s", msg)

			w.reports(metav1.ConditionTrue, "UpgradeRequestAccepted", w.generation())
			w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
		})
	}
}
