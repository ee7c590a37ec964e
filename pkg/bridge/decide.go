// Package bridge makes the status-source contract work on today's OLM v0,
// which reads only the OperatorCondition: the operator writes its own CR's
// conditions, and the bridge writes the Upgradeable entry of the
// OperatorCondition's spec.conditions from them (docs/contract.md; issue
// 19). This file is its pure decision: values in, values out, on the gate
// code validate and simulate use (package contract); the runner that reads
// and writes the cluster is apart from it.
package bridge

import (
	"fmt"
	"regexp"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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
)

// Input is what the bridge has read.
type Input struct {
	// Source is the status source, Tokens its handshake token's types
	// (decided from the CRD, crd.Version.HandshakeTokens).
	Source *v1alpha1.StatusSource
	Tokens contract.Tokens
	// CR is the status-source CR, nil when it does not exist.
	CR *unstructured.Unstructured
	// OC is the running CSV's OperatorCondition (OLM names it after the
	// CSV); nil when there is none, and then nothing is written.
	OC *operatorsv2.OperatorCondition
	// Running is the running CSV's name (OPERATOR_CONDITION_NAME).
	Running string
	// CSVs are the namespace's ClusterServiceVersions (RequestAck only):
	// one that replaces Running is an upgrade OLM is about to gate.
	CSVs []operatorsv1alpha1.ClusterServiceVersion
	// Request is the bridge's standing request (RequestAck), as it wrote
	// it: Standing false when it has made none since the last upgrade.
	Request contract.Request
	// Now is the time of a condition that changes status.
	Now time.Time
}

// Decision is what the bridge writes.
type Decision struct {
	// Gate is the contract's verdict on the CR, with its reason.
	Gate contract.Decision
	// Condition is the OperatorCondition's Upgradeable entry.
	Condition metav1.Condition
	// Conditions is the OperatorCondition's whole spec.conditions with
	// that entry set (meta.SetStatusCondition: lastTransitionTime kept
	// while the status stays); every other entry as it was.
	Conditions []metav1.Condition
	// WriteOC is set when Conditions differs from the OperatorCondition's.
	WriteOC bool
	// Request, when set, is a RequestAck request to write to the CR first.
	Request *Request
}

// Request is a handshake request to write to the CR: the merge patch, and
// the request as it stands once written (its Generation is the CR's
// generation before the write; the runner sets the one after).
type Request struct {
	Patch map[string]interface{}
	State contract.Request
}

// reasonRE is metav1.Condition's reason pattern.
var reasonRE = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// Decide is the bridge's decision. In freshness mode (handshake None): a
// fresh True of every gated condition is True; a fresh False or Unknown is
// the same, with the CR's reason and message; an outdated condition
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
	d.Conditions = append([]metav1.Condition(nil), in.OC.Spec.Conditions...)
	c := d.Condition
	c.LastTransitionTime = metav1.NewTime(in.Now)
	d.WriteOC = meta.SetStatusCondition(&d.Conditions, c)
	d.Condition = *meta.FindStatusCondition(d.Conditions, contract.ConditionUpgradeable)
	return d
}

// freshness maps the contract's gate on the CR to the entry.
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
		// A fresh False or Unknown: the operator's own words.
		out := metav1.Condition{Status: metav1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message}
		if out.Status != metav1.ConditionUnknown {
			out.Status = metav1.ConditionFalse
		}
		if len(out.Reason) > 1024 || !reasonRE.MatchString(out.Reason) {
			out.Reason = ReasonNotUpgradeable
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
	next := Replacing(in.Running, in.CSVs)
	switch {
	case !o.Exists:
		d.Gate = contract.Gate(contract.PolicyStrict, in.Source, o)
		d.Condition = condition(d.Gate.Verdict, ReasonAbsent, d.Gate.Reason)
	case next == "":
		d.Gate = contract.Decision{Verdict: contract.Block, Reason: "no upgrade requested: no CSV replaces " + in.Running}
		d.Condition = condition(contract.Block, ReasonNoRequest, d.Gate.Reason)
	case !in.Request.Standing:
		d.Request = request(in, o)
		d.Gate = contract.Decision{Verdict: contract.Block, Reason: fmt.Sprintf("%s replaces %s: requesting the operator's answer (request %d)", next, in.Running, d.Request.State.Token)}
		d.Condition = condition(contract.Block, ReasonRequested, d.Gate.Reason)
	default:
		d.Gate = contract.RequestAckGate(contract.PolicyStrict, in.Source, o, in.Request)
		reason := ReasonUnanswered
		if d.Gate.Verdict == contract.Allow {
			reason = ReasonAnswered
		}
		d.Condition = condition(d.Gate.Verdict, reason, d.Gate.Reason)
	}
	return d
}

// request is the next handshake request: the token after the standing
// one's, written where the handshake says, typed as the CRD types it.
func request(in Input, o contract.Observation) *Request {
	token := in.Request.Token + 1
	text := fmt.Sprint(token)
	r := in.Source.Request()
	patch := map[string]interface{}{"metadata": map[string]interface{}{"annotations": map[string]interface{}{r.Annotation: text}}}
	if r.SpecPath != "" {
		patch = jsonobj.NestedPatch(v1alpha1.FieldPath(r.SpecPath), in.Tokens.RequestValue(text))
	}
	return &Request{Patch: patch, State: contract.Request{Standing: true, Token: token, Value: text, Generation: o.Generation}}
}

// Replacing names a CSV of csvs whose spec.replaces is running, leaving
// out the copies OLM makes into other namespaces, as OLM's replace finder
// does (operator-lifecycle-manager pkg/lib/csv/replace_finder.go,
// IsBeingReplaced, with operator-framework/api's IsCopied); "" when there
// is none.
func Replacing(running string, csvs []operatorsv1alpha1.ClusterServiceVersion) string {
	for i := range csvs {
		c := &csvs[i]
		if c.IsCopied() || running == "" {
			continue
		}
		if c.Spec.Replaces == running && c.Name != running {
			return c.Name
		}
	}
	return ""
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

func truncate(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return s[:maxMessage-3] + "..."
}
