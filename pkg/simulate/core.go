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

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/jsonobj"
	"github.com/statuscheck/statuscheck/pkg/apiserver"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/result"
	"github.com/statuscheck/statuscheck/pkg/trace"
)

// Step is one event of a trace (package trace reads and writes them).
type Step = trace.Step

// Config is what does not change during a run.
type Config struct {
	// Source is the status source; its handshake decides the protocol.
	Source *v1alpha1.StatusSource
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
	// Tokens are the handshake token's JSON types where OLM writes it and
	// the operator echoes it, decided from the CRD (source.Context.Tokens);
	// the zero value writes strings.
	Tokens contract.Tokens
	// Bridge: statuscheck bridge writes the OperatorCondition from the
	// status source, and OLM's gate reads the OperatorCondition
	// (isOperatorUpgradeable), as OLM v0 does whatever the annotation
	// says; the handshake is the bridge's (docs/bridge.md).
	Bridge bool
	// Memo, when set, remembers the apiserver model's answers: the same
	// write to the same object is decided once (explore asks it again in
	// many interleavings).
	Memo *Memo
}

func (c *Config) mode() v1alpha1.HandshakeMode { return c.Source.Mode() }

// ReadsOC says OLM's gate reads the OperatorCondition: in the
// OperatorCondition handshake, and with the bridge.
func (c *Config) ReadsOC() bool { return c.Bridge || c.mode() == v1alpha1.HandshakeOperatorCondition }

func (c *Config) request() *v1alpha1.HandshakeRequest { return c.Source.Request() }

// Report is the operator's last status report on the CR.
type Report struct {
	made bool
	step int
	// Status is the Upgradeable condition's status ("" when absent).
	Status string
	// ObservedGeneration is the generation it speaks for, when HasOG.
	ObservedGeneration int64
	HasOG              bool
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
	Report   Report
	Upgraded bool
	// Lag is what the primary policy said since OLM's last check, in
	// recorded input.
	Lag Lag
	// Checked is each policy's verdict (index in Config.Policies) at
	// OLM's last check since the last upgrade, and the step ("" and 0:
	// none), which tells a race from an upgrade round the gate.
	Checked [contract.NumPolicies]LastCheck
}

// LastCheck is a policy's verdict at OLM's last check.
type LastCheck struct {
	Verdict contract.Verdict
	Step    int
}

// Kinds of upgrade-while-blocked (Violation.Kind).
const (
	// KindRace: the policy's last check allowed, and something changed
	// between it and the replacement.
	KindRace = "race"
	// KindRoundTheGate: the policy's last check blocked, or it never
	// checked: the upgrade went round the gate (possible in a recording
	// of OLM, impossible under the policy).
	KindRoundTheGate = "round-the-gate"
	// KindUnreachable: never-upgradeable from --explore, where no
	// reachable state lets an upgrade through under the policy.
	KindUnreachable = "unreachable"
)

// Lag holds the primary policy's verdicts at the states a recording passed
// through since OLM's last check. OLM decides on what its informers hold
// (isOperatorUpgradeable reads the OperatorCondition through a lister), which
// can be a state the cluster has already left: a recorded check whose
// expect is the verdict of one of these states agrees with the model. Only
// recorded input keeps it.
type Lag struct{ allow, block bool }

func (l Lag) with(v contract.Verdict) Lag {
	switch v {
	case contract.Allow:
		l.allow = true
	case contract.Block:
		l.block = true
	}
	return l
}

func (l Lag) had(v contract.Verdict) bool {
	return v == contract.Allow && l.allow || v == contract.Block && l.block
}

// Request is the handshake's standing request, as the gate reads it.
func (s *State) Request() contract.Request {
	return contract.Request{Standing: s.Requested, Token: s.Token, Value: s.TokenValue, Generation: s.ReqGen}
}

// requester names who writes a request step's token: OLM's request, or
// the bridge's in OLM's stead.
func requester(st Step) string {
	if st.Actor == v1alpha1.ActorBridge {
		return "bridge"
	}
	return "OLM"
}

// TokenOn is the handshake token the CR o holds, as text (5 and "5" read
// alike): at the request's spec path, or in its annotation.
func (c *Config) TokenOn(o Object) (string, bool) {
	r := c.request()
	if r == nil || !o.Exists {
		return "", false
	}
	if r.SpecPath != "" {
		// contract.TokenAt at the path, found without making its slice:
		// the explorer asks this of every state.
		parent, last := o.Body, ""
		for part := range strings.SplitSeq(strings.TrimPrefix(r.SpecPath, "."), ".") {
			if last != "" {
				if parent, _ = parent[last].(map[string]interface{}); parent == nil {
					return "", false
				}
			}
			last = part
		}
		field := [1]string{last}
		return contract.TokenAt(parent, field[:])
	}
	anns, _ := o.Meta["annotations"].(map[string]interface{})
	token, ok := anns[r.Annotation].(string)
	return token, ok
}

// requestOnCR is the request after the bridge wrote one: a token on the
// CR other than the standing one's is a new request (numbered by its
// token when it is a number); the standing token written again changes
// nothing (a second replica's same request); no token (a withdrawal, or a
// request the apiserver pruned) is no request.
func requestOnCR(cfg *Config, s State) State {
	token, ok := cfg.TokenOn(s.CR)
	switch {
	case !ok:
		s.Requested, s.Acked = false, false
	case s.Requested && token == s.TokenValue:
	default:
		if n, err := strconv.ParseInt(token, 10, 64); err == nil {
			s.Token = n
		} else {
			s.Token++
		}
		s.TokenValue = token
		s.Requested, s.ReqGen, s.ReqStep, s.Acked = true, s.CR.Generation, s.Steps, false
	}
	return s
}

// Made reports whether the operator has reported, and with what status
// and observedGeneration.
func (r Report) Made() bool { return r.made }

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
		full := map[string]interface{}{"apiVersion": OperatorConditionAPIVersion, "kind": OperatorConditionKind}
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
func reportOf(o Object, step int) Report {
	r := Report{made: true, step: step}
	if c := contract.Find(o.Conditions, contract.ConditionUpgradeable); c != nil {
		r.Status = c.Status
		if og := o.Observation().ObservedGeneration(c); og != nil {
			r.ObservedGeneration, r.HasOG = *og, true
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
	case st.Target == v1alpha1.TargetOperatorCondition:
		var msg string
		w, msg, err = applyOC(cfg, s.OC, st)
		if msg != "" {
			return fail("%s", msg)
		}
		if err == nil && w.refused == nil {
			s.OC = w.obj
		}
	case st.Verb == v1alpha1.VerbCreate:
		if s.CR.Exists {
			return fail("create, but the CR exists already")
		}
		if w, err = createCR(cfg, st.Value); err == nil && w.refused == nil {
			s.CR = w.obj
			// Without /status a create can set status (PrepareForCreate
			// drops it only with the subresource on).
			statusWritten = !cfg.StatusSubresource && w.changed
		}
	case st.Verb == v1alpha1.VerbDelete:
		if !s.CR.Exists {
			return fail("delete, but the CR does not exist")
		}
		if w, err = deleteCR(cfg, s.CR, st); err == nil && w.refused == nil {
			s.CR = w.obj
		}
	case st.Verb == v1alpha1.VerbUpdate:
		if !s.CR.Exists {
			return fail("update, but the CR does not exist (create it first)")
		}
		if w, err = updateCR(cfg, s.CR, st.Value); err == nil && w.refused == nil {
			s.CR, statusWritten = w.obj, w.changed
		}
	case st.Verb == v1alpha1.VerbUpdateStatus:
		if !s.CR.Exists {
			return fail("status write before the CR exists")
		}
		if w, err = statusCR(cfg, s.CR, st.Value); err == nil && w.refused == nil {
			s.CR, statusWritten = w.obj, true
		}
	case st.Verb == v1alpha1.VerbRequest:
		if cfg.request() == nil {
			return fail("%s request, but the status source declares no RequestAck handshake", requester(st))
		}
		if !s.CR.Exists {
			return fail("%s request before the CR exists", requester(st))
		}
		if patch, ok := st.Value["patch"].(map[string]interface{}); ok {
			// The bridge's request as it writes it: the request is what
			// the CR holds after the write.
			if w, err = updateCR(cfg, s.CR, patch); err == nil && w.refused == nil {
				s.CR = w.obj
				s = requestOnCR(cfg, s)
			}
			break
		}
		token := strconv.FormatInt(s.Token+1, 10)
		if tv, ok := st.Value["token"].(string); ok && tv != "" {
			token = tv
		}
		r := cfg.request()
		patch := map[string]interface{}{"metadata": map[string]interface{}{"annotations": map[string]interface{}{r.Annotation: token}}}
		if r.SpecPath != "" {
			patch = jsonobj.NestedPatch(v1alpha1.FieldPath(r.SpecPath), cfg.Tokens.RequestValue(token))
		}
		if w, err = updateCR(cfg, s.CR, patch); err == nil && w.refused == nil {
			s.CR = w.obj
			s.Token++
			s.TokenValue = token
			s.Requested, s.ReqGen, s.ReqStep, s.Acked = true, s.CR.Generation, s.Steps, false
		}
	case st.Verb == v1alpha1.VerbCheck, st.Verb == v1alpha1.VerbUpgrade:
		// Evaluated below.
	default:
		return fail("unknown verb %q", st.Verb)
	}
	if err != nil {
		return fail("%v", err)
	}
	if cfg.Bridge && s.Requested && st.Target == v1alpha1.TargetSource && st.Verb != v1alpha1.VerbRequest {
		// Under the bridge the request is what the CR holds: a write that
		// takes the token off (a revert, the CR deleted or made again)
		// withdraws it, and the operator's answer with it.
		if token, ok := cfg.TokenOn(s.CR); !ok || token != s.TokenValue {
			s.Requested, s.Acked = false, false
		}
	}
	if w.overwritten != "" {
		*v = append(*v, violation(RuleOperatorConditionOverwritten, "", st, s.Steps, s,
			fmt.Sprintf("the bridge (%s) wrote the OperatorCondition's spec.conditions, which %s keeps (managedFields): two writers overwrite each other's Upgradeable entry, and OLM gates on whichever wrote last", manager(st), w.overwritten)))
	}
	if w.refused != nil {
		msg := fmt.Sprintf("the apiserver refuses this %s (%s): %s; on a cluster it changes nothing", st.Action(), refusedBy(cfg, st), w.refused.Error())
		if cfg.Continuous && st.Target == v1alpha1.TargetSource {
			// Recorded input: the cluster accepted the write, so the CRD
			// given is not the cluster's. Reality wins from here on.
			msg = fmt.Sprintf("the cluster accepted this %s, but %s refuses it: %s; the CRD given is not the one the cluster has", st.Action(), refusedBy(cfg, st), w.refused.Error())
			s.CR, statusWritten = recordedWrite(cfg, s.CR, st)
		}
		*v = append(*v, violation(RuleWriteRejected, "", st, s.Steps, s, msg))
	}

	if st.Recorded != nil && st.Target == v1alpha1.TargetOperatorCondition && s.OC.Exists {
		// The OperatorCondition's generation as recorded: OLM's own spec
		// writes (deployments, serviceAccounts), which a recording leaves
		// out since the gate does not read them, move it too.
		s.OC.Generation = *st.Recorded
	}
	if st.Recorded != nil && st.Target == v1alpha1.TargetSource && s.CR.Exists && *st.Recorded != s.CR.Generation {
		*v = append(*v, mismatch(cfg, st, s, before))
		s.CR.Generation = *st.Recorded // reality wins from here on
	}
	if statusWritten || st.Verb == v1alpha1.VerbCreate {
		s = afterStatus(cfg, s, st, v)
	}

	evaluate := st.Verb == v1alpha1.VerbCheck || st.Verb == v1alpha1.VerbUpgrade || (cfg.Continuous && st.Observed)
	if evaluate {
		out.Verdicts = make([]contract.Decision, len(cfg.Policies))
		for i, p := range cfg.Policies {
			d := gate(cfg, &s, p)
			out.Verdicts[i] = d
			if d.Verdict == contract.Allow && (st.Verb == v1alpha1.VerbCheck || st.Verb == v1alpha1.VerbUpgrade || cfg.Continuous) {
				approved(cfg, s, st, p, d, v)
			}
			if st.Verb == v1alpha1.VerbUpgrade && d.Verdict == contract.Block {
				viol := violation(RuleUpgradeWhileBlocked, p, st, s.Steps, s, "")
				switch last := s.Checked[i]; {
				case last.Verdict == contract.Allow:
					viol.Kind = KindRace
					viol.Message = fmt.Sprintf("the operator was replaced while the %s gate blocked (a race: its check at step %d allowed, and the state changed before the replacement): %s", p, last.Step, d.Reason)
				case last.Verdict == contract.Block:
					viol.Kind = KindRoundTheGate
					viol.Message = fmt.Sprintf("the operator was replaced while the %s gate blocked (round the gate: its last check, at step %d, blocked too): %s", p, last.Step, d.Reason)
					if cfg.Continuous && !cfg.ReadsOC() && (!s.OC.Exists || ocUnwritten(s.OC)) {
						// A recording: OLM's own gate read the
						// OperatorCondition, which nobody wrote.
						viol.Message += "; OLM's own gate read the OperatorCondition, which holds no Upgradeable entry (nobody wrote it), not the status source (status-source-not-read)"
					}
				default:
					viol.Kind = KindRoundTheGate
					viol.Message = fmt.Sprintf("the operator was replaced while the %s gate blocked (round the gate: it was never checked): %s", p, d.Reason)
				}
				*v = append(*v, viol)
			}
			if st.Verb == v1alpha1.VerbCheck {
				s.Checked[i] = LastCheck{Verdict: d.Verdict, Step: s.Steps}
			}
			if st.Verb == v1alpha1.VerbCheck && st.Expect != "" && p == cfg.Primary && d.Verdict != st.Expect && !(cfg.Continuous && s.Lag.had(st.Expect)) {
				if msg, ok := notRead(cfg, s, st, p, d); ok {
					*v = append(*v, violation(RuleStatusSourceNotRead, p, st, s.Steps, s, msg))
				} else {
					*v = append(*v, violation(RuleCheckExpectation, p, st, s.Steps, s,
						fmt.Sprintf("the trace expects %s here, the %s gate says %s: %s", st.Expect, p, d.Verdict, d.Reason)))
				}
			}
		}
	}
	if cfg.Continuous {
		// What the primary policy said of each state OLM's cache could
		// still hold at its next check: every state since its last one.
		if st.Verb == v1alpha1.VerbCheck || st.Verb == v1alpha1.VerbUpgrade {
			s.Lag = Lag{}
		}
		s.Lag = s.Lag.with(gate(cfg, &s, cfg.Primary).Verdict)
	}
	if st.Verb == v1alpha1.VerbUpgrade {
		if released, overridden := contract.Override(s.OC.Overrides()); cfg.mode() == v1alpha1.HandshakeRequestAck && !s.Acked && !(overridden && released.Verdict == contract.Allow) {
			// An admin's override True releases the upgrade without an
			// answer, as OLM's gate lets it: no request is owed then.
			msg := "upgrade, but no upgrade request was made"
			if s.Token > 0 {
				msg = "upgrade, but no upgrade request stands (the last one was taken off the CR)"
			}
			if s.Requested {
				msg = fmt.Sprintf("upgrade, but the operator never answered request %d (step %d) with Upgradeable=True", s.Token, s.ReqStep)
			}
			*v = append(*v, violation(RuleUnacknowledgedUpgrade, "", st, s.Steps, s, msg))
		}
		s.Upgraded = true
		s.Requested, s.Acked = false, false
		s.Checked = [contract.NumPolicies]LastCheck{}
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
	case st.Target == v1alpha1.TargetOperatorCondition:
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
	case v1alpha1.VerbCreate:
		return NewObject(st.Value), !cfg.StatusSubresource && st.Value["status"] != nil
	case v1alpha1.VerbUpdate:
		return update(cfg, o, st.Value)
	case v1alpha1.VerbUpdateStatus:
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
			o.Meta = jsonobj.MergePatch(o.Meta, withoutKey(mp, "generation")) // generation is server-managed
		case "status":
			statusPatch, _ = pv.(map[string]interface{})
			hasStatus = true
		default:
			bodyPatch[k] = pv
		}
	}
	changed := false
	if len(bodyPatch) > 0 {
		nb := jsonobj.MergePatch(o.Body, bodyPatch)
		changed = !jsonobj.Equal(nb, o.Body) && !(len(nb) == 0 && len(o.Body) == 0)
		o.Body = nb
	}
	statusChanged := false
	if hasStatus && !cfg.StatusSubresource {
		var ns map[string]interface{}
		if patch["status"] != nil {
			ns = jsonobj.MergePatch(o.Status, statusPatch)
		}
		if !jsonobj.Equal(ns, o.Status) {
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
	changed := !jsonobj.Equal(status, o.Status)
	o = o.withStatus(status)
	if !cfg.StatusSubresource && changed {
		o.Generation++
	}
	return o
}

// observation is what the gate sees of the CR, with the admin's
// overrides of the OperatorCondition and the handshake's echo.
func observation(cfg *Config, s *State) contract.Observation {
	o := s.CR.Observation()
	o.Overrides = s.OC.Overrides()
	o.Echo = contract.EchoOf(s.CR.Status, cfg.Source)
	return o
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

// gate evaluates policy p now: contract.Decide on the CR, the
// OperatorCondition and the standing request.
func gate(cfg *Config, s *State, p contract.Policy) contract.Decision {
	oc := contract.Observation{Exists: s.OC.Exists, Generation: s.OC.Generation, Conditions: s.OC.Conditions, Overrides: s.OC.Overrides()}
	if cfg.Bridge {
		// OLM's own flow: isOperatorUpgradeable on the OperatorCondition.
		return contract.Gate(p, nil, oc)
	}
	return contract.Decide(p, cfg.Source, observation(cfg, s), oc, s.Request())
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
	if st.Actor != v1alpha1.ActorOperator && st.Verb != v1alpha1.VerbCreate {
		return s
	}
	r := reportOf(o, s.Steps)
	if cfg.mode() == v1alpha1.HandshakeRequestAck && s.Requested && !s.Upgraded {
		switch {
		case s.Acked && r.Status != contract.StatusTrue:
			*v = append(*v, violation(RuleLockBroken, "", st, s.Steps, s,
				fmt.Sprintf("having answered request %d with Upgradeable=True, the operator reported Upgradeable=%s before the upgrade", s.Token, orNone(r.Status))))
			s.Acked = false
		case !s.Acked && r.Status == contract.StatusTrue && answers(cfg, s, r):
			s.Acked = true
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
func answers(cfg *Config, s State, r Report) bool {
	req := cfg.request()
	switch {
	case req.SpecPath != "":
		return r.HasOG && r.ObservedGeneration >= s.ReqGen
	case cfg.Source.AckPath() != nil:
		return contract.EchoOf(s.CR.Status, cfg.Source) == s.TokenValue
	}
	return s.Steps > s.ReqStep
}

// approved judges an Allow (docs/contract.md section 9): it is unsafe
// when it rests on information that is not a fresh True of the status
// source. Where the gate reads a copy (the OperatorCondition), that is the
// copy allowing while the source is not a fresh True. An admin's override
// is not the gate's information, and a standing RequestAck acknowledgement
// covers the report it answered.
func approved(cfg *Config, s State, st Step, p contract.Policy, d contract.Decision, v *[]Violation) {
	if strings.HasPrefix(d.Reason, contract.OverridePrefix) || !s.CR.Exists {
		return
	}
	if cfg.mode() == v1alpha1.HandshakeRequestAck && s.Acked {
		return
	}
	obs := observation(cfg, &s)
	for _, t := range cfg.Source.ConditionTypes() {
		c := contract.Find(s.CR.Conditions, t)
		if c != nil && c.Status == contract.StatusTrue && obs.Freshness(c) == contract.Fresh {
			continue
		}
		msg := fmt.Sprintf("the %s gate allowed on %s, which is not a fresh %s=True", p, contract.DescribeCondition(c, obs), t)
		if cfg.ReadsOC() {
			var oc *contract.Condition
			if s.OC.Exists {
				oc = contract.Find(s.OC.Conditions, contract.ConditionUpgradeable)
			}
			read := "the OperatorCondition's " + contract.DescribeCondition(oc, contract.Observation{Generation: s.OC.Generation})
			if oc == nil {
				read = "an OperatorCondition with no Upgradeable condition"
			}
			msg = fmt.Sprintf("the %s gate allowed on %s, but the status source's %s is not a fresh %s=True",
				p, read, contract.DescribeCondition(c, obs), t)
		}
		*v = append(*v, violation(RuleUnsafeApproval, p, st, s.Steps, s, msg))
		return
	}
}

// notRead diagnoses a recorded check OLM allowed where the gate on the
// status source blocks (d): when the OperatorCondition OLM read holds no
// Upgradeable entry, in spec.conditions, status.conditions or
// spec.overrides (or does not exist), nobody wrote it, and OLM v0's
// isOperatorUpgradeable, which reads only the OperatorCondition, allows on
// it. That is not a trace to fix but a cluster on which the annotation
// holds nothing (docs/contract.md section 9, status-source-not-read). Only
// a recording's expect is OLM's own decision; where the gate already reads
// the OperatorCondition (its handshake, the bridge) the model is OLM's.
func notRead(cfg *Config, s State, st Step, p contract.Policy, d contract.Decision) (string, bool) {
	if !cfg.Continuous || cfg.ReadsOC() || st.Expect != contract.Allow || d.Verdict != contract.Block {
		return "", false
	}
	read := "found no OperatorCondition, which it reads as upgradeable"
	if s.OC.Exists {
		if !ocUnwritten(s.OC) {
			return "", false
		}
		name, _ := s.OC.Meta["name"].(string)
		read = fmt.Sprintf("read the OperatorCondition %s, which holds no Upgradeable entry (nobody wrote it), and allowed", name)
	}
	return fmt.Sprintf("OLM allowed here where the %s gate on the status source blocks (%s): OLM %s; today's OLM v0 does not read the status source, so the annotation holds nothing on this cluster", p, d.Reason, read), true
}

// ocUnwritten says whether an OperatorCondition holds no Upgradeable
// entry: none in spec.conditions (the operator's or the bridge's),
// status.conditions (OLM's copy) or spec.overrides (an admin's).
func ocUnwritten(oc Object) bool {
	if contract.Find(oc.Conditions, contract.ConditionUpgradeable) != nil {
		return false
	}
	if _, ok := contract.Override(oc.Overrides()); ok {
		return false
	}
	v, _, _ := unstructured.NestedFieldNoCopy(oc.Body, "spec", "conditions")
	list, _ := v.([]interface{})
	conds, _ := contract.ReadConditions(list)
	return contract.Find(conds, contract.ConditionUpgradeable) == nil
}

func mismatch(cfg *Config, st Step, s State, before Object) Violation {
	predicted, recorded := s.CR.Generation, *st.Recorded
	var why string
	switch {
	case st.Verb == v1alpha1.VerbUpdateStatus && recorded > before.Generation && cfg.StatusSubresource:
		why = "a status write bumped generation, which only happens when the status subresource is off"
	case st.Verb == v1alpha1.VerbUpdateStatus && recorded == before.Generation && !cfg.StatusSubresource:
		why = "a status write left generation alone, which only happens when the status subresource is on"
	case st.Verb == v1alpha1.VerbUpdate && recorded == before.Generation && predicted > before.Generation:
		why = "a change outside metadata did not bump generation"
	case st.Verb == v1alpha1.VerbUpdate && recorded > before.Generation && predicted == before.Generation:
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
	if !s.Report.made || s.Report.Status != contract.StatusTrue || s.Upgraded {
		return nil // nothing reported True, or the question is answered
	}
	if cfg.mode() == v1alpha1.HandshakeRequestAck && !s.Requested {
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
			// At the end of a replay it is a warning: a recording may stop
			// before the operator caught up. --explore's never-upgradeable
			// (kind unreachable: no reachable state lets an upgrade
			// through) is the error the registry gives.
			v.Severity = result.Warning
			out = append(out, v)
		}
	}
	withVerdicts(cfg, &s, nil, out)
	return out
}
