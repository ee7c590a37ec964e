// Package bridge makes the status-source contract work on today's OLM v0,
// which reads only the OperatorCondition: the operator writes its own CR's
// conditions, and the bridge writes the Upgradeable entry of the
// OperatorCondition's spec.conditions from them (docs/contract.md;
// docs/bridge.md). This file is its pure decision: values in, values out,
// on the gate code validate and simulate use (package contract). The
// runner that reads and writes the cluster is package bridge/controller,
// so that validate and simulate, which decide as the bridge does, do not
// link controller-runtime.
//
// The decision fails closed: the entry is True only where the contract's
// gate allows on the state just read, and False (never Unknown: OLM's
// isOperatorUpgradeable blocks only on False) everywhere else. Under
// RequestAck the request lives in the cluster, on the CR (an annotation
// the decision reads back on every sync), not in a process, so restarts,
// replicas, reverts and a CR made again are decided on what the cluster
// holds.
package bridge

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/jsonobj"
	"github.com/statuscheck/statuscheck/pkg/contract"
)

// Reasons the bridge writes when the CR's own reason does not say it.
const (
	ReasonAbsent         = "StatusSourceAbsent"
	ReasonUpgradeable    = "StatusSourceUpgradeable"
	ReasonNotUpgradeable = "StatusSourceNotUpgradeable"
	ReasonNoCondition    = "StatusSourceNoCondition"
	ReasonOutdated       = "StatusSourceOutdated"
	ReasonFromTheFuture  = "StatusSourceFromTheFuture"
	ReasonNoRequest      = "NoUpgradeRequested"
	ReasonRequested      = "UpgradeRequested"
	ReasonUnanswered     = "UpgradeRequestUnanswered"
	ReasonAnswered       = "UpgradeRequestAnswered"
	// ReasonNotObservable: the request did not move the CR's generation
	// (the apiserver pruned the field, or it changed nothing), so no
	// answer can be told from an old report.
	ReasonNotObservable = "UpgradeRequestNotObservable"
	// ReasonStopped: the bridge withdrew its True on a graceful stop.
	ReasonStopped = "StatusSourceBridgeStopped"
	// ReasonUnreadable: the OperatorCondition can be read but the CR
	// cannot.
	ReasonUnreadable = "StatusSourceUnreadable"
	// ReasonManagerRequests: the lifecycle manager makes its own RequestAck
	// requests (OLM with olm/patches): the bridge makes none.
	ReasonManagerRequests = "LifecycleManagerRequests"
)

// FieldManager is the field manager the bridge writes under; an
// OperatorCondition whose spec.conditions another manager owns has
// another writer (OtherWriter).
const FieldManager = "statuscheck-bridge"

// AnnotationEntry is where the bridge keeps, on the OperatorCondition,
// the digest of the Upgradeable entry it last wrote (EntryDigest): an
// entry that differs from it was written by someone else.
const AnnotationEntry = "statuscheck.operatorframework.io/upgradeable-entry"

// AnnotationRequest is where the bridge keeps its RequestAck request on
// the status-source CR: a RequestRecord as JSON. The cluster holds it, so
// every replica and every restart reads the same request.
const AnnotationRequest = v1alpha1.BridgeRequestRecordAnnotation

// RequestRecord is the bridge's request as the CR keeps it.
type RequestRecord struct {
	// Token counts the requests made to this CR; it never repeats, so an
	// old echo is never an answer to a new request.
	Token int64 `json:"token"`
	// CSV is the replacing CSV the request is for; "" once withdrawn.
	CSV string `json:"csv,omitempty"`
	// Generation is the CR's metadata.generation the request was written
	// at (before it: a spec request moves it by one).
	Generation int64 `json:"generation,omitempty"`
	// UID is the CR's: a record on another object (the CR deleted and
	// made again from a copy) is no request to it.
	UID types.UID `json:"uid,omitempty"`
}

// RecordOf reads the bridge's request record from a CR; nil when there
// is none or it is not one (then it is written anew).
func RecordOf(cr *unstructured.Unstructured) *RequestRecord {
	if cr == nil {
		return nil
	}
	raw, ok := cr.GetAnnotations()[AnnotationRequest]
	if !ok {
		return nil
	}
	var r RequestRecord
	if json.Unmarshal([]byte(raw), &r) != nil || r.Token < 0 {
		return nil
	}
	return &r
}

// Input is what the bridge has read.
type Input struct {
	// Source is the status source, Tokens its handshake token's types
	// (decided from the CRD or the served schema).
	Source *v1alpha1.StatusSource
	Tokens contract.Tokens
	// CR is the status-source CR, nil when it does not exist.
	CR *unstructured.Unstructured
	// OC is the running CSV's OperatorCondition (OLM names it after the
	// CSV), with its managedFields; nil when there is none, and then
	// nothing is written.
	OC *operatorsv2.OperatorCondition
	// Running is the running CSV's name (OPERATOR_CONDITION_NAME).
	Running string
	// CSVs are the namespace's ClusterServiceVersions (RequestAck only;
	// the name, spec.replaces and what IsCopied reads are enough): one
	// that replaces Running is an upgrade OLM is about to gate.
	CSVs []operatorsv1alpha1.ClusterServiceVersion
	// Now is the time of a condition that changes status.
	Now time.Time
}

// Decision is what the bridge writes.
type Decision struct {
	// Gate is the contract's verdict on the CR, with its reason.
	Gate contract.Decision
	// Condition is the OperatorCondition's Upgradeable entry: True exactly
	// where Gate allows, else False.
	Condition metav1.Condition
	// Conditions is the OperatorCondition's whole spec.conditions with
	// that entry set, as the only Upgradeable entry (duplicates folded
	// into it; meta.SetStatusCondition keeps lastTransitionTime while the
	// status stays); every other entry as it was.
	Conditions []metav1.Condition
	// WriteOC is set when Conditions differs from the OperatorCondition's.
	WriteOC bool
	// Yield names another writer of the OperatorCondition's Upgradeable
	// entry (OtherWriter): the bridge then writes nothing, neither the
	// entry nor a request.
	Yield string
	// Digest is the written entry's EntryDigest, kept in the
	// OperatorCondition's AnnotationEntry with the write.
	Digest string
	// Request, when set, is a write to the CR first: a RequestAck request,
	// or the withdrawal of one whose CSV is gone.
	Request *Request
}

// Request is a write of the RequestAck request to the CR: the merge patch
// (with the CR's resourceVersion as a precondition, so two replicas that
// read the same CR make one request), and the record it leaves.
type Request struct {
	Patch    map[string]interface{}
	Record   RequestRecord
	Withdraw bool
}

// reasonRE is metav1.Condition's reason pattern.
var reasonRE = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// Decide is the bridge's decision. In freshness mode (handshake None): a
// fresh True of every gated condition is True; a fresh False or Unknown is
// False, with the CR's reason and message; an outdated condition
// (observedGeneration != generation; the contract's freshness, section 5)
// or a missing one is False saying so; an absent CR is whenAbsent. OLM
// overwrites the OperatorCondition's observedGeneration with its own
// (operatorconditions controller, syncOperatorConditionStatus), so
// freshness is judged here, on the CR. With a RequestAck handshake it is
// False (no upgrade requested) until a CSV that replaces the running one
// appears; then the request is written to the CR, and True only once the
// operator's answer to it is a fresh True (contract.RequestAckGate).
func Decide(in Input) Decision {
	src := in.Source
	obs := contract.ObservationFrom(in.CR, src)
	var d Decision
	switch {
	case src.Mode() == v1alpha1.HandshakeRequestAck:
		d = decideRequestAck(in, obs)
	default:
		d.Gate = contract.Gate(contract.PolicyStrict, src, obs)
		d.Condition = freshness(src, obs, d.Gate)
	}
	d.Condition.Type = contract.ConditionUpgradeable
	d.Condition.Message = truncate(d.Condition.Message)
	if in.OC == nil {
		return d
	}
	if w := OtherWriter(in.OC); w != "" {
		d.Yield, d.Request = w, nil
		d.Conditions = append([]metav1.Condition(nil), in.OC.Spec.Conditions...)
		return d
	}
	c := d.Condition
	c.LastTransitionTime = metav1.NewTime(in.Now)
	d.setEntry(in.OC, c)
	return d
}

// setEntry makes c the OperatorCondition's one Upgradeable entry in d:
// the whole list (setOne), the entry as it stands there, its digest, and
// whether to write (the list changed, or the digest beside it is not this
// entry's).
func (d *Decision) setEntry(oc *operatorsv2.OperatorCondition, c metav1.Condition) {
	d.Conditions, d.WriteOC = setOne(oc.Spec.Conditions, c)
	d.Condition = *meta.FindStatusCondition(d.Conditions, contract.ConditionUpgradeable)
	d.Digest = EntryDigest(d.Condition)
	if oc.Annotations[AnnotationEntry] != d.Digest {
		d.WriteOC = true
	}
}

// EntryDigest is a digest of an Upgradeable entry: its type, status,
// reason and message (what OLM reads and the bridge decides).
func EntryDigest(c metav1.Condition) string {
	sum := sha256.Sum256([]byte(c.Type + "\x00" + string(c.Status) + "\x00" + c.Reason + "\x00" + c.Message))
	return hex.EncodeToString(sum[:12])
}

// setOne sets c as the one Upgradeable entry of conds: the first entry of
// the type keeps its place and its lastTransitionTime while the status
// stays (meta.SetStatusCondition), and later duplicates are dropped (the
// OperatorCondition CRD has no listType map: meta.FindStatusCondition
// reads the first entry, OLM's status copy lets the last win). changed
// reports whether the result differs from conds.
func setOne(conds []metav1.Condition, c metav1.Condition) (out []metav1.Condition, changed bool) {
	out = make([]metav1.Condition, 0, len(conds)+1)
	seen := false
	for _, e := range conds {
		if e.Type == c.Type {
			if seen {
				changed = true
				continue
			}
			seen = true
		}
		out = append(out, e)
	}
	if meta.SetStatusCondition(&out, c) {
		changed = true
	}
	return out, changed
}

// freshness maps the contract's gate on the CR to the entry: True where
// it allows, False with the CR's words or the gate's everywhere else.
func freshness(src *v1alpha1.StatusSource, o contract.Observation, g contract.Decision) metav1.Condition {
	if !o.Exists {
		return condition(g.Verdict, ReasonAbsent, g.Reason)
	}
	if g.Verdict == contract.Allow {
		return condition(contract.Allow, ReasonUpgradeable, g.Reason)
	}
	for _, t := range src.ConditionTypes() {
		c := contract.Find(o.Conditions, t)
		if c == nil {
			return condition(contract.Block, ReasonNoCondition, g.Reason)
		}
		switch o.Freshness(c) {
		case contract.Outdated:
			return condition(contract.Block, ReasonOutdated, g.Reason)
		case contract.Future:
			return condition(contract.Block, ReasonFromTheFuture, g.Reason)
		}
		if c.Status == contract.StatusTrue {
			continue
		}
		// A fresh False or Unknown, in the operator's own words, as False:
		// OLM's isOperatorUpgradeable lets Unknown through.
		out := condition(contract.Block, c.Reason, c.Message)
		if len(out.Reason) > 1024 || !reasonRE.MatchString(out.Reason) {
			out.Reason = ReasonNotUpgradeable
		}
		if c.Status != contract.StatusFalse {
			out.Message = fmt.Sprintf("%s=%s: %s", t, c.Status, c.Message)
		}
		if out.Message == "" {
			out.Message = g.Reason
		}
		return out
	}
	return condition(contract.Block, ReasonNotUpgradeable, g.Reason)
}

func decideRequestAck(in Input, o contract.Observation) Decision {
	var d Decision
	rec := RecordOf(in.CR)
	next := Replacing(in.Running, in.CSVs)
	if rec != nil && rec.CSV != "" && slices.Contains(ReplacingAll(in.Running, in.CSVs), rec.CSV) {
		next = rec.CSV // the request stands for it while it is there
	}
	block := func(reason, format string, args ...interface{}) {
		d.Gate = contract.Decision{Verdict: contract.Block, Reason: fmt.Sprintf(format, args...)}
		d.Condition = condition(contract.Block, reason, d.Gate.Reason)
	}
	switch {
	case !o.Exists:
		d.Gate = contract.Gate(contract.PolicyStrict, in.Source, o)
		d.Condition = condition(d.Gate.Verdict, ReasonAbsent, d.Gate.Reason)
	case managerRequests(in.CR):
		// Two requesters would each take the other's token for a
		// revert and ask again, for ever. A lifecycle manager that makes
		// its own requests reads the status source itself and ignores
		// this entry, so the bridge stands down, holding, while the
		// manager's request stands; a withdrawn one, or one copied from
		// another object, is no reason to.
		block(ReasonManagerRequests, "the lifecycle manager has an upgrade request standing on the CR (annotation %s): the bridge makes none while it stands, so that the two do not supersede each other's tokens; an OLM that reads the status source ignores this entry. If this OLM does not implement RequestAck (olm/patches 0003), remove that annotation from the CR; an Upgradeable override on the OperatorCondition releases one upgrade", v1alpha1.RequestRecordAnnotation)
	case next == "":
		block(ReasonNoRequest, "no upgrade requested: no CSV replaces %s", in.Running)
		if rec != nil && rec.CSV != "" {
			d.Request = withdraw(in, rec)
			d.Gate.Reason += fmt.Sprintf("; withdrawing request %d (for %s, which is gone)", rec.Token, rec.CSV)
			d.Condition.Message = d.Gate.Reason
		}
	default:
		req, why, ok := standing(in, o, rec, next)
		switch {
		case ok && req.Standing:
			d.Gate = contract.RequestAckGate(contract.PolicyStrict, in.Source, o, req)
			reason := ReasonUnanswered
			if d.Gate.Verdict == contract.Allow {
				reason = ReasonAnswered
			}
			d.Condition = condition(d.Gate.Verdict, reason, d.Gate.Reason)
		case ok:
			block(ReasonNotObservable, "%s", why)
		default:
			if d.Request = request(in, rec, next); d.Request == nil {
				block(ReasonNotObservable, "%s replaces %s, but the request tokens are exhausted (%d): remove the annotation %s and the token from the CR", next, in.Running, int64(math.MaxInt64), AnnotationRequest)
				break
			}
			block(ReasonRequested, "%s replaces %s: requesting the operator's answer (request %d)%s", next, in.Running, d.Request.Record.Token, why)
		}
	}
	return d
}

// managerRequests reports whether a lifecycle manager's RequestAck request
// stands on the CR (v1alpha1.RequestRecordAnnotation, olm/patches 0003):
// its record names a CSV, and it was made to this object (its uid). A
// withdrawn record (the count kept, no CSV) or one copied with the CR
// from another object does not stand.
func managerRequests(cr *unstructured.Unstructured) bool {
	raw, ok := cr.GetAnnotations()[v1alpha1.RequestRecordAnnotation]
	if !ok {
		return false
	}
	var rec v1alpha1.ManagerRequestRecord
	return json.Unmarshal([]byte(raw), &rec) == nil && rec.CSV != "" && rec.UID == cr.GetUID()
}

// standing reads the request the CR holds for the replacing CSV next. ok
// false means there is none to judge (write one; why says what happened
// to an earlier one); ok with req.Standing false means one stands that can
// never be answered (why says so).
func standing(in Input, o contract.Observation, rec *RequestRecord, next string) (req contract.Request, why string, ok bool) {
	switch {
	case rec == nil || rec.CSV == "":
		return req, "", false
	case rec.UID != in.CR.GetUID():
		return req, fmt.Sprintf("; the CR was made again (uid %s, request %d was for %s)", in.CR.GetUID(), rec.Token, rec.UID), false
	case rec.CSV != next:
		return req, fmt.Sprintf("; request %d was for %s", rec.Token, rec.CSV), false
	}
	r := in.Source.Request()
	text := strconv.FormatInt(rec.Token, 10)
	got, present := tokenOn(in.CR, r)
	spec := r.SpecPath != ""
	if !present || got != text {
		held := "no token"
		if present {
			held = fmt.Sprintf("token %q", got)
		}
		if spec && o.Generation <= rec.Generation {
			return req, fmt.Sprintf("request %d to %s never reached the CR's spec (it holds %s at generation %d, the generation the request was written at): the apiserver pruned the field or kept another value, so no answer can be told from an old report; it is never answered", rec.Token, r.SpecPath, held, o.Generation), true
		}
		return req, fmt.Sprintf("; request %d was reverted (the CR holds %s)", rec.Token, held), false
	}
	req = contract.Request{Standing: true, Token: rec.Token, Value: text, Generation: rec.Generation}
	if spec {
		if o.Generation <= rec.Generation {
			return contract.Request{}, fmt.Sprintf("request %d did not move the CR's generation (%d): it changed nothing the apiserver keeps, so no answer can be told from an old report; it is never answered", rec.Token, o.Generation), true
		}
		req.Generation = rec.Generation + 1
	}
	return req, "", true
}

// tokenOn is the request token the CR holds, as text.
func tokenOn(cr *unstructured.Unstructured, r *v1alpha1.HandshakeRequest) (string, bool) {
	if r.SpecPath != "" {
		return contract.TokenAt(cr.Object, v1alpha1.FieldPath(r.SpecPath))
	}
	v, ok := cr.GetAnnotations()[r.Annotation]
	return v, ok
}

// request is the next handshake request: the token after every one this
// CR has held, written where the handshake says, typed as the schema
// types it, with the record beside it and the CR's resourceVersion as
// the precondition.
func request(in Input, rec *RequestRecord, next string) *Request {
	token := int64(0)
	if rec != nil {
		token = rec.Token
	}
	r := in.Source.Request()
	text, _ := tokenOn(in.CR, r)
	// The echo counts too: a CR whose annotations were replaced
	// (kubectl replace, a GitOps sync of metadata) keeps its status, and
	// an old echo must never answer a new request.
	for _, t := range []string{text, contract.EchoOf(statusOf(in.CR), in.Source)} {
		if n, err := strconv.ParseInt(t, 10, 64); err == nil && n > token {
			token = n
		}
	}
	if token == math.MaxInt64 {
		return nil
	}
	token++
	text = strconv.FormatInt(token, 10)
	record := RequestRecord{Token: token, CSV: next, Generation: in.CR.GetGeneration(), UID: in.CR.GetUID()}
	patch := recordPatch(in.CR, record)
	if r.SpecPath != "" {
		patch = joinPatches(patch, jsonobj.NestedPatch(v1alpha1.FieldPath(r.SpecPath), in.Tokens.RequestValue(text)))
	} else {
		patch = joinPatches(patch, map[string]interface{}{"metadata": map[string]interface{}{"annotations": map[string]interface{}{r.Annotation: text}}})
	}
	return &Request{Patch: patch, Record: record}
}

func statusOf(cr *unstructured.Unstructured) map[string]interface{} {
	st, _ := cr.Object["status"].(map[string]interface{})
	return st
}

// withdraw takes the request off the CR (its token removed) and keeps the
// count in the record, so a later request never repeats a token.
func withdraw(in Input, rec *RequestRecord) *Request {
	record := RequestRecord{Token: rec.Token}
	patch := recordPatch(in.CR, record)
	r := in.Source.Request()
	if r.SpecPath != "" {
		// A null in a merge patch deletes: the patches are joined, not
		// applied to each other.
		patch = joinPatches(patch, jsonobj.NestedPatch(v1alpha1.FieldPath(r.SpecPath), nil))
	} else {
		patch["metadata"].(map[string]interface{})["annotations"].(map[string]interface{})[r.Annotation] = nil
	}
	return &Request{Patch: patch, Record: record, Withdraw: true}
}

// joinPatches is one merge patch doing what a and b do (b's nulls kept).
func joinPatches(a, b map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		am, aok := out[k].(map[string]interface{})
		bm, bok := v.(map[string]interface{})
		if aok && bok {
			out[k] = joinPatches(am, bm)
			continue
		}
		out[k] = v
	}
	return out
}

func recordPatch(cr *unstructured.Unstructured, record RequestRecord) map[string]interface{} {
	raw, _ := json.Marshal(record)
	md := map[string]interface{}{"annotations": map[string]interface{}{AnnotationRequest: string(raw)}}
	if rv := cr.GetResourceVersion(); rv != "" {
		md["resourceVersion"] = rv
	}
	return map[string]interface{}{"metadata": md}
}

// OtherWriter names another writer of the OperatorCondition's
// Upgradeable entry: the entry is there, it is not the one the bridge
// last wrote (AnnotationEntry), and a field manager other than the
// bridge's owns spec.conditions (metadata.managedFields: an operator that
// still writes its own OperatorCondition, an admin, another tool). The
// list is atomic in OLM's CRD, so ownership alone cannot tell which entry
// a manager wrote; the digest does. With no Upgradeable entry nobody
// keeps it, and an operator writing only other condition types is no
// other writer. "" when there is none.
func OtherWriter(oc *operatorsv2.OperatorCondition) string {
	e := meta.FindStatusCondition(oc.Spec.Conditions, contract.ConditionUpgradeable)
	if e == nil || oc.Annotations[AnnotationEntry] == EntryDigest(*e) {
		return ""
	}
	for _, mf := range oc.ManagedFields {
		if mf.Manager == FieldManager || mf.FieldsV1 == nil {
			continue
		}
		var fields map[string]interface{}
		if json.Unmarshal(mf.FieldsV1.Raw, &fields) != nil {
			continue
		}
		spec, _ := fields["f:spec"].(map[string]interface{})
		if _, ok := spec["f:conditions"]; ok {
			return mf.Manager
		}
	}
	return ""
}

// Stopped is what a stopping bridge writes to withdraw a True it wrote:
// False, saying so; changed false when there is nothing to withdraw (no
// True, or another writer's).
func Stopped(oc *operatorsv2.OperatorCondition, now time.Time) (d Decision, changed bool) {
	c := meta.FindStatusCondition(oc.Spec.Conditions, contract.ConditionUpgradeable)
	if c == nil || c.Status != metav1.ConditionTrue || OtherWriter(oc) != "" {
		return d, false
	}
	return falseEntry(oc, ReasonStopped,
		"statuscheck bridge stopped: nothing keeps this entry equal to the status source until it runs again, so the upgrade waits (an admin override on spec.overrides releases it)", now), true
}

// Unreadable is what the bridge writes when it can read the
// OperatorCondition but not the CR (its kind no longer served, RBAC, a
// conversion webhook down): False, with why, so no True stays that
// nothing can check; changed false beside another writer or when the
// entry says so already.
func Unreadable(oc *operatorsv2.OperatorCondition, why error, now time.Time) (d Decision, changed bool) {
	if OtherWriter(oc) != "" {
		return d, false
	}
	d = falseEntry(oc, ReasonUnreadable, truncate("the status source cannot be read: "+why.Error()), now)
	return d, d.WriteOC
}

// falseEntry is the decision to write a False entry with reason and msg.
func falseEntry(oc *operatorsv2.OperatorCondition, reason, msg string, now time.Time) Decision {
	d := Decision{Gate: contract.Decision{Verdict: contract.Block, Reason: msg}}
	d.setEntry(oc, metav1.Condition{Type: contract.ConditionUpgradeable, Status: metav1.ConditionFalse,
		Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(now)})
	return d
}

// Replacing names the CSV of csvs whose spec.replaces is running, leaving
// out the copies OLM makes into other namespaces, as OLM's replace finder
// does (operator-lifecycle-manager pkg/lib/csv/replace_finder.go,
// IsBeingReplaced, with operator-framework/api's IsCopied); "" when there
// is none. Of two, the lowest name (OLM's finder ranges over a map, so
// the bridge picks one that stays put).
func Replacing(running string, csvs []operatorsv1alpha1.ClusterServiceVersion) string {
	if all := ReplacingAll(running, csvs); len(all) > 0 {
		return all[0]
	}
	return ""
}

// ReplacingAll names every CSV of csvs that replaces running, sorted.
func ReplacingAll(running string, csvs []operatorsv1alpha1.ClusterServiceVersion) []string {
	var out []string
	for i := range csvs {
		c := &csvs[i]
		if c.IsCopied() || running == "" {
			continue
		}
		if c.Spec.Replaces == running && c.Name != running {
			out = append(out, c.Name)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func condition(v contract.Verdict, reason, message string) metav1.Condition {
	s := metav1.ConditionFalse
	if v == contract.Allow {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Status: s, Reason: reason, Message: message}
}

// maxMessage is metav1.Condition's message limit.
const maxMessage = 32768

// truncate cuts s to the limit at a character's start, so a cut message
// is valid UTF-8 and the same every time (the entry does not change from
// one sync to the next).
func truncate(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
