// Package simulate replays generation/condition sequences of a status
// source under OLM's gate, and explores every interleaving of the lock
// protocol, reporting each moment an upgrade would have been approved on
// outdated or wrong information (docs/contract.md sections 3 to 9).
//
// Its core is pure: Next takes a State and a Step and returns the next
// State with the gate's verdicts and any violations. An apiserver model
// keeps metadata.generation as apiextensions-apiserver's strategy does;
// the gate is package contract's. Replay (traces, snapshot streams, audit
// logs) and exploration both drive that one function, so they cannot
// disagree.
package simulate

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/statuscheck/statuscheck/pkg/apiserver"
	"github.com/statuscheck/statuscheck/pkg/contract"
)

// Actor is who takes a step.
type Actor string

// Actors of a trace.
const (
	ActorUser     Actor = "user"
	ActorOperator Actor = "operator"
	ActorOLM      Actor = "olm"
	ActorAdmin    Actor = "admin"
)

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

// Target is the object a step writes.
type Target string

const (
	// TargetSource is the status-source CR (the default).
	TargetSource Target = ""
	// TargetOperatorCondition is the operator's OperatorCondition.
	TargetOperatorCondition Target = "OperatorCondition"
)

// Step is one event of a trace.
type Step struct {
	Actor  Actor
	Verb   Verb
	Target Target
	// Value is the merge patch of an update, the object of a create, the
	// status of an updateStatus (nil for OLM's OperatorCondition sync), a
	// delete's options ({propagationPolicy: Orphan|Background|Foreground})
	// or a request's token.
	Value map[string]interface{}
	// Expect is a check's expected verdict under the primary policy.
	Expect contract.Verdict
	// File and Line locate the step in its input.
	File string
	Line int
	// Recorded is the generation the apiserver reported after the step,
	// when the input recorded it (snapshots, audit events).
	Recorded *int64
	// Who is the recorded user name or field manager, if any.
	Who string
	// ResourceVersion and Time are what the cluster said of the write,
	// when it was recorded (statuscheck record).
	ResourceVersion string
	Time            string
	// Observed marks the last step inferred from one recorded observation:
	// in Continuous mode the gate is evaluated there, once per change the
	// recording saw.
	Observed bool
}

// Action describes a step in a few words ("update", "updateStatus OC").
func (s Step) Action() string {
	a := string(s.Verb)
	if s.Target == TargetOperatorCondition {
		a += " OperatorCondition"
	}
	return a
}

// Config is what does not change during a run.
type Config struct {
	// Source is the status source; its handshake decides the protocol.
	Source *contract.StatusSource
	// StatusSubresource says whether the CRD version has /status.
	StatusSubresource bool
	// CR serves the status source's CRD version when it is known: every
	// write is then pruned, defaulted and validated by the
	// apiextensions-apiserver's own code (package apiserver). nil: the CRD
	// is taken to keep every field.
	CR *apiserver.Resource
	// OC serves OLM's OperatorCondition; nil means operator-framework/api's
	// CRD at v2, which is what a cluster with OLM has.
	OC *apiserver.Resource
	// Now is the apiserver's clock (creation and deletion timestamps, a
	// condition's lastTransitionTime where OLM's sync would read the
	// wall clock); nil means Epoch, so runs are reproducible.
	Now apiserver.Clock
	// Policies are evaluated side by side.
	Policies []contract.Policy
	// Primary is the policy a check's expect is judged by.
	Primary contract.Policy
	// Continuous evaluates the gate after every step, as if OLM checked
	// all the time (recorded input without olm steps).
	Continuous bool

	// memo, when set, remembers the apiserver model's answers (Explore).
	memo memo
}

func (c *Config) mode() contract.HandshakeMode { return c.Source.Mode() }

func (c *Config) request() *contract.HandshakeRequest {
	if c.Source.Handshake == nil {
		return nil
	}
	return c.Source.Handshake.Request
}

func (c *Config) ackPath() []string {
	if h := c.Source.Handshake; h != nil && h.Ack != nil && h.Ack.StatusPath != "" {
		return contract.FieldPath(h.Ack.StatusPath)
	}
	return nil
}

// pendingSize bounds the approvals awaiting the operator's next report per
// policy; older ones are forgotten (documented in README's limits).
const pendingSize = 8

type pending struct {
	gen  int64
	step int
	line int
	used bool
}

// report is the operator's last status report on the CR.
type report struct {
	made   bool
	step   int
	status string
	og     int64
	hasOG  bool
}

// State is everything that changes. It is a value: copying it is a
// snapshot, which is what lets the explorer branch.
type State struct {
	CR Object
	OC Object
	// Steps counts the steps applied.
	Steps int
	// Token is the last handshake token OLM wrote; Requested says whether
	// a request stands (set by request, cleared by upgrade).
	Token int64
	// TokenValue is the token as written (recorded input may carry its own).
	TokenValue string
	Requested  bool
	// ReqGen is the CR's generation right after the request.
	ReqGen  int64
	ReqStep int
	// Acked: the operator answered the standing request with True and has
	// not taken it back. This is the truth of the run, not what OLM sees.
	Acked    bool
	Report   report
	Upgraded bool
	// pending approvals per policy (index in Config.Policies), awaiting
	// the operator's first report for the generation they were made at.
	Pending [3][pendingSize]pending
}

// Outcome is what one step produced.
type Outcome struct {
	// Step is the 1-based number of the step.
	Step int
	// Verdicts are the gate's decisions per Config.Policies, when the gate
	// was evaluated at this step (nil otherwise).
	Verdicts []contract.Decision
	// Violations found at this step (some refer to earlier steps).
	Violations []Violation
}

// StepError is a step that makes no sense (a status write before the CR
// exists, a request without a RequestAck handshake).
type StepError struct {
	File string
	Line int
	Step int
	Msg  string
}

func (e *StepError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	return fmt.Sprintf("%s: step %d: %s", loc, e.Step, e.Msg)
}

// Initial returns the state before the first step: the CR as first
// observed (nil: it does not exist yet) and OLM's OperatorCondition (nil:
// the empty one OLM creates at install, generation 1). Both are brought to
// what the apiserver would hand out (pruned and defaulted) where their CRD
// is known.
func Initial(cfg *Config, cr, oc map[string]interface{}) (State, error) {
	var s State
	if cr != nil {
		stored, err := storedCR(cfg, cr)
		if err != nil {
			return s, fmt.Errorf("the initial %s does not decode as the apiserver would read it: %w", cfg.Source.Kind, err)
		}
		s.CR = NewObject(stored)
	}
	if oc != nil {
		res, err := cfg.ocResource()
		if err != nil {
			return s, err
		}
		full := map[string]interface{}{"apiVersion": ocAPIVersion, "kind": ocKind}
		for k, v := range oc {
			full[k] = v
		}
		stored, err := res.Stored(full)
		if err != nil {
			return s, fmt.Errorf("the initial OperatorCondition does not decode as the apiserver would read it: %w", err)
		}
		s.OC = NewObject(stored)
	} else {
		var err error
		if s.OC, err = defaultOperatorCondition(cfg); err != nil {
			return s, fmt.Errorf("creating the default OperatorCondition: %w", err)
		}
	}
	if s.CR.Exists && s.CR.Status != nil {
		s.Report = reportOf(s.CR, 0)
	}
	return s, nil
}

// reportOf reads the operator's Upgradeable report from a CR status.
func reportOf(o Object, step int) report {
	r := report{made: true, step: step}
	if c := contract.Find(o.Conditions, contract.ConditionUpgradeable); c != nil {
		r.status = c.Status
		if c.ObservedGeneration != nil {
			r.og, r.hasOG = *c.ObservedGeneration, true
		} else if o.StatusOG != nil {
			r.og, r.hasOG = *o.StatusOG, true
		}
	}
	return r
}

// Next applies one step: the pure core shared by replay and exploration.
// A write the apiserver would refuse is reported as write-rejected and
// changes nothing, as on a real server.
func Next(cfg *Config, s State, st Step) (State, Outcome, error) {
	s.Steps++
	out := Outcome{Step: s.Steps}
	fail := func(format string, args ...interface{}) (State, Outcome, error) {
		return s, out, &StepError{File: st.File, Line: st.Line, Step: s.Steps, Msg: fmt.Sprintf(format, args...)}
	}
	v := &out.Violations
	before := s.CR
	statusWritten := false
	var w writeResult
	var err error
	switch {
	case st.Target == TargetOperatorCondition:
		var msg string
		w, msg, err = applyOC(cfg, s.OC, st)
		if msg != "" {
			return fail("%s", msg)
		}
		if err == nil && w.refused == nil {
			s.OC = w.obj
		}
	case st.Verb == VerbCreate:
		if s.CR.Exists {
			return fail("create, but the CR exists already")
		}
		if w, err = createCR(cfg, st.Value); err == nil && w.refused == nil {
			s.CR = w.obj
			// Without /status a create can set status (PrepareForCreate
			// drops it only with the subresource on).
			statusWritten = !cfg.StatusSubresource && w.changed
		}
	case st.Verb == VerbDelete:
		if !s.CR.Exists {
			return fail("delete, but the CR does not exist")
		}
		if w, err = deleteCR(cfg, s.CR, st); err == nil && w.refused == nil {
			s.CR = w.obj
		}
	case st.Verb == VerbUpdate:
		if !s.CR.Exists {
			return fail("update, but the CR does not exist (create it first)")
		}
		if w, err = updateCR(cfg, s.CR, st.Value); err == nil && w.refused == nil {
			s.CR, statusWritten = w.obj, w.changed
		}
	case st.Verb == VerbUpdateStatus:
		if !s.CR.Exists {
			return fail("status write before the CR exists")
		}
		if w, err = statusCR(cfg, s.CR, st.Value); err == nil && w.refused == nil {
			s.CR, statusWritten = w.obj, true
		}
	case st.Verb == VerbRequest:
		if cfg.mode() != contract.HandshakeRequestAck || cfg.request() == nil {
			return fail("OLM request, but the status source declares no RequestAck handshake")
		}
		if !s.CR.Exists {
			return fail("OLM request before the CR exists")
		}
		token := strconv.FormatInt(s.Token+1, 10)
		if tv, ok := st.Value["token"].(string); ok && tv != "" {
			token = tv
		}
		r := cfg.request()
		patch := map[string]interface{}{"metadata": map[string]interface{}{"annotations": map[string]interface{}{r.Annotation: token}}}
		if r.SpecPath != "" {
			patch = nestedPatch(contract.FieldPath(r.SpecPath), token)
		}
		if w, err = updateCR(cfg, s.CR, patch); err == nil && w.refused == nil {
			s.CR = w.obj
			s.Token++
			s.TokenValue = token
			s.Requested, s.ReqGen, s.ReqStep, s.Acked = true, s.CR.Generation, s.Steps, false
		}
	case st.Verb == VerbCheck, st.Verb == VerbUpgrade:
		// Evaluated below.
	default:
		return fail("unknown verb %q", st.Verb)
	}
	if err != nil {
		return fail("%v", err)
	}
	if w.refused != nil {
		msg := fmt.Sprintf("the apiserver refuses this %s (%s): %s; on a cluster it changes nothing", st.Action(), refusedBy(cfg, st), w.refused.Error())
		if cfg.Continuous && st.Target == TargetSource {
			// Recorded input: the cluster accepted the write, so the CRD
			// given is not the cluster's. Reality wins from here on.
			msg = fmt.Sprintf("the cluster accepted this %s, but %s refuses it: %s; the CRD given is not the one the cluster has", st.Action(), refusedBy(cfg, st), w.refused.Error())
			s.CR, statusWritten = recordedWrite(cfg, s.CR, st)
		}
		*v = append(*v, violation(RuleWriteRejected, "", st, s.Steps, s, msg))
	}

	if st.Recorded != nil && st.Target == TargetSource && s.CR.Exists && *st.Recorded != s.CR.Generation {
		*v = append(*v, mismatch(cfg, st, s, before))
		s.CR.Generation = *st.Recorded // reality wins from here on
	}
	if statusWritten || st.Verb == VerbCreate {
		s = afterStatus(cfg, s, st, v)
	}

	evaluate := st.Verb == VerbCheck || st.Verb == VerbUpgrade || (cfg.Continuous && st.Observed)
	if evaluate {
		out.Verdicts = make([]contract.Decision, len(cfg.Policies))
		for i, p := range cfg.Policies {
			d := gate(cfg, &s, p)
			out.Verdicts[i] = d
			if d.Verdict == contract.Allow && (st.Verb == VerbCheck || st.Verb == VerbUpgrade || cfg.Continuous) {
				s = approved(cfg, s, st, i, p, d, v)
			}
			if st.Verb == VerbUpgrade && d.Verdict == contract.Block {
				*v = append(*v, violation(RuleUpgradeWhileBlocked, p, st, s.Steps, s,
					fmt.Sprintf("the operator was replaced while the %s gate blocked: %s", p, d.Reason)))
			}
			if st.Verb == VerbCheck && st.Expect != "" && p == cfg.Primary && d.Verdict != st.Expect {
				*v = append(*v, violation(RuleCheckExpectation, p, st, s.Steps, s,
					fmt.Sprintf("the trace expects %s here, the %s gate says %s: %s", st.Expect, p, d.Verdict, d.Reason)))
			}
		}
	}
	if st.Verb == VerbUpgrade {
		if cfg.mode() == contract.HandshakeRequestAck && !s.Acked {
			msg := "upgrade, but no upgrade request was made"
			if s.Requested {
				msg = fmt.Sprintf("upgrade, but the operator never answered request %d (step %d) with Upgradeable=True", s.Token, s.ReqStep)
			}
			*v = append(*v, violation(RuleUnacknowledgedUpgrade, "", st, s.Steps, s, msg))
		}
		s.Upgraded = true
		s.Requested, s.Acked = false, false
		// The replaced CSV goes, and its OperatorCondition with it (owner
		// reference); OLM creates an empty one for the new CSV, and that
		// is what the next upgrade's gate reads (isOperatorUpgradeable
		// reads the OperatorCondition named after the CSV being replaced).
		if s.OC, err = defaultOperatorCondition(cfg); err != nil {
			return fail("%v", err)
		}
	}
	withVerdicts(cfg, &s, out.Verdicts, out.Violations)
	return s, out, nil
}

// refusedBy says whose rules refused a write.
func refusedBy(cfg *Config, st Step) string {
	switch {
	case st.Target == TargetOperatorCondition:
		return "by OLM's OperatorCondition CRD, operators.coreos.com/v2"
	case cfg.CR != nil:
		return fmt.Sprintf("by the CRD of %s %s", cfg.Source.Kind, cfg.Source.APIVersion)
	}
	return "by the apiserver's metadata rules"
}

// recordedWrite applies a recorded write as the recording shows it, past
// a CRD that would have refused it.
func recordedWrite(cfg *Config, o Object, st Step) (Object, bool) {
	switch st.Verb {
	case VerbCreate:
		return NewObject(st.Value), !cfg.StatusSubresource && st.Value["status"] != nil
	case VerbUpdate:
		return update(cfg, o, st.Value)
	case VerbUpdateStatus:
		return writeStatus(cfg, o, st.Value), true
	}
	return o, false
}

// withVerdicts adds the gate's verdicts to the evidence of violations:
// those evaluated at the step, or what the gate would say now.
func withVerdicts(cfg *Config, s *State, evaluated []contract.Decision, vs []Violation) {
	if len(vs) == 0 {
		return
	}
	verdicts := make(map[contract.Policy]contract.Verdict, len(cfg.Policies))
	for i, p := range cfg.Policies {
		if evaluated != nil {
			verdicts[p] = evaluated[i].Verdict
		} else {
			verdicts[p] = gate(cfg, s, p).Verdict
		}
	}
	for i := range vs {
		vs[i].Evidence.Verdicts = verdicts
	}
}

// update applies a main-resource write (a merge patch) as the apiserver's
// customResourceStrategy.PrepareForUpdate does: with the status subresource
// on, status in the request is dropped; any change outside metadata bumps
// generation, once per write; metadata (labels, annotations, finalizers)
// never does. It reports whether status changed.
func update(cfg *Config, o Object, patch map[string]interface{}) (Object, bool) {
	bodyPatch := map[string]interface{}{}
	var statusPatch map[string]interface{}
	hasStatus := false
	for k, pv := range patch {
		switch k {
		case "apiVersion", "kind":
		case "metadata":
			mp, _ := pv.(map[string]interface{})
			o.Meta = apiserver.MergePatch(o.Meta, withoutKey(mp, "generation")) // generation is server-managed
		case "status":
			statusPatch, _ = pv.(map[string]interface{})
			hasStatus = true
		default:
			bodyPatch[k] = pv
		}
	}
	changed := false
	if len(bodyPatch) > 0 {
		nb := apiserver.MergePatch(o.Body, bodyPatch)
		changed = !equalJSON(nb, o.Body) && !(len(nb) == 0 && len(o.Body) == 0)
		o.Body = nb
	}
	statusChanged := false
	if hasStatus && !cfg.StatusSubresource {
		var ns map[string]interface{}
		if patch["status"] != nil {
			ns = apiserver.MergePatch(o.Status, statusPatch)
		}
		if !equalJSON(ns, o.Status) {
			o = o.withStatus(ns)
			statusChanged, changed = true, true
		}
	}
	if changed {
		o.Generation++
	}
	return o, statusChanged
}

func withoutKey(m map[string]interface{}, key string) map[string]interface{} {
	if _, ok := m[key]; !ok {
		return m
	}
	out := make(map[string]interface{}, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// writeStatus is a /status write: it replaces status and never bumps
// generation (statusStrategy.PrepareForUpdate). Without the subresource
// the operator can only write status through the main resource, which is a
// change outside metadata and bumps generation.
func writeStatus(cfg *Config, o Object, status map[string]interface{}) Object {
	changed := !equalJSON(status, o.Status)
	o = o.withStatus(status)
	if !cfg.StatusSubresource && changed {
		o.Generation++
	}
	return o
}

func overrides(oc Object) []contract.Condition {
	spec, _ := oc.Body["spec"].(map[string]interface{})
	conds, _, _ := readConditions(map[string]interface{}{"conditions": spec["overrides"]})
	return conds
}

// observation is what the gate sees of the CR.
func observation(s *State) contract.Observation {
	return contract.Observation{
		Exists:                   s.CR.Exists,
		Generation:               s.CR.Generation,
		StatusObservedGeneration: s.CR.StatusOG,
		Conditions:               s.CR.Conditions,
		Overrides:                overrides(s.OC),
	}
}

// Verdicts evaluates every policy of cfg on s, as a check at this moment
// would.
func Verdicts(cfg *Config, s State) []contract.Decision {
	out := make([]contract.Decision, len(cfg.Policies))
	for i, p := range cfg.Policies {
		out[i] = gate(cfg, &s, p)
	}
	return out
}

// gate evaluates policy p now.
func gate(cfg *Config, s *State, p contract.Policy) contract.Decision {
	switch cfg.mode() {
	case contract.HandshakeOperatorCondition:
		// OLM's own flow: isOperatorUpgradeable on the OperatorCondition.
		obs := contract.Observation{Exists: s.OC.Exists, Generation: s.OC.Generation, Conditions: s.OC.Conditions, Overrides: overrides(s.OC)}
		return contract.Gate(p, nil, obs)
	case contract.HandshakeRequestAck:
		if p != contract.PolicyNaive {
			return handshakeGate(cfg, s, p)
		}
	}
	return contract.Gate(p, cfg.Source, observation(s))
}

// handshakeGate allows once the standing request is answered True, as far
// as OLM can see: through the spec field's generation, or the echoed
// token. With an annotation request and no echo, OLM cannot tell an answer
// from an old report and falls back to freshness, which is the seed's flaw.
func handshakeGate(cfg *Config, s *State, p contract.Policy) contract.Decision {
	obs := observation(s)
	if !s.CR.Exists {
		return contract.Gate(p, cfg.Source, obs)
	}
	if d, ok := contract.Override(obs.Overrides); ok {
		return d
	}
	if !s.Requested {
		return contract.Decision{Verdict: contract.Block, Reason: "no upgrade request stands"}
	}
	r := cfg.request()
	ack := cfg.ackPath()
	if r.Annotation != "" && ack == nil {
		d := contract.Gate(p, cfg.Source, obs)
		d.Reason = fmt.Sprintf("request %d is an annotation with no echo, so freshness decides: %s", s.Token, d.Reason)
		return d
	}
	token := s.TokenValue
	var parts []string
	for _, t := range cfg.Source.ConditionTypes() {
		c := contract.Find(s.CR.Conditions, t)
		if c == nil {
			return contract.Decision{Verdict: contract.Block, Reason: fmt.Sprintf("request %d unanswered: no %s condition", s.Token, t)}
		}
		if r.SpecPath != "" {
			og := obs.ObservedGeneration(c)
			if og == nil || *og < s.ReqGen {
				return contract.Decision{Verdict: contract.Block, Reason: fmt.Sprintf("request %d unanswered: %s=%s is for generation %s, the request is generation %d", s.Token, t, c.Status, fmtOG(og), s.ReqGen)}
			}
		} else if echo, _ := nestedString(s.CR.Status, ack[1:]); echo != token {
			return contract.Decision{Verdict: contract.Block, Reason: fmt.Sprintf("request %d unanswered: status echoes %q", s.Token, echo)}
		}
		if c.Status != contract.StatusTrue {
			return contract.Decision{Verdict: contract.Block, Reason: fmt.Sprintf("request %d answered %s=%s", s.Token, t, c.Status)}
		}
		parts = append(parts, fmt.Sprintf("%s=True", t))
	}
	return contract.Decision{Verdict: contract.Allow, Reason: fmt.Sprintf("request %d answered %s", s.Token, strings.Join(parts, ", "))}
}

func fmtOG(g *int64) string {
	if g == nil {
		return "absent"
	}
	return strconv.FormatInt(*g, 10)
}

// afterStatus runs the checks a status write triggers: future and
// duplicate conditions, and the operator's report (the handshake's ack and
// lock, and the look-ahead half of unsafe-approval).
func afterStatus(cfg *Config, s State, st Step, v *[]Violation) State {
	o := s.CR
	if !o.Exists {
		return s
	}
	for _, c := range o.Conditions {
		if c.ObservedGeneration != nil && *c.ObservedGeneration > o.Generation {
			*v = append(*v, violation(RuleFutureObservedGeneration, "", st, s.Steps, s,
				fmt.Sprintf("%s=%s claims observedGeneration %d, but metadata.generation is %d", c.Type, c.Status, *c.ObservedGeneration, o.Generation)))
		}
	}
	if o.StatusOG != nil && *o.StatusOG > o.Generation {
		*v = append(*v, violation(RuleFutureObservedGeneration, "", st, s.Steps, s,
			fmt.Sprintf("status.observedGeneration is %d, but metadata.generation is %d", *o.StatusOG, o.Generation)))
	}
	if o.Duplicate != "" {
		*v = append(*v, violation(RuleDuplicateCondition, "", st, s.Steps, s,
			fmt.Sprintf("two %s conditions in one status; OLM reads the first", o.Duplicate)))
	}
	if st.Actor != ActorOperator && st.Verb != VerbCreate {
		return s
	}
	r := reportOf(o, s.Steps)
	if cfg.mode() == contract.HandshakeRequestAck && s.Requested && !s.Upgraded {
		switch {
		case s.Acked && r.status != contract.StatusTrue:
			*v = append(*v, violation(RuleLockBroken, "", st, s.Steps, s,
				fmt.Sprintf("having answered request %d with Upgradeable=True, the operator reported Upgradeable=%s before the upgrade", s.Token, orNone(r.status))))
			s.Acked = false
		case !s.Acked && r.status == contract.StatusTrue && answers(cfg, s, r):
			s.Acked = true
		}
	}
	if r.hasOG {
		for i := range cfg.Policies {
			for j := range s.Pending[i] {
				pe := &s.Pending[i][j]
				if !pe.used || pe.gen != r.og {
					continue
				}
				if r.status == contract.StatusFalse {
					msg := fmt.Sprintf("the gate allowed at step %d, generation %d, but the operator's first report for generation %d, at step %d, is Upgradeable=False", pe.step, pe.gen, pe.gen, s.Steps)
					viol := violation(RuleUnsafeApproval, cfg.Policies[i], st, pe.step, s, msg)
					viol.Line = pe.line
					*v = append(*v, viol)
				}
				pe.used = false
			}
		}
	}
	s.Report = r
	return s
}

func orNone(s string) string {
	if s == "" {
		return "(absent)"
	}
	return s
}

// answers says whether a True report answers the standing request, in
// truth: a spec request is answered by a report for a generation at least
// the request's; an echoed one by the echo; an annotation without echo by
// any report made after the request (the best the run can know).
func answers(cfg *Config, s State, r report) bool {
	req := cfg.request()
	switch {
	case req.SpecPath != "":
		return r.hasOG && r.og >= s.ReqGen
	case cfg.ackPath() != nil:
		echo, _ := nestedString(s.CR.Status, cfg.ackPath()[1:])
		return echo == s.TokenValue
	}
	return s.Steps > s.ReqStep
}

// approved records an Allow: unsafe when the condition in hand is not a
// fresh True (and no standing acknowledgement covers it), and pending
// until the operator's first report for this generation tells whether it
// was about to say False.
func approved(cfg *Config, s State, st Step, i int, p contract.Policy, d contract.Decision, v *[]Violation) State {
	if strings.HasPrefix(d.Reason, contract.OverridePrefix) {
		return s // an admin decided; that is not the gate's information
	}
	if cfg.mode() == contract.HandshakeOperatorCondition {
		if s.OC.Exists {
			c := contract.Find(s.OC.Conditions, contract.ConditionUpgradeable)
			if c == nil || c.Status != contract.StatusTrue || c.ObservedGeneration == nil || *c.ObservedGeneration != s.OC.Generation {
				*v = append(*v, violation(RuleUnsafeApproval, p, st, s.Steps, s,
					fmt.Sprintf("the %s gate allowed on the OperatorCondition's %s, which is not a fresh Upgradeable=True", p, describe(c, s.OC.Generation, nil))))
				return s // reported; no need to wait for the operator's word
			}
		}
	} else if s.CR.Exists {
		obs := observation(&s)
		for _, t := range cfg.Source.ConditionTypes() {
			c := contract.Find(s.CR.Conditions, t)
			fresh := c != nil && c.Status == contract.StatusTrue && obs.Freshness(c) == contract.Fresh
			if !fresh && !(cfg.mode() == contract.HandshakeRequestAck && s.Acked) {
				*v = append(*v, violation(RuleUnsafeApproval, p, st, s.Steps, s,
					fmt.Sprintf("the %s gate allowed on %s, which is not a fresh %s=True", p, describe(c, s.CR.Generation, s.CR.StatusOG), t)))
				return s
			}
		}
	}
	if !s.CR.Exists {
		return s
	}
	gen := s.CR.Generation
	slot := -1
	for j, pe := range s.Pending[i] {
		if pe.used && pe.gen == gen {
			return s // the earliest approval for this generation stands
		}
		if !pe.used && slot < 0 {
			slot = j
		}
	}
	if slot < 0 { // full: forget the oldest generation
		slot = 0
		for j, pe := range s.Pending[i] {
			if pe.gen < s.Pending[i][slot].gen {
				slot = j
			}
		}
	}
	s.Pending[i][slot] = pending{gen: gen, step: s.Steps, line: st.Line, used: true}
	return s
}

func describe(c *contract.Condition, gen int64, statusOG *int64) string {
	if c == nil {
		return "no Upgradeable condition"
	}
	og := c.ObservedGeneration
	if og == nil {
		og = statusOG
	}
	return fmt.Sprintf("%s=%s (observedGeneration %s, generation %d)", c.Type, c.Status, fmtOG(og), gen)
}

func mismatch(cfg *Config, st Step, s State, before Object) Violation {
	predicted, recorded := s.CR.Generation, *st.Recorded
	var why string
	switch {
	case st.Verb == VerbUpdateStatus && recorded > before.Generation && cfg.StatusSubresource:
		why = "a status write bumped generation, which only happens when the status subresource is off"
	case st.Verb == VerbUpdateStatus && recorded == before.Generation && !cfg.StatusSubresource:
		why = "a status write left generation alone, which only happens when the status subresource is on"
	case st.Verb == VerbUpdate && recorded == before.Generation && predicted > before.Generation:
		why = "a change outside metadata did not bump generation"
	case st.Verb == VerbUpdate && recorded > before.Generation && predicted == before.Generation:
		why = "a metadata-only change bumped generation"
	default:
		why = "the apiserver's rules predict another generation"
	}
	return violation(RuleGenerationModelMismatch, "", st, s.Steps, s,
		fmt.Sprintf("generation went from %d to %d, the model predicts %d: %s", before.Generation, recorded, predicted, why))
}

// Finish runs the checks that need the whole run: a gate stuck blocked
// while the operator's last report is True.
func Finish(cfg *Config, s State) []Violation {
	var out []Violation
	if !s.Report.made || s.Report.status != contract.StatusTrue || s.Upgraded {
		return nil // nothing reported True, or the question is answered
	}
	if cfg.mode() == contract.HandshakeRequestAck && !s.Requested {
		return nil // no request stands: the gate is idle, not stuck
	}
	for _, p := range cfg.Policies {
		d := gate(cfg, &s, p)
		if d.Verdict == contract.Block {
			when := fmt.Sprintf("at step %d", s.Report.step)
			if s.Report.step == 0 {
				when = "in the starting state"
			}
			v := violation(RuleNeverUpgradeable, p, Step{}, s.Report.step, s,
				fmt.Sprintf("the run ends with the %s gate blocked (%s) although the operator's last report (%s) is Upgradeable=True", p, d.Reason, when))
			out = append(out, v)
		}
	}
	withVerdicts(cfg, &s, nil, out)
	return out
}
