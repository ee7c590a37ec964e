package contract

import (
	"fmt"
	"strings"
)

// ConditionUpgradeable is the condition type OLM gates upgrades on
// (operatorsv1.Upgradeable in operator-framework/api).
const ConditionUpgradeable = "Upgradeable"

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
	return l == "upgradeable" || l == "upgradable" || Levenshtein(l, "upgradeable") <= 2
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

// Verdict is the gate's answer.
type Verdict string

const (
	// Allow lets the upgrade proceed.
	Allow Verdict = "Allow"
	// Block holds it.
	Block Verdict = "Block"
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

// Policies lists every policy in display order.
func Policies() []Policy { return []Policy{PolicyOLM, PolicyStrict, PolicyNaive} }

// ParsePolicy checks a policy name.
func ParsePolicy(s string) (Policy, error) {
	for _, p := range Policies() {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown policy %q (want olm, strict or naive)", s)
}

// Observation is what the gate sees at one moment.
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

// Gate evaluates policy p for the condition types of src (nil src means
// OLM's own OperatorCondition: Upgradeable only, allowed while absent).
//
// PolicyOLM reproduces isOperatorUpgradeable from operator-lifecycle-manager
// pkg/controller/operators/olm/operatorconditions.go (master, and every
// release since v0.18.3):
//  1. object not found: upgradeable (here: src.whenAbsent, default Allow);
//  2. the first spec.overrides entry of type Upgradeable decides: True
//     allows, anything else blocks;
//  3. the first status condition of the type: "c.ObservedGeneration !=
//     cond.ObjectMeta.Generation" blocks as outdated, even when True, so
//     a condition from the future blocks too;
//  4. status False blocks;
//  5. absent, Unknown or True allows.
//
// For a status source, the condition's observedGeneration falls back to
// status.observedGeneration (the contract's extension; OLM's
// metav1.Condition reads an absent one as 0, which never equals a
// generation, so both block).
func Gate(p Policy, src *StatusSource, o Observation) Decision {
	if !o.Exists {
		if src != nil && src.Absent() == WhenAbsentBlock {
			return Decision{Block, "status source does not exist (whenAbsent: Block)"}
		}
		return Decision{Allow, "status source does not exist (whenAbsent: Allow)"}
	}
	if d, ok := Override(o.Overrides); ok {
		return d
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
	gen := fmt.Sprintf("observedGeneration %s, generation %d", fmtGen(og), o.Generation)
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
	default: // PolicyOLM: observedGeneration != generation blocks
		switch o.Freshness(c) {
		case Outdated:
			return Decision{Block, fmt.Sprintf("%s is outdated (%s)", state, gen)}, false
		case Future:
			return Decision{Block, fmt.Sprintf("%s is outdated: from the future (%s)", state, gen)}, false
		}
		if c.Status == StatusFalse {
			return Decision{Block, state}, false
		}
		return Decision{Allow, fmt.Sprintf("%s (%s)", state, gen)}, true
	}
}

func fmtGen(g *int64) string {
	if g == nil {
		return "absent"
	}
	return fmt.Sprint(*g)
}
