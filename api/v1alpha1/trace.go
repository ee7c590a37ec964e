package v1alpha1

import (
	"encoding/json"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Actor is who takes a step.
type Actor string

// Actors of a trace.
const (
	ActorUser     Actor = "user"
	ActorOperator Actor = "operator"
	ActorOLM      Actor = "olm"
	ActorAdmin    Actor = "admin"
	// ActorBridge is statuscheck bridge, which writes the
	// OperatorCondition's Upgradeable entry from the status source and,
	// under RequestAck, the request to the CR (docs/bridge.md).
	ActorBridge Actor = "bridge"
)

// Actors lists the actors in the order the contract names them.
func Actors() []Actor { return []Actor{ActorUser, ActorOperator, ActorOLM, ActorAdmin, ActorBridge} }

// Verb is what a step does.
type Verb string

// Verbs of a trace (docs/contract.md section 8).
const (
	VerbUpdate       Verb = "update"
	VerbUpdateStatus Verb = "updateStatus"
	VerbRequest      Verb = "request"
	VerbCheck        Verb = "check"
	VerbUpgrade      Verb = "upgrade"
	VerbCreate       Verb = "create"
	VerbDelete       Verb = "delete"
)

// Verbs lists every verb, in the order of the contract's table.
func Verbs() []Verb {
	return []Verb{VerbUpdate, VerbUpdateStatus, VerbRequest, VerbCheck, VerbUpgrade, VerbCreate, VerbDelete}
}

// Target is the object a step writes.
type Target string

const (
	// TargetSource is the status-source CR (the default).
	TargetSource Target = ""
	// TargetSourceName is how a trace may name the status source
	// explicitly; it reads as TargetSource.
	TargetSourceName Target = "StatusSource"
	// TargetOperatorCondition is the operator's OperatorCondition.
	TargetOperatorCondition Target = "OperatorCondition"
)

// Verdict is the gate's answer.
type Verdict string

const (
	// Allow lets the upgrade proceed.
	Allow Verdict = "Allow"
	// Block holds it.
	Block Verdict = "Block"
)

// Allowed says which actor may take which verb on which target
// (docs/contract.md section 8): users, operators and admins write; the
// operator writes status; OLM requests, checks, upgrades, syncs the
// OperatorCondition and creates it (its generator recreates a deleted
// one); the bridge updates the OperatorCondition (its spec's Upgradeable
// entry) and, in OLM's stead, writes the request to the CR.
func Allowed(a Actor, v Verb, t Target) bool {
	switch v {
	case VerbCreate:
		return a == ActorUser || a == ActorOperator || a == ActorAdmin || a == ActorOLM && t == TargetOperatorCondition
	case VerbUpdate:
		return a == ActorUser || a == ActorOperator || a == ActorAdmin || a == ActorBridge && t == TargetOperatorCondition
	case VerbDelete:
		return a == ActorUser || a == ActorOperator || a == ActorAdmin
	case VerbUpdateStatus:
		if t == TargetOperatorCondition {
			return a == ActorOLM
		}
		return a == ActorOperator
	case VerbRequest:
		return (a == ActorOLM || a == ActorBridge) && t != TargetOperatorCondition
	case VerbCheck, VerbUpgrade:
		return a == ActorOLM && t != TargetOperatorCondition
	}
	return false
}

// Object is a Kubernetes object, or a part of one, as decoded JSON.
type Object = map[string]interface{}

// StatusTrace is a recorded or written sequence of steps on the
// status-source CR (docs/contract.md section 8). Fields are written in
// this order; steps come last so that a trace streams.
type StatusTrace struct {
	APIVersion string    `json:"apiVersion" trace:"plain"`
	Kind       string    `json:"kind" trace:"plain"`
	Metadata   TraceMeta `json:"metadata" trace:"flow"`
	// StatusSource is the trace's own status source: the annotation's
	// value as a JSON object, or a string holding one.
	StatusSource json.RawMessage `json:"statusSource,omitempty"`
	// StatusSubresource says whether the CRD has /status (the trace's own
	// context, when no CRD is given).
	StatusSubresource *bool `json:"statusSubresource,omitempty"`
	// Recorded marks a trace recorded from a cluster (statuscheck record):
	// the gate is evaluated after every observed change.
	Recorded bool `json:"recorded,omitempty"`
	// Bridge says statuscheck bridge writes the OperatorCondition from the
	// status source and OLM's gate reads the OperatorCondition, as OLM v0
	// does (docs/bridge.md): the status source's handshake is the
	// bridge's.
	Bridge bool `json:"bridge,omitempty"`
	// Initial is the CR as first observed; null when it does not exist
	// yet.
	Initial Object `json:"initial"`
	// OperatorCondition is the OperatorCondition at the start; absent
	// means the empty one OLM creates.
	OperatorCondition Object `json:"operatorCondition,omitempty"`
	Steps             []Step `json:"steps,omitempty"`
}

// TraceMeta is a StatusTrace's metadata.
type TraceMeta struct {
	Name        string            `json:"name,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Step is one event of a trace: an actor, an optional target and exactly
// one verb, whose field carries its value; a recorded step also carries
// what the cluster said of the write.
type Step struct {
	Actor  Actor  `json:"actor"`
	Target Target `json:"target,omitempty"`

	// Update is a main-resource write, as a JSON merge patch.
	Update Object `json:"update,omitempty"`
	// UpdateStatus is a status write: the new status. A nil pointer means
	// the verb is not this one; a pointer to a nil Object is written as
	// null (an empty status, or OLM's OperatorCondition sync).
	UpdateStatus *Object `json:"updateStatus,omitempty"`
	// Request is OLM's handshake request.
	Request *RequestOptions `json:"request,omitempty" trace:"flow"`
	// Check is OLM's evaluation of the gate.
	Check *CheckOptions `json:"check,omitempty" trace:"flow"`
	// Upgrade is the replacement of the operator.
	Upgrade *UpgradeOptions `json:"upgrade,omitempty" trace:"flow"`
	// Create is the object created.
	Create Object `json:"create,omitempty"`
	// Delete deletes the object.
	Delete *DeleteOptions `json:"delete,omitempty" trace:"flow"`

	// Generation is metadata.generation after the write, as recorded.
	Generation *int64 `json:"generation,omitempty"`
	// ResourceVersion is the object's resourceVersion after the write.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Time is when the write was made.
	Time string `json:"time,omitempty"`
	// Who is the field manager (or user) that made the write.
	Who string `json:"who,omitempty"`
}

// Verbs lists the verbs whose field is set.
func (s *Step) Verbs() []Verb {
	var out []Verb
	set := map[Verb]bool{VerbUpdate: s.Update != nil, VerbUpdateStatus: s.UpdateStatus != nil, VerbRequest: s.Request != nil,
		VerbCheck: s.Check != nil, VerbUpgrade: s.Upgrade != nil, VerbCreate: s.Create != nil, VerbDelete: s.Delete != nil}
	for _, v := range Verbs() {
		if set[v] {
			out = append(out, v)
		}
	}
	return out
}

// CheckOptions are a check's.
type CheckOptions struct {
	// Expect is the verdict the trace expects of the primary policy.
	Expect Verdict `json:"expect,omitempty"`
}

// RequestOptions are a request's.
type RequestOptions struct {
	// Token is the token OLM writes; empty means the next one.
	Token Token `json:"token,omitempty"`
	// Patch is the bridge's request as it writes it: a JSON merge patch
	// of the CR (the token at the handshake's place and the bridge's
	// record of the request, or their withdrawal). The request is then
	// what the CR holds after the write; Token is not given with it.
	Patch Object `json:"patch,omitempty"`
}

// UpgradeOptions are an upgrade's (none yet).
type UpgradeOptions struct{}

// DeleteOptions are a delete's.
type DeleteOptions struct {
	// PropagationPolicy is Orphan, Background or Foreground; empty is the
	// default (Background for a custom resource).
	PropagationPolicy metav1.DeletionPropagation `json:"propagationPolicy,omitempty"`
}

// Token is a handshake token as written in a trace: a string, or a number
// read as its decimal text.
type Token string

// UnmarshalJSON takes a string or a number.
func (t *Token) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*t = Token(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err == nil {
		if _, err := strconv.ParseFloat(string(n), 64); err == nil {
			*t = Token(n.String())
			return nil
		}
	}
	if string(b) == "null" {
		return nil
	}
	return fmt.Errorf("a token is a string or a number, not %s", b)
}
