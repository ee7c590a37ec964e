package simulate

import (
	"fmt"
	"strings"

	"github.com/statuscheck/statuscheck/pkg/contract"
)

// Why says why policy p decided d at state s, for the timeline: the
// gate's reason (an outdated or future observedGeneration against the
// generation, a False, an admin's override, an absent object, an
// unanswered request), with what the reason leaves implicit: the
// condition's own reason beside a status other than True, that naive did
// not read observedGeneration, and, where OLM's gate reads the
// OperatorCondition, that it is the OperatorCondition's entry (or that
// there is none, which OLM allows).
func Why(cfg *Config, s *State, p contract.Policy, d contract.Decision) string {
	why := d.Reason
	readsOC := cfg.ReadsOC()
	obj := s.CR
	types := cfg.Source.ConditionTypes()
	if readsOC {
		obj, types = s.OC, []string{contract.ConditionUpgradeable}
	}
	if strings.HasPrefix(why, contract.OverridePrefix) {
		return "admin override: the OperatorCondition's spec.overrides " + strings.TrimPrefix(why, contract.OverridePrefix)
	}
	if readsOC && (!obj.Exists || strings.HasPrefix(why, "status source does not exist")) {
		return "no OperatorCondition: OLM allows (isOperatorUpgradeable: not found)"
	}
	if !obj.Exists {
		return why
	}
	obs := obj.Observation()
	if readsOC {
		obs.StatusObservedGeneration = nil // OLM reads the condition's own only
	}
	for _, t := range types {
		c := contract.Find(obj.Conditions, t)
		if c == nil {
			if none := "no " + t + " condition"; strings.Contains(why, none) {
				// The policies part here: olm and naive let an absent
				// condition through (as OLM does), strict does not.
				how := ", which OLM allows"
				if d.Verdict == contract.Block {
					how = ": only a fresh True allows"
				}
				why = strings.Replace(why, none, none+how, 1)
			}
			continue
		}
		state := t + "=" + c.Status
		if !strings.Contains(why, state) {
			continue
		}
		reason := ""
		if c.Status != contract.StatusTrue && c.Reason != "" && !strings.Contains(why, c.Reason) {
			reason = "reason " + c.Reason
		}
		if p == contract.PolicyNaive && obs.Freshness(c) != contract.Fresh && !strings.Contains(why, "observedGeneration") {
			// What naive did not look at: the outdated (or future)
			// observedGeneration the other gates block on.
			og := fmt.Sprintf("observedGeneration %s, generation %d: not read", contract.FormatGeneration(obs.ObservedGeneration(c)), obs.Generation)
			reason = strings.TrimPrefix(reason+"; "+og, "; ")
		}
		if reason != "" {
			why = strings.Replace(why, state, state+" ("+reason+")", 1)
		}
	}
	if readsOC {
		why = "OperatorCondition: " + why
	}
	return why
}
