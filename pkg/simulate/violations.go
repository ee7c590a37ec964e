package simulate

import (
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/result"
)

// Violation IDs (docs/contract.md section 9), plus check-expectation for a trace's
// own assertions.
const (
	RuleUnsafeApproval           = "unsafe-approval"
	RuleUpgradeWhileBlocked      = "upgrade-while-blocked"
	RuleFutureObservedGeneration = "future-observed-generation"
	RuleGenerationModelMismatch  = "generation-model-mismatch"
	RuleDuplicateCondition       = "duplicate-condition"
	RuleNeverUpgradeable         = "never-upgradeable"
	RuleLockBroken               = "lock-broken"
	RuleUnacknowledgedUpgrade    = "unacknowledged-upgrade"
	RuleCheckExpectation         = "check-expectation"
	RuleWriteRejected            = "write-rejected"
	// RuleOperatorConditionOverwritten: the bridge wrote the
	// OperatorCondition's spec.conditions while another writer kept its
	// Upgradeable entry (bridge.OtherWriter).
	RuleOperatorConditionOverwritten = "operatorcondition-overwritten"
	// RuleStatusSourceNotRead: a recorded OLM check allowed where the
	// contract's gate on the status source blocks, on an OperatorCondition
	// that holds no Upgradeable entry: nobody wrote it, and OLM v0 reads
	// only the OperatorCondition.
	RuleStatusSourceNotRead = "status-source-not-read"
)

// Kind is a violation's registry entry.
type Kind struct {
	ID          string
	Severity    result.Severity
	Summary     string
	Remediation string
	// PerPolicy is set when the violation depends on the gate policy.
	PerPolicy bool
}

// Kinds is the registry of violations, in the contract's order.
func Kinds() []Kind {
	return []Kind{
		{RuleUnsafeApproval, result.Error, "The gate allowed (at a check or an upgrade) on information that is not a fresh True of the status source; where the gate reads the OperatorCondition, its copy allowed while the status source's condition was not a fresh True.",
			"Gate on a fresh Upgradeable=True only: keep observedGeneration on every condition and never approve an outdated one (OLM's gate blocks a condition whose observedGeneration differs from metadata.generation).", true},
		{RuleUpgradeWhileBlocked, result.Error, "An upgrade step happened while the policy's verdict was Block: a race (kind race: the last check allowed, and something changed before the replacement) or an upgrade round the gate (kind round-the-gate: the last check blocked, or there was none).",
			"Use a handshake (RequestAck with a spec request, or an annotation request with an ack status path) so that the operator defers new work once it has said True.", true},
		{RuleFutureObservedGeneration, result.Error, "A condition's observedGeneration (or status.observedGeneration) is above metadata.generation, which no apiserver produces.",
			"Set observedGeneration from the metadata.generation of the object the reconcile read, never from a counter of your own.", false},
		{RuleGenerationModelMismatch, result.Error, "A recorded generation change contradicts the apiserver's rules for this CRD (a status write that bumped generation means the status subresource is off).",
			"Enable the status subresource, or give simulate the CRD the cluster really has (--crd / --bundle).", false},
		{RuleDuplicateCondition, result.Warning, "Two conditions of the same type in one status; OLM reads the first.",
			"Update conditions with apimachinery's meta.SetStatusCondition and make status.conditions a map list keyed by type.", false},
		{RuleNeverUpgradeable, result.Error, "The run ends with the gate blocked although the operator's last report is True: a stuck gate, a warning there, since a recording may stop before the operator caught up. From --explore (kind unreachable), an error like the race, since a gate that never opens stops every upgrade: no reachable state lets an upgrade through under the policy, shown by the shortest path to an OLM check that blocks a True report.",
			"Make observedGeneration able to catch up (status subresource on; report the generation the reconcile read).", true},
		{RuleLockBroken, result.Error, "Handshake: having acknowledged the current request with True, the operator reported Upgradeable other than True before the upgrade (it started work it had promised to defer).",
			"Once the operator has answered a request with True, defer migrations until the upgrade happens or the request is withdrawn.", false},
		{RuleUnacknowledgedUpgrade, result.Error, "Handshake: the upgrade happened without an acknowledgement of the current request.",
			"Gate on the answer to the request: a spec request (specPath), or an annotation request with ack.statusPath echoing the token.", false},
		{RuleWriteRejected, result.Error, "A step writes what the apiserver refuses (the CRD's schema, CEL rules or metadata rules; OLM's OperatorCondition CRD for its steps): on a cluster the write fails and changes nothing.",
			"Write what the CRD accepts: metav1.Condition's required fields (type, status True/False/Unknown, reason, message, lastTransitionTime), values within the schema's bounds; check the error the operator's client gets.", false},
		{RuleOperatorConditionOverwritten, result.Error, "Bridge: statuscheck bridge wrote the OperatorCondition's spec.conditions while another writer kept its Upgradeable entry (the entry is not the one the bridge last wrote, and another field manager owns the list in managedFields), as an operator that still writes its own OperatorCondition (with operator-lib's conditions package) does: two writers overwrite each other's entry, and OLM gates on whichever wrote last, not on the bridge's decision or the other writer's.",
			"Keep one writer of the Upgradeable entry: stop the operator's own OperatorCondition writes when the bridge runs, or do not run the bridge. When another field manager keeps the entry, statuscheck bridge stops writing and says so: its log, a Warning event (reason OtherWriter) on the OperatorCondition, and the statuscheck_bridge_other_writer metric.", false},
		{RuleStatusSourceNotRead, result.Error, "A recorded OLM check allowed where the contract's gate on the status source blocks, and the OperatorCondition OLM read holds no Upgradeable entry: nobody wrote it, and today's OLM v0 reads only the OperatorCondition, not the status source, so the annotation does not hold the upgrade on this cluster.",
			"Make OLM v0 read what the status source says: add statuscheck bridge to the bundle (statuscheck generate -w --bridge IMAGE BUNDLE), which writes the OperatorCondition's Upgradeable from the CR, or have the operator mirror Upgradeable into its OperatorCondition (handshake {\"mode\":\"OperatorCondition\"}).", false},
		{RuleCheckExpectation, result.Error, "A check step's expect: differs from the primary policy's verdict.",
			"Fix the trace's expectation, or the operator behaviour it describes.", false},
	}
}

// kinds is the registry by ID, made once: a search meets violations in
// many of its steps.
var kinds = func() map[string]Kind {
	m := map[string]Kind{}
	for _, k := range Kinds() {
		m[k.ID] = k
	}
	return m
}()

func kindOf(id string) Kind {
	if k, ok := kinds[id]; ok {
		return k
	}
	return Kind{ID: id, Severity: result.Error}
}

// Evidence is the state a violation was found in.
type Evidence struct {
	Generation         int64  `json:"generation"`
	Condition          string `json:"condition,omitempty"`
	ObservedGeneration *int64 `json:"observedGeneration,omitempty"`
	Token              int64  `json:"token,omitempty"`
	// Verdicts are the gate's verdicts per policy at the step.
	Verdicts map[contract.Policy]contract.Verdict `json:"verdicts,omitempty"`
}

// Violation is one finding of a run.
type Violation struct {
	Rule     string          `json:"rule"`
	Severity result.Severity `json:"severity"`
	// Policy is set for violations that depend on the gate policy.
	Policy  contract.Policy `json:"policy,omitempty"`
	Step    int             `json:"step"`
	File    string          `json:"file,omitempty"`
	Line    int             `json:"line,omitempty"`
	Message string          `json:"message"`
	// Kind tells apart the cases of one rule: for upgrade-while-blocked,
	// KindRace or KindRoundTheGate.
	Kind     string   `json:"kind,omitempty"`
	Evidence Evidence `json:"evidence"`
	// Remediation is the rule's remediation (Kinds).
	Remediation string `json:"remediation,omitempty"`
	// Historical marks a violation of a historical gate (naive) in a run
	// whose primary policy is another: shown beside the gates that ship,
	// never in the exit code (Summary.ExitCode).
	Historical bool `json:"historical,omitempty"`
}

// Unreachable is --explore's never-upgradeable when no OLM check ever
// blocked a True report: the path to show is empty.
func Unreachable(p contract.Policy, msg string) Violation {
	v := violation(RuleNeverUpgradeable, p, Step{}, 0, State{}, msg)
	v.Kind = KindUnreachable
	return v
}

func violation(id string, p contract.Policy, st Step, step int, s State, msg string) Violation {
	k := kindOf(id)
	v := Violation{Rule: id, Severity: k.Severity, Step: step, File: st.File, Line: st.Line, Message: msg, Remediation: k.Remediation}
	if k.PerPolicy {
		v.Policy = p
	}
	v.Evidence.Generation = s.CR.Generation
	v.Evidence.Token = s.Token
	if c := contract.Find(s.CR.Conditions, contract.ConditionUpgradeable); c != nil {
		v.Evidence.Condition = c.Status
		v.Evidence.ObservedGeneration = s.CR.Observation().ObservedGeneration(c)
	}
	return v
}
