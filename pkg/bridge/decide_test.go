package bridge

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/contract"
)

var (
	t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Hour)
)

func source(mode v1alpha1.HandshakeMode, whenAbsent v1alpha1.WhenAbsent) *v1alpha1.StatusSource {
	s := &v1alpha1.StatusSource{APIVersion: "cool.operators.corp/v1beta1", Kind: "CoolOperator", Name: "cool-operator", WhenAbsent: whenAbsent}
	switch mode {
	case v1alpha1.HandshakeRequestAck:
		s.Handshake = &v1alpha1.Handshake{Mode: mode, Request: &v1alpha1.HandshakeRequest{SpecPath: ".spec.upgradeRequest"}}
	case v1alpha1.HandshakeNone:
	default:
		s.Handshake = &v1alpha1.Handshake{Mode: mode}
	}
	return s
}

// cr is the status-source CR at generation gen with one condition per
// entry of conds: "TYPE=STATUS@OG" (no @: no observedGeneration), or with
// a reason: "TYPE=STATUS@OG:REASON".
func cr(gen int64, conds ...string) *unstructured.Unstructured {
	var list []interface{}
	for _, c := range conds {
		typ, rest, _ := strings.Cut(c, "=")
		status, rest, hasOG := strings.Cut(rest, "@")
		og, reason, _ := strings.Cut(rest, ":")
		if reason == "" {
			reason = "Idle"
		}
		m := map[string]interface{}{"type": typ, "status": status, "reason": reason, "message": "the operator says " + status, "lastTransitionTime": "2024-01-01T00:00:00Z"}
		if hasOG {
			var n int64
			for _, ch := range og {
				n = n*10 + int64(ch-'0')
			}
			m["observedGeneration"] = n
		}
		list = append(list, m)
	}
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "cool.operators.corp/v1beta1", "kind": "CoolOperator",
		"metadata": map[string]interface{}{"name": "cool-operator", "namespace": "cool", "generation": gen},
		"status":   map[string]interface{}{"conditions": list}}}
	return u
}

func oc(conds ...metav1.Condition) *operatorsv2.OperatorCondition {
	return &operatorsv2.OperatorCondition{ObjectMeta: metav1.ObjectMeta{Name: "cool-operator.v0.1.0", Namespace: "cool"},
		Spec: operatorsv2.OperatorConditionSpec{Conditions: conds,
			Overrides: []metav1.Condition{{Type: "Upgradeable", Status: metav1.ConditionTrue, Reason: "Admin", LastTransitionTime: metav1.NewTime(t0)}}}}
}

// withDigest is o with the digest of its Upgradeable entry, as the
// bridge leaves it after writing the entry.
func withDigest(o *operatorsv2.OperatorCondition) *operatorsv2.OperatorCondition {
	if e := meta.FindStatusCondition(o.Spec.Conditions, "Upgradeable"); e != nil {
		o.Annotations = map[string]string{AnnotationEntry: EntryDigest(*e)}
	}
	return o
}

func csv(name, replaces string, copied bool) operatorsv1alpha1.ClusterServiceVersion {
	c := operatorsv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: operatorsv1alpha1.ClusterServiceVersionSpec{Replaces: replaces}}
	if copied {
		c.Labels = map[string]string{operatorsv1alpha1.CopiedLabelKey: "elsewhere"}
	}
	return c
}

// TestDecide is issue 19's table: each row of "what it writes".
func TestDecide(t *testing.T) {
	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", Message: "not the bridge's", LastTransitionTime: metav1.NewTime(t0)}
	prevFalse := metav1.Condition{Type: "Upgradeable", Status: metav1.ConditionFalse, Reason: "Old", LastTransitionTime: metav1.NewTime(t0)}
	prevTrue := metav1.Condition{Type: "Upgradeable", Status: metav1.ConditionTrue, Reason: ReasonUpgradeable, Message: "Upgradeable=True (observedGeneration 3, generation 3)", LastTransitionTime: metav1.NewTime(t0)}
	none := source(v1alpha1.HandshakeNone, "")
	multi := source(v1alpha1.HandshakeNone, "")
	multi.Conditions = []string{"Upgradeable", "MigrationsDone"}
	tests := []struct {
		name       string
		in         Input
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMsg    string
		wantWrite  bool
		// wantTransition is the entry's lastTransitionTime.
		wantTransition time.Time
	}{
		{name: "a fresh True is True", in: Input{Source: none, CR: cr(3, "Upgradeable=True@3"), OC: oc(ready, prevFalse)},
			wantStatus: metav1.ConditionTrue, wantReason: ReasonUpgradeable, wantMsg: "Upgradeable=True (observedGeneration 3, generation 3)", wantWrite: true, wantTransition: t1},
		{name: "a fresh False is False with the CR's reason and message", in: Input{Source: none, CR: cr(3, "Upgradeable=False@3:MigrationInProgress"), OC: oc(ready)},
			wantStatus: metav1.ConditionFalse, wantReason: "MigrationInProgress", wantMsg: "the operator says False", wantWrite: true, wantTransition: t1},
		{name: "a fresh Unknown is False", in: Input{Source: none, CR: cr(3, "Upgradeable=Unknown@3:Starting"), OC: oc()},
			wantStatus: metav1.ConditionFalse, wantReason: "Starting", wantMsg: "Upgradeable=Unknown: the operator says Unknown", wantWrite: true, wantTransition: t1},
		{name: "a reason metav1.Condition refuses is replaced", in: Input{Source: none, CR: cr(3, "Upgradeable=False@3:not a reason!"), OC: oc()},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonNotUpgradeable, wantMsg: "the operator says False", wantWrite: true, wantTransition: t1},
		{name: "an outdated True is False", in: Input{Source: none, CR: cr(4, "Upgradeable=True@3"), OC: oc(prevTrue)},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonOutdated, wantMsg: "Upgradeable=True is outdated (observedGeneration 3, generation 4)", wantWrite: true, wantTransition: t1},
		{name: "a True without observedGeneration is outdated", in: Input{Source: none, CR: cr(1, "Upgradeable=True"), OC: oc()},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonOutdated, wantMsg: "Upgradeable=True is outdated (observedGeneration absent, generation 1)", wantWrite: true, wantTransition: t1},
		{name: "a condition from the future is False", in: Input{Source: none, CR: cr(2, "Upgradeable=True@5"), OC: oc()},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonFromTheFuture, wantMsg: "Upgradeable=True is from the future (observedGeneration 5, generation 2)", wantWrite: true, wantTransition: t1},
		{name: "no condition is False", in: Input{Source: none, CR: cr(2), OC: oc()},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonNoCondition, wantMsg: "no Upgradeable condition", wantWrite: true, wantTransition: t1},
		{name: "every gated condition counts", in: Input{Source: multi, CR: cr(2, "Upgradeable=True@2", "MigrationsDone=False@2:Running"), OC: oc()},
			wantStatus: metav1.ConditionFalse, wantReason: "Running", wantMsg: "the operator says False", wantWrite: true, wantTransition: t1},
		{name: "the CR absent, whenAbsent Allow", in: Input{Source: none, OC: oc()},
			wantStatus: metav1.ConditionTrue, wantReason: ReasonAbsent, wantMsg: "status source does not exist (whenAbsent: Allow)", wantWrite: true, wantTransition: t1},
		{name: "the CR absent, whenAbsent Block", in: Input{Source: source(v1alpha1.HandshakeNone, v1alpha1.WhenAbsentBlock), OC: oc()},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonAbsent, wantMsg: "status source does not exist (whenAbsent: Block)", wantWrite: true, wantTransition: t1},
		{name: "what the OC already says is not written, and keeps its time", in: Input{Source: none, CR: cr(3, "Upgradeable=True@3"), OC: withDigest(oc(ready, prevTrue))},
			wantStatus: metav1.ConditionTrue, wantReason: ReasonUpgradeable, wantMsg: prevTrue.Message, wantWrite: false, wantTransition: t0},
		{name: "a new reason with the same status keeps the transition time", in: Input{Source: none, CR: cr(4, "Upgradeable=False@4:Migrating"), OC: oc(prevFalse)},
			wantStatus: metav1.ConditionFalse, wantReason: "Migrating", wantMsg: "the operator says False", wantWrite: true, wantTransition: t0},
		{name: "an admin's override does not change what the bridge writes", in: Input{Source: none, CR: cr(4, "Upgradeable=False@4:Migrating"), OC: oc()},
			wantStatus: metav1.ConditionFalse, wantReason: "Migrating", wantMsg: "the operator says False", wantWrite: true, wantTransition: t1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Now, tt.in.Running = t1, "cool-operator.v0.1.0"
			var before *operatorsv2.OperatorCondition
			if tt.in.OC != nil {
				before = tt.in.OC.DeepCopy()
			}
			d := Decide(tt.in)
			assert.Equal(t, "Upgradeable", d.Condition.Type)
			assert.Equal(t, tt.wantStatus, d.Condition.Status)
			assert.Equal(t, tt.wantReason, d.Condition.Reason)
			assert.Equal(t, tt.wantMsg, d.Condition.Message)
			assert.Equal(t, tt.wantWrite, d.WriteOC)
			assert.True(t, tt.wantTransition.Equal(d.Condition.LastTransitionTime.Time), "lastTransitionTime %s", d.Condition.LastTransitionTime)
			assert.Nil(t, d.Request, "freshness mode requests nothing")
			// Only the Upgradeable entry: every other one as it was, the
			// input untouched.
			require.NotNil(t, before)
			assert.Equal(t, before, tt.in.OC, "the input is not modified")
			var others []metav1.Condition
			for _, c := range d.Conditions {
				if c.Type != "Upgradeable" {
					others = append(others, c)
				}
			}
			var wantOthers []metav1.Condition
			for _, c := range before.Spec.Conditions {
				if c.Type != "Upgradeable" {
					wantOthers = append(wantOthers, c)
				}
			}
			assert.Equal(t, wantOthers, others)
			assert.Len(t, d.Conditions, len(wantOthers)+1, "one Upgradeable entry, never deleted")
		})
	}
}

// withRecord is cr with the bridge's request record and the token at
// spec.upgradeRequest (token "" leaves the spec without one).
func withRecord(u *unstructured.Unstructured, rec RequestRecord, token string) *unstructured.Unstructured {
	u = u.DeepCopy()
	raw, _ := json.Marshal(rec)
	u.SetAnnotations(map[string]string{AnnotationRequest: string(raw)})
	if token != "" {
		_ = unstructured.SetNestedField(u.Object, token, "spec", "upgradeRequest")
	}
	return u
}

// TestDecideRequestAck is lock flow B: no request until a CSV replaces
// the running one; then the request (typed as the CRD types the token),
// read back from the CR on every decision; True only on a fresh True
// answer to it.
// withManagerRecord is u with a lifecycle manager's request record.
func withManagerRecord(u *unstructured.Unstructured, raw string) *unstructured.Unstructured {
	a := u.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[v1alpha1.RequestRecordAnnotation] = raw
	u.SetAnnotations(a)
	return u
}

func TestDecideRequestAck(t *testing.T) {
	src := source(v1alpha1.HandshakeRequestAck, "")
	next := []operatorsv1alpha1.ClusterServiceVersion{csv("cool-operator.v0.1.0", "", false), csv("cool-operator.v0.2.0", "cool-operator.v0.1.0", false)}
	copiedOnly := []operatorsv1alpha1.ClusterServiceVersion{csv("cool-operator.v0.2.0", "cool-operator.v0.1.0", true)}
	rec := RequestRecord{Token: 1, CSV: "cool-operator.v0.2.0", Generation: 3}
	standing := func(u *unstructured.Unstructured) *unstructured.Unstructured { return withRecord(u, rec, "1") }
	record := func(r RequestRecord) string { raw, _ := json.Marshal(r); return string(raw) }
	tests := []struct {
		name        string
		in          Input
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantRequest map[string]interface{}
		wantToken   int64
	}{
		{name: "no CSV replaces the running one", in: Input{CR: cr(3, "Upgradeable=True@3"), CSVs: next[:1]},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonNoRequest},
		{name: "a copied CSV is not an upgrade here", in: Input{CR: cr(3, "Upgradeable=True@3"), CSVs: copiedOnly},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonNoRequest},
		{name: "an upgrade appears: request, still False", in: Input{CR: cr(3, "Upgradeable=True@3"), CSVs: next},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonRequested,
			wantRequest: map[string]interface{}{"metadata": map[string]interface{}{"annotations": map[string]interface{}{AnnotationRequest: record(RequestRecord{Token: 1, CSV: "cool-operator.v0.2.0", Generation: 3})}},
				"spec": map[string]interface{}{"upgradeRequest": "1"}}, wantToken: 1},
		{name: "an integer token where the CRD says integer", in: Input{CR: cr(3, "Upgradeable=True@3"), CSVs: next, Tokens: contract.Tokens{Request: contract.TokenInteger}},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonRequested,
			wantRequest: map[string]interface{}{"metadata": map[string]interface{}{"annotations": map[string]interface{}{AnnotationRequest: record(RequestRecord{Token: 1, CSV: "cool-operator.v0.2.0", Generation: 3})}},
				"spec": map[string]interface{}{"upgradeRequest": int64(1)}}, wantToken: 1},
		{name: "the next request counts on from a withdrawn one", in: Input{CR: withRecord(cr(3, "Upgradeable=True@3"), RequestRecord{Token: 4}, ""), CSVs: next},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonRequested,
			wantRequest: map[string]interface{}{"metadata": map[string]interface{}{"annotations": map[string]interface{}{AnnotationRequest: record(RequestRecord{Token: 5, CSV: "cool-operator.v0.2.0", Generation: 3})}},
				"spec": map[string]interface{}{"upgradeRequest": "5"}}, wantToken: 5},
		{name: "a True for before the request is no answer", in: Input{CR: standing(cr(4, "Upgradeable=True@3")), CSVs: next},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonUnanswered},
		{name: "the answer False", in: Input{CR: standing(cr(4, "Upgradeable=False@4")), CSVs: next},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonUnanswered},
		{name: "the answer True", in: Input{CR: standing(cr(4, "Upgradeable=True@4")), CSVs: next},
			wantStatus: metav1.ConditionTrue, wantReason: ReasonAnswered},
		{name: "a spec change after the answer is deferred: still True", in: Input{CR: standing(cr(5, "Upgradeable=True@4")), CSVs: next},
			wantStatus: metav1.ConditionTrue, wantReason: ReasonAnswered},
		{name: "the CR absent is whenAbsent", in: Input{CSVs: next},
			wantStatus: metav1.ConditionTrue, wantReason: ReasonAbsent},
		{name: "the replacing CSV gone: the request is withdrawn", in: Input{CR: standing(cr(4, "Upgradeable=True@4")), CSVs: next[:1]},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonNoRequest,
			wantRequest: map[string]interface{}{"metadata": map[string]interface{}{"annotations": map[string]interface{}{AnnotationRequest: record(RequestRecord{Token: 1})}},
				"spec": map[string]interface{}{"upgradeRequest": nil}}, wantToken: 1},
		// The patched OLM (olm/patches 0003) makes its own requests: the
		// bridge would take OLM's token for a revert and ask again, and
		// OLM the bridge's, for ever. It stands down, holding.
		{name: "OLM's request stands: the bridge makes none", in: Input{CR: withManagerRecord(cr(3, "Upgradeable=True@3"), `{"token":1,"csv":"cool-operator.v0.2.0","generation":3,"uid":"`+string(cr(3).GetUID())+`"}`), CSVs: next},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonManagerRequests},
		// A withdrawn record stays for good (it keeps OLM's count): an
		// OLM since replaced by one without RequestAck would otherwise
		// leave the bridge holding for ever.
		{name: "OLM's withdrawn request: the bridge asks", in: Input{CR: withManagerRecord(cr(3, "Upgradeable=True@3"), `{"token":1}`), CSVs: next},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonRequested,
			wantRequest: map[string]interface{}{"metadata": map[string]interface{}{"annotations": map[string]interface{}{AnnotationRequest: record(RequestRecord{Token: 1, CSV: "cool-operator.v0.2.0", Generation: 3})}},
				"spec": map[string]interface{}{"upgradeRequest": "1"}}, wantToken: 1},
		{name: "OLM's request copied from another object does not stand", in: Input{CR: withManagerRecord(cr(3, "Upgradeable=True@3"), `{"token":1,"csv":"cool-operator.v0.2.0","generation":3,"uid":"another"}`), CSVs: next},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonRequested,
			wantRequest: map[string]interface{}{"metadata": map[string]interface{}{"annotations": map[string]interface{}{AnnotationRequest: record(RequestRecord{Token: 1, CSV: "cool-operator.v0.2.0", Generation: 3})}},
				"spec": map[string]interface{}{"upgradeRequest": "1"}}, wantToken: 1},
		{name: "a withdrawn request is not withdrawn again", in: Input{CR: withRecord(cr(4, "Upgradeable=True@4"), RequestRecord{Token: 1}, ""), CSVs: next[:1]},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonNoRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Source, tt.in.Running, tt.in.Now, tt.in.OC = src, "cool-operator.v0.1.0", t1, oc()
			d := Decide(tt.in)
			assert.Equal(t, tt.wantStatus, d.Condition.Status, d.Gate.Reason)
			assert.Equal(t, tt.wantReason, d.Condition.Reason)
			if tt.wantRequest == nil {
				assert.Nil(t, d.Request)
				return
			}
			require.NotNil(t, d.Request)
			assert.Equal(t, tt.wantRequest, d.Request.Patch)
			assert.Equal(t, tt.wantToken, d.Request.Record.Token)
		})
	}
	t.Run("an annotation request", func(t *testing.T) {
		s := source(v1alpha1.HandshakeRequestAck, "")
		s.Handshake.Request = &v1alpha1.HandshakeRequest{Annotation: "cool.operators.corp/upgrade-request"}
		s.Handshake.Ack = &v1alpha1.HandshakeAck{StatusPath: ".status.observedUpgradeRequest"}
		d := Decide(Input{Source: s, CR: cr(3, "Upgradeable=True@3"), CSVs: next, Running: "cool-operator.v0.1.0", Now: t1, Tokens: contract.Tokens{Request: contract.TokenInteger}})
		require.NotNil(t, d.Request)
		assert.Equal(t, map[string]interface{}{"metadata": map[string]interface{}{"annotations": map[string]interface{}{
			AnnotationRequest:                     record(RequestRecord{Token: 1, CSV: "cool-operator.v0.2.0", Generation: 3}),
			"cool.operators.corp/upgrade-request": "1"}}}, d.Request.Patch, "an annotation is a string")
	})
	t.Run("the CR's resourceVersion is the request's precondition", func(t *testing.T) {
		u := cr(3, "Upgradeable=True@3")
		u.SetResourceVersion("42")
		d := Decide(Input{Source: src, CR: u, CSVs: next, Running: "cool-operator.v0.1.0", Now: t1})
		require.NotNil(t, d.Request)
		assert.Equal(t, "42", d.Request.Patch["metadata"].(map[string]interface{})["resourceVersion"])
	})
}

func TestDecideWithoutOperatorConditionWritesNothing(t *testing.T) {
	d := Decide(Input{Source: source(v1alpha1.HandshakeNone, ""), CR: cr(3, "Upgradeable=True@3"), Now: t1})
	assert.False(t, d.WriteOC)
	assert.Nil(t, d.Conditions)
	assert.Equal(t, metav1.ConditionTrue, d.Condition.Status)
}

// BenchmarkDecide is the cost of a decision, beside the contract's gate
// on the same CR (the anchor: what any reader of the condition pays).
func BenchmarkDecide(b *testing.B) {
	in := Input{Source: source(v1alpha1.HandshakeNone, ""), CR: cr(3, "Upgradeable=True@3"), Running: "cool-operator.v0.1.0", Now: t1,
		OC: oc(metav1.Condition{Type: "Upgradeable", Status: metav1.ConditionFalse, Reason: "Old", LastTransitionTime: metav1.NewTime(t0)})}
	b.Run("contract.Gate", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if d := contract.Gate(contract.PolicyStrict, in.Source, contract.ObservationFrom(in.CR, in.Source)); d.Verdict != contract.Allow {
				b.Fatal(d.Reason)
			}
		}
	})
	b.Run("Decide", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if d := Decide(in); !d.WriteOC {
				b.Fatal("no write")
			}
		}
	})
}

// TestDecideReviewFindings: what the review of issue 25's bridge found,
// each a case that failed before its fix.
func TestDecideReviewFindings(t *testing.T) {
	ack := source(v1alpha1.HandshakeRequestAck, "")
	next := []operatorsv1alpha1.ClusterServiceVersion{csv("cool-operator.v0.2.0", "cool-operator.v0.1.0", false)}
	in := func(src *v1alpha1.StatusSource, u *unstructured.Unstructured, o *operatorsv2.OperatorCondition, csvs []operatorsv1alpha1.ClusterServiceVersion) Input {
		return Input{Source: src, CR: u, OC: o, CSVs: csvs, Running: "cool-operator.v0.1.0", Now: t1}
	}
	t.Run("an operator that writes only another condition type is no other writer", func(t *testing.T) {
		o := oc(metav1.Condition{Type: "Degraded", Status: metav1.ConditionFalse, Reason: "AsExpected", LastTransitionTime: metav1.NewTime(t0)})
		o.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "some-operator", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:conditions":{}}}`)}}}
		d := Decide(in(source(v1alpha1.HandshakeNone, ""), cr(3, "Upgradeable=False@3:Migrating"), o, nil))
		assert.Empty(t, d.Yield)
		assert.True(t, d.WriteOC)
		assert.Equal(t, metav1.ConditionFalse, d.Condition.Status)
	})
	t.Run("an entry the bridge wrote is the bridge's, whoever owns the list", func(t *testing.T) {
		o := withDigest(oc(metav1.Condition{Type: "Upgradeable", Status: metav1.ConditionTrue, Reason: ReasonUpgradeable, Message: "m", LastTransitionTime: metav1.NewTime(t0)}))
		o.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl-patch", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:conditions":{}}}`)}}}
		d := Decide(in(source(v1alpha1.HandshakeNone, ""), cr(4, "Upgradeable=True@3"), o, nil))
		assert.Empty(t, d.Yield)
		assert.Equal(t, ReasonOutdated, d.Condition.Reason)
	})
	t.Run("an old echo never answers a new request: tokens go on from it", func(t *testing.T) {
		s := source(v1alpha1.HandshakeRequestAck, "")
		s.Handshake.Request = &v1alpha1.HandshakeRequest{Annotation: "cool.operators.corp/upgrade-request"}
		s.Handshake.Ack = &v1alpha1.HandshakeAck{StatusPath: ".status.observedUpgradeRequest"}
		u := cr(3, "Upgradeable=True@3")
		u.Object["status"].(map[string]interface{})["observedUpgradeRequest"] = "1"
		d := Decide(in(s, u, oc(), next))
		require.NotNil(t, d.Request)
		assert.Equal(t, int64(2), d.Request.Record.Token)
	})
	t.Run("two replacing CSVs: the request stays with the one it is for", func(t *testing.T) {
		two := append([]operatorsv1alpha1.ClusterServiceVersion{csv("cool-operator.v0.2.0-hotfix", "cool-operator.v0.1.0", false)}, next...)
		d := Decide(in(ack, cr(3, "Upgradeable=True@3"), oc(), two))
		require.NotNil(t, d.Request)
		assert.Equal(t, "cool-operator.v0.2.0", d.Request.Record.CSV, "the lowest name, whatever the order")
		standing := withRecord(cr(4, "Upgradeable=False@4"), RequestRecord{Token: 1, CSV: "cool-operator.v0.2.0-hotfix", Generation: 3}, "1")
		d = Decide(in(ack, standing, oc(), two))
		assert.Nil(t, d.Request, "no new request while its CSV is there")
		assert.Equal(t, ReasonUnanswered, d.Condition.Reason)
	})
	t.Run("exhausted tokens hold and say so", func(t *testing.T) {
		u := withRecord(cr(3, "Upgradeable=True@3"), RequestRecord{Token: math.MaxInt64}, "")
		d := Decide(in(ack, u, oc(), next))
		assert.Nil(t, d.Request)
		assert.Equal(t, metav1.ConditionFalse, d.Condition.Status)
		assert.Contains(t, d.Condition.Message, "exhausted")
	})
	t.Run("a long message is cut at a character, the same every time", func(t *testing.T) {
		u := cr(3, "Upgradeable=False@3:Migrating")
		conds := u.Object["status"].(map[string]interface{})["conditions"].([]interface{})
		conds[0].(map[string]interface{})["message"] = strings.Repeat("é", 20000)
		d := Decide(in(source(v1alpha1.HandshakeNone, ""), u, oc(), nil))
		assert.True(t, utf8.ValidString(d.Condition.Message))
		assert.LessOrEqual(t, len(d.Condition.Message), maxMessage)
		o := oc(d.Conditions...)
		o.Annotations = map[string]string{AnnotationEntry: d.Digest}
		assert.False(t, Decide(in(source(v1alpha1.HandshakeNone, ""), u, o, nil)).WriteOC, "nothing to write on the next sync")
	})
}
