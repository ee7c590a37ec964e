// Package bridgev0 is statuscheck bridge's decision as it was before
// issue 25 (pkg/bridge/decide.go at commit 91abff2, with the request its
// runner kept in its process, pkg/bridge/runner.go standing), kept only
// so that pkg/explore's tests can prove the model finds its defects: a
// fresh Unknown copied as Unknown, which OLM lets through; the request
// held in memory, which a restart, a second replica, a revert or a CR
// made again do not share; the first of two Upgradeable entries set where
// OLM's copy lets the last win; another writer of the OperatorCondition
// overwritten; nothing withdrawn on a stop. Nothing else may use it.
//
// Decide has the signature pkg/explore.Bridge runs (a decision with what
// its process remembers); the types are pkg/bridge's of today, so its
// Request carries the old patch (the token alone) and a record holding
// only the token.
package bridgev0

import (
	"fmt"
	"regexp"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/jsonobj"
	"github.com/statuscheck/statuscheck/pkg/bridge"
	"github.com/statuscheck/statuscheck/pkg/contract"
)

// Decide is the decision before issue 25. wrote is the request the
// process wrote last and remembers (the runner's r.request, set after the
// write with the CR's generation then); it is read as the runner's
// standing did: withdrawn in memory when no CSV replaces the running one,
// and, when none stands, its token taken past the one on the CR.
func Decide(in bridge.Input, wrote contract.Request) bridge.Decision {
	in2 := input{Input: in, Request: standing(in, wrote)}
	return decide(in2)
}

type input struct {
	bridge.Input
	Request contract.Request
}

// standing is the runner's standing before issue 25.
func standing(in bridge.Input, req contract.Request) contract.Request {
	if bridge.Replacing(in.Running, in.CSVs) == "" {
		req.Standing = false
	}
	if !req.Standing && in.CR != nil {
		if n := tokenOf(in.CR, in.Source); n > req.Token {
			req.Token = n
		}
	}
	return req
}

func tokenOf(cr *unstructured.Unstructured, src *v1alpha1.StatusSource) int64 {
	req := src.Request()
	if req == nil {
		return 0
	}
	text := cr.GetAnnotations()[req.Annotation]
	if req.SpecPath != "" {
		text, _ = contract.TokenAt(cr.Object, v1alpha1.FieldPath(req.SpecPath))
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

var reasonRE = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

func decide(in input) bridge.Decision {
	src := in.Source
	obs := contract.ObservationFrom(in.CR, src)
	var d bridge.Decision
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

func freshness(src *v1alpha1.StatusSource, o contract.Observation, g contract.Decision) metav1.Condition {
	if !o.Exists {
		return condition(g.Verdict, bridge.ReasonAbsent, g.Reason)
	}
	if g.Verdict == contract.Allow {
		return condition(contract.Allow, bridge.ReasonUpgradeable, g.Reason)
	}
	for _, t := range src.ConditionTypes() {
		c := contract.Find(o.Conditions, t)
		if c == nil {
			return condition(contract.Block, bridge.ReasonNoCondition, g.Reason)
		}
		switch o.Freshness(c) {
		case contract.Outdated:
			return condition(contract.Block, bridge.ReasonOutdated, g.Reason)
		case contract.Future:
			return condition(contract.Block, bridge.ReasonFromTheFuture, g.Reason)
		}
		if c.Status == contract.StatusTrue {
			continue
		}
		// A fresh False or Unknown: the operator's own words (defect 1:
		// Unknown stays Unknown).
		out := metav1.Condition{Status: metav1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message}
		if out.Status != metav1.ConditionUnknown {
			out.Status = metav1.ConditionFalse
		}
		if len(out.Reason) > 1024 || !reasonRE.MatchString(out.Reason) {
			out.Reason = bridge.ReasonNotUpgradeable
		}
		if out.Message == "" {
			out.Message = g.Reason
		}
		return out
	}
	return condition(contract.Block, bridge.ReasonNotUpgradeable, g.Reason)
}

func decideRequestAck(in input, o contract.Observation) bridge.Decision {
	var d bridge.Decision
	next := bridge.Replacing(in.Running, in.CSVs)
	switch {
	case !o.Exists:
		d.Gate = contract.Gate(contract.PolicyStrict, in.Source, o)
		d.Condition = condition(d.Gate.Verdict, bridge.ReasonAbsent, d.Gate.Reason)
	case next == "":
		d.Gate = contract.Decision{Verdict: contract.Block, Reason: "no upgrade requested: no CSV replaces " + in.Running}
		d.Condition = condition(contract.Block, bridge.ReasonNoRequest, d.Gate.Reason)
	case !in.Request.Standing:
		d.Request = request(in)
		d.Gate = contract.Decision{Verdict: contract.Block, Reason: fmt.Sprintf("%s replaces %s: requesting the operator's answer (request %d)", next, in.Running, d.Request.Record.Token)}
		d.Condition = condition(contract.Block, bridge.ReasonRequested, d.Gate.Reason)
	default:
		d.Gate = contract.RequestAckGate(contract.PolicyStrict, in.Source, o, in.Request)
		reason := bridge.ReasonUnanswered
		if d.Gate.Verdict == contract.Allow {
			reason = bridge.ReasonAnswered
		}
		d.Condition = condition(d.Gate.Verdict, reason, d.Gate.Reason)
	}
	return d
}

// request is the next handshake request: the token after the standing
// one's, and nothing else (no record).
func request(in input) *bridge.Request {
	token := in.Request.Token + 1
	text := strconv.FormatInt(token, 10)
	r := in.Source.Request()
	patch := map[string]interface{}{"metadata": map[string]interface{}{"annotations": map[string]interface{}{r.Annotation: text}}}
	if r.SpecPath != "" {
		patch = jsonobj.NestedPatch(v1alpha1.FieldPath(r.SpecPath), in.Tokens.RequestValue(text))
	}
	return &bridge.Request{Patch: patch, Record: bridge.RequestRecord{Token: token}}
}

func condition(v contract.Verdict, reason, message string) metav1.Condition {
	s := metav1.ConditionFalse
	if v == contract.Allow {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Status: s, Reason: reason, Message: message}
}

const maxMessage = 32768

func truncate(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return s[:maxMessage-3] + "..."
}
