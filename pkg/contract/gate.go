package contract

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/jsonobj"
	"github.com/statuscheck/statuscheck/internal/strict"
)

// ConditionUpgradeable is the condition type OLM gates upgrades on.
const ConditionUpgradeable = v1alpha1.ConditionUpgradeable

// Condition statuses, as metav1.ConditionStatus spells them.
const (
	StatusTrue    = "True"
	StatusFalse   = "False"
	StatusUnknown = "Unknown"
)

// IsNearMiss reports whether t looks like a misspelling of Upgradeable:
// "Upgradable" (the spelling of OLM's prose), another case, or a type within
// two edits of it.
func IsNearMiss(t string) bool {
	if t == ConditionUpgradeable || t == "" {
		return false
	}
	l := strings.ToLower(t)
	return l == "upgradeable" || l == "upgradable" || strict.Levenshtein(l, "upgradeable") <= 2
}

// Condition is one entry of .status.conditions (or of an OperatorCondition's
// spec.overrides). ObservedGeneration is nil when the field is absent, which
// the gate must tell apart from zero.
type Condition struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	Reason             string `json:"reason,omitempty"`
	Message            string `json:"message,omitempty"`
	ObservedGeneration *int64 `json:"observedGeneration,omitempty"`
}

// Find returns the first condition of type t, as apimachinery's
// meta.FindStatusCondition does (and so OLM, when a type is duplicated).
func Find(conds []Condition, t string) *Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// ReadConditions reads a list of conditions leniently, as a recording
// holds what an operator wrote, right or wrong, and the gate must see what
// OLM would: entries that are not objects are skipped, an unquoted YAML
// boolean status reads as True or False. duplicate names the first type
// that appears twice.
func ReadConditions(list []interface{}) (conds []Condition, duplicate string) {
	conds = make([]Condition, 0, len(list))
	seen := map[string]bool{}
	for _, item := range list {
		m, ok := item.(map[string]interface{})
		if !ok {
			continue
		}
		c := Condition{}
		c.Type, _ = m["type"].(string)
		switch s := m["status"].(type) {
		case string:
			c.Status = s
		case bool:
			// An unquoted True in YAML is a boolean; Kubernetes would
			// reject it for a string field, but the trace recorded it.
			c.Status = map[bool]string{true: StatusTrue, false: StatusFalse}[s]
		default:
			c.Status = fmt.Sprint(m["status"])
		}
		c.Reason, _ = m["reason"].(string)
		c.Message, _ = m["message"].(string)
		if g, ok := jsonobj.Int(m["observedGeneration"]); ok {
			c.ObservedGeneration = &g
		}
		if seen[c.Type] && duplicate == "" {
			duplicate = c.Type
		}
		seen[c.Type] = true
		conds = append(conds, c)
	}
	return conds, duplicate
}

// ReadStatus reads what the gate needs of a .status: its conditions,
// status.observedGeneration (nil if absent) and the first duplicated
// condition type.
func ReadStatus(status map[string]interface{}) (conds []Condition, statusOG *int64, duplicate string) {
	if status == nil {
		return nil, nil, ""
	}
	if g, ok := jsonobj.Int(status["observedGeneration"]); ok {
		statusOG = &g
	}
	list, _ := status["conditions"].([]interface{})
	conds, duplicate = ReadConditions(list)
	return conds, statusOG, duplicate
}

// Verdict is the gate's answer.
type Verdict = v1alpha1.Verdict

const (
	// Allow lets the upgrade proceed.
	Allow = v1alpha1.Allow
	// Block holds it.
	Block = v1alpha1.Block
)

// Decision is a verdict with its reason.
type Decision struct {
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason"`
}

// Policy selects how the gate reads the conditions (docs/contract.md section 5).
type Policy string

const (
	// PolicyOLM is OLM's isOperatorUpgradeable applied to the status source.
	PolicyOLM Policy = "olm"
	// PolicyStrict allows only on a fresh True.
	PolicyStrict Policy = "strict"
	// PolicyNaive ignores observedGeneration, as OLM did before
	// operator-lifecycle-manager PR 2160.
	PolicyNaive Policy = "naive"
)

// NumPolicies is how many policies there are: the size of per-policy
// tables that must stay values (simulate's State).
const NumPolicies = 3

// Policies lists every policy in display order.
func Policies() []Policy { return []Policy{PolicyOLM, PolicyStrict, PolicyNaive} }

// Index is the policy's place in Policies (-1 for an unknown one).
func (p Policy) Index() int {
	for i, q := range Policies() {
		if q == p {
			return i
		}
	}
	return -1
}

// ParsePolicy checks a policy name.
func ParsePolicy(s string) (Policy, error) {
	if p := Policy(s); p.Index() >= 0 {
		return p, nil
	}
	return "", fmt.Errorf("unknown policy %q (want olm, strict or naive)", s)
}

// Observation is what the gate sees of one object at one moment.
type Observation struct {
	// Exists is false while the object does not exist.
	Exists bool
	// Generation is metadata.generation.
	Generation int64
	// StatusObservedGeneration is .status.observedGeneration, nil if absent.
	// For an OperatorCondition it is always nil: OLM reads only the
	// condition's own field.
	StatusObservedGeneration *int64
	// Conditions are .status.conditions in order.
	Conditions []Condition
	// Overrides are the OperatorCondition's spec.overrides, which an admin
	// sets to force the verdict.
	Overrides []Condition
	// Echo is the token the operator echoes at the RequestAck handshake's
	// ack.statusPath ("" when there is none).
	Echo string
}

// ObservationFrom reads what the gate sees of a status-source CR (nil:
// it does not exist). src gives the ack path of a RequestAck handshake;
// the OperatorCondition's overrides are not on the CR and are left to the
// caller.
func ObservationFrom(u *unstructured.Unstructured, src *v1alpha1.StatusSource) Observation {
	if u == nil {
		return Observation{}
	}
	st, _, _ := unstructured.NestedFieldNoCopy(u.Object, "status")
	status, _ := st.(map[string]interface{})
	o := Observation{Exists: true, Generation: u.GetGeneration()}
	o.Conditions, o.StatusObservedGeneration, _ = ReadStatus(status)
	if src != nil {
		o.Echo = EchoOf(status, src)
	}
	return o
}

// OperatorConditionObservation reads what OLM's isOperatorUpgradeable
// sees of an OperatorCondition (nil: none exists): status.conditions with
// their own observedGeneration only, and spec.overrides.
func OperatorConditionObservation(u *unstructured.Unstructured) Observation {
	if u == nil {
		return Observation{}
	}
	o := Observation{Exists: true, Generation: u.GetGeneration()}
	o.Conditions, _ = ReadConditions(sliceAt(u.Object, "status", "conditions"))
	o.Overrides, _ = ReadConditions(sliceAt(u.Object, "spec", "overrides"))
	return o
}

func sliceAt(obj map[string]interface{}, fields ...string) []interface{} {
	v, _, _ := unstructured.NestedFieldNoCopy(obj, fields...)
	l, _ := v.([]interface{})
	return l
}

// EchoOf reads the token echoed at src's ack.statusPath in a status ("" when
// there is no ack path or no echo), as its text.
func EchoOf(status map[string]interface{}, src *v1alpha1.StatusSource) string {
	p := src.AckPath()
	if p == nil {
		return ""
	}
	echo, _ := TokenAt(status, p[1:])
	return echo
}

// Freshness of a condition against the object's generation.
type Freshness int

const (
	// Fresh: observedGeneration == generation.
	Fresh Freshness = iota
	// Outdated: observedGeneration < generation, or no observedGeneration.
	Outdated
	// Future: observedGeneration > generation, which no apiserver produces
	// but a buggy operator can write.
	Future
)

// ObservedGeneration returns the generation a condition speaks for: its own
// observedGeneration, else the status-wide one (docs/contract.md section 5); nil when
// neither is set.
func (o Observation) ObservedGeneration(c *Condition) *int64 {
	if c.ObservedGeneration != nil {
		return c.ObservedGeneration
	}
	return o.StatusObservedGeneration
}

// Freshness classifies a condition.
func (o Observation) Freshness(c *Condition) Freshness {
	og := o.ObservedGeneration(c)
	switch {
	case og == nil || *og < o.Generation:
		return Outdated
	case *og > o.Generation:
		return Future
	}
	return Fresh
}

// Request is the RequestAck handshake's standing request, as OLM knows it.
type Request struct {
	// Standing is set from OLM's request until the upgrade it was for.
	Standing bool
	// Token counts the requests made; Value is the token as written.
	Token int64
	Value string
	// Generation is the CR's metadata.generation right after the request
	// was written.
	Generation int64
}

// Decide is the gate of policy p for a status source, whatever its
// handshake (docs/contract.md sections 3, 5 and 6): in the
// OperatorCondition flow OLM's own gate on the OperatorCondition oc; under
// RequestAck (but for naive, which reads the condition) the answer to the
// standing request req; else the gate on the CR cr.
func Decide(p Policy, src *v1alpha1.StatusSource, cr, oc Observation, req Request) Decision {
	switch src.Mode() {
	case v1alpha1.HandshakeOperatorCondition:
		// OLM's own flow: isOperatorUpgradeable on the OperatorCondition.
		return Gate(p, nil, oc)
	case v1alpha1.HandshakeRequestAck:
		if p != PolicyNaive {
			return RequestAckGate(p, src, cr, req)
		}
	}
	return Gate(p, src, cr)
}

// Gate evaluates policy p for the condition types of src (nil src means
// OLM's own OperatorCondition: Upgradeable only, allowed while absent).
//
// PolicyOLM reproduces isOperatorUpgradeable from operator-lifecycle-manager
// pkg/controller/operators/olm/operatorconditions.go (master, and every
// release since v0.18.3):
//  1. object not found: upgradeable (here: src.whenAbsent, default Allow,
//     after step 2: the OperatorCondition's overrides exist without the
//     CR, and an admin's override wins over a missing status source as it
//     wins everything else);
//  2. the first spec.overrides entry of type Upgradeable decides: True
//     allows, anything else blocks;
//  3. the first status condition of the type: "c.ObservedGeneration !=
//     cond.ObjectMeta.Generation" blocks as outdated, even when True, so
//     a condition from the future blocks too;
//  4. status False blocks;
//  5. absent, Unknown or True allows.
//
// PolicyOLM reads only the condition's own observedGeneration, as OLM
// does (metav1.Condition reads an absent one as 0, which equals no
// generation: it blocks). PolicyStrict lets it fall back to
// status.observedGeneration (the contract's extension).
func Gate(p Policy, src *v1alpha1.StatusSource, o Observation) Decision {
	// An admin's override wins everything, a missing status source too,
	// as it wins everything in OLM's isOperatorUpgradeable.
	if d, ok := Override(o.Overrides); ok {
		return d
	}
	if !o.Exists {
		if src != nil && src.Absent() == v1alpha1.WhenAbsentBlock {
			return Decision{Block, "status source does not exist (whenAbsent: Block)"}
		}
		return Decision{Allow, "status source does not exist (whenAbsent: Allow)"}
	}
	types := []string{ConditionUpgradeable}
	if src != nil {
		types = src.ConditionTypes()
	}
	var allowed []string
	for _, t := range types {
		c := Find(o.Conditions, t)
		d, ok := gateOne(p, o, t, c)
		if !ok {
			return d
		}
		allowed = append(allowed, d.Reason)
	}
	return Decision{Allow, strings.Join(allowed, "; ")}
}

// RequestAckGate allows once the standing request is answered True, as
// far as OLM can see: through the spec field's generation (a report for a
// generation at least the request's), or the echoed token. With an
// annotation request and no echo, OLM cannot tell an answer from an old
// report and falls back to freshness, which is the seed's flaw
// (docs/contract.md section 6). RequestAck is the contract's proposal:
// OLM v0 implements only the OperatorCondition flow.
func RequestAckGate(p Policy, src *v1alpha1.StatusSource, o Observation, req Request) Decision {
	if d, ok := Override(o.Overrides); ok {
		return d
	}
	if !o.Exists {
		return Gate(p, src, o)
	}
	if !req.Standing {
		return Decision{Block, "no upgrade request stands"}
	}
	r := src.Request()
	if r.Annotation != "" && src.AckPath() == nil {
		d := Gate(p, src, o)
		d.Reason = fmt.Sprintf("request %d is an annotation with no echo, so freshness decides: %s", req.Token, d.Reason)
		return d
	}
	var parts []string
	for _, t := range src.ConditionTypes() {
		c := Find(o.Conditions, t)
		if c == nil {
			return Decision{Block, fmt.Sprintf("request %d unanswered: no %s condition", req.Token, t)}
		}
		if r.SpecPath != "" {
			og := o.ObservedGeneration(c)
			if og == nil || *og < req.Generation {
				return Decision{Block, fmt.Sprintf("request %d unanswered: %s=%s is for generation %s, the request is generation %d", req.Token, t, c.Status, FormatGeneration(og), req.Generation)}
			}
		} else if o.Echo != req.Value {
			return Decision{Block, fmt.Sprintf("request %d unanswered: status echoes %q", req.Token, o.Echo)}
		}
		if c.Status != StatusTrue {
			return Decision{Block, fmt.Sprintf("request %d answered %s=%s", req.Token, t, c.Status)}
		}
		parts = append(parts, fmt.Sprintf("%s=True", t))
	}
	return Decision{Allow, fmt.Sprintf("request %d answered %s", req.Token, strings.Join(parts, ", "))}
}

// OverridePrefix starts the reason of a decision an admin override made.
const OverridePrefix = "override "

// Override applies an OperatorCondition's spec.overrides the way OLM does:
// the first entry of type Upgradeable decides, True allowing and anything
// else blocking. ok is false when no override applies.
func Override(overrides []Condition) (Decision, bool) {
	for _, ov := range overrides {
		if ov.Type == ConditionUpgradeable {
			if ov.Status == StatusTrue {
				return Decision{Allow, OverridePrefix + "Upgradeable=True"}, true
			}
			return Decision{Block, fmt.Sprintf("%sUpgradeable=%s", OverridePrefix, ov.Status)}, true
		}
	}
	return Decision{}, false
}

// gateOne judges one condition type; ok=false means it blocks.
func gateOne(p Policy, o Observation, t string, c *Condition) (Decision, bool) {
	if c == nil {
		if p == PolicyStrict {
			return Decision{Block, fmt.Sprintf("no %s condition", t)}, false
		}
		return Decision{Allow, fmt.Sprintf("no %s condition", t)}, true
	}
	state := fmt.Sprintf("%s=%s", t, c.Status)
	og := o.ObservedGeneration(c)
	gen := fmt.Sprintf("observedGeneration %s, generation %d", FormatGeneration(og), o.Generation)
	switch p {
	case PolicyNaive:
		if c.Status == StatusFalse {
			return Decision{Block, state}, false
		}
		return Decision{Allow, state}, true
	case PolicyStrict:
		switch o.Freshness(c) {
		case Outdated:
			return Decision{Block, fmt.Sprintf("%s is outdated (%s)", state, gen)}, false
		case Future:
			return Decision{Block, fmt.Sprintf("%s is from the future (%s)", state, gen)}, false
		}
		if c.Status != StatusTrue {
			return Decision{Block, state}, false
		}
		return Decision{Allow, fmt.Sprintf("%s (%s)", state, gen)}, true
	default: // PolicyOLM: the condition's own observedGeneration != generation blocks
		own := fmt.Sprintf("observedGeneration %s, generation %d", FormatGeneration(c.ObservedGeneration), o.Generation)
		switch {
		case c.ObservedGeneration == nil:
			// metav1.Condition reads an absent observedGeneration as 0,
			// which equals no generation: OLM blocks, whatever
			// status.observedGeneration says.
			why := ""
			if o.StatusObservedGeneration != nil {
				why = fmt.Sprintf("; OLM does not read status.observedGeneration (%d)", *o.StatusObservedGeneration)
			}
			return Decision{Block, fmt.Sprintf("%s is outdated (%s: OLM reads it as 0%s)", state, own, why)}, false
		case *c.ObservedGeneration < o.Generation:
			return Decision{Block, fmt.Sprintf("%s is outdated (%s)", state, own)}, false
		case *c.ObservedGeneration > o.Generation:
			return Decision{Block, fmt.Sprintf("%s is outdated: from the future (%s)", state, own)}, false
		}
		gen = own
		if c.Status == StatusFalse {
			return Decision{Block, state}, false
		}
		return Decision{Allow, fmt.Sprintf("%s (%s)", state, gen)}, true
	}
}

// FormatGeneration renders an optional generation ("absent" when nil).
func FormatGeneration(g *int64) string {
	if g == nil {
		return "absent"
	}
	return strconv.FormatInt(*g, 10)
}

// Describe renders a condition with its freshness for messages: "Upgradeable=True
// (observedGeneration 3, generation 4)".
func DescribeCondition(c *Condition, o Observation) string {
	if c == nil {
		return "no Upgradeable condition"
	}
	return fmt.Sprintf("%s=%s (observedGeneration %s, generation %d)", c.Type, c.Status, FormatGeneration(o.ObservedGeneration(c)), o.Generation)
}

// OverrideAnnotation is the annotation on the status-source CR by which
// an admin forces the verdict where no OLM OperatorCondition exists (the
// admission guard and `statuscheck gate`): "True" allows, any other value
// holds, as an OperatorCondition's Upgradeable override does in OLM.
const OverrideAnnotation = "statuscheck.operatorframework.io/upgradeable-override"

// AnnotationOverrides reads OverrideAnnotation from a CR's annotations as
// the overrides Gate applies (none when it is unset).
func AnnotationOverrides(annotations map[string]string) []Condition {
	v, ok := annotations[OverrideAnnotation]
	if !ok {
		return nil
	}
	return []Condition{{Type: ConditionUpgradeable, Status: v}}
}
