package simulate

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/result"
	"github.com/statuscheck/statuscheck/pkg/source"
	"github.com/statuscheck/statuscheck/pkg/trace"
)

// Row is one step of a replay, for the timeline.
type Row struct {
	Step    Step
	Outcome Outcome
	// Why is each verdict's reason (Outcome.Verdicts, by policy), as the
	// timeline says it (Why).
	Why []string
	// Exists, Generation and Condition describe the CR after the step.
	Exists     bool
	Generation int64
	Condition  string
	Token      int64
}

// MaxViolations bounds the violations a Summary keeps; the rest are
// counted only, so memory does not grow with a trace's length.
const MaxViolations = 10_000

// Summary is the result of a run.
type Summary struct {
	// worst is the highest severity of a violation that counts for the
	// exit code (not a historical gate's); counted says there is one.
	worst   result.Severity
	counted bool

	File   string       `json:"file"`
	Name   string       `json:"name,omitempty"`
	Format trace.Format `json:"format"`
	// Source is the status source, as its annotation value.
	Source            string `json:"source"`
	StatusSubresource bool   `json:"statusSubresource"`
	// Mode is the handshake, which decides what the gate reads.
	Mode v1alpha1.HandshakeMode `json:"-"`
	// ReadsOC: OLM's gate reads the OperatorCondition (the
	// OperatorCondition handshake, or the bridge).
	ReadsOC bool `json:"-"`
	// Bridge: the bridge writes the OperatorCondition.
	Bridge   bool              `json:"bridge,omitempty"`
	Policies []contract.Policy `json:"policies"`
	// Primary is the policy a check's expect is judged by; under --policy
	// all, olm.
	Primary    contract.Policy `json:"primary"`
	Steps      int             `json:"steps"`
	Violations []Violation     `json:"violations"`
	// Dropped counts violations beyond MaxViolations.
	Dropped int `json:"dropped,omitempty"`
	// Counts tallies violations per rule.
	Counts map[string]int `json:"counts"`
	// Historical tallies, per rule, the violations of a historical gate
	// (naive, beside a primary policy that ships): they are in Counts and
	// shown, but do not set the exit code.
	Historical map[string]int `json:"historical,omitempty"`
	// Final is the gate's verdict per policy after the last step.
	Final []PolicyDecision `json:"final"`
	// Timeline is the gate's verdicts at each step where it was
	// evaluated. A replay does not keep it (it streams); the JSON writer
	// streams it into the document (report.SimulationJSON), and a reader
	// of that document finds it here.
	Timeline []StepVerdicts `json:"timeline,omitempty"`
	// Notes say what was assumed.
	Notes []string `json:"notes,omitempty"`
	// Skipped lists the other objects a recording held, which were left
	// out, with how often each was seen.
	Skipped string `json:"skipped,omitempty"`
	// Late are notes that came up while the trace was read.
	Late []string `json:"lateNotes,omitempty"`
}

// PolicyDecision is a policy's verdict with its reason.
type PolicyDecision struct {
	Policy contract.Policy `json:"policy"`
	contract.Decision
}

// StepVerdicts is the gate's verdicts at one step, each with its reason
// (Why).
type StepVerdicts struct {
	Step   int    `json:"step"`
	Line   int    `json:"line,omitempty"`
	Actor  string `json:"actor"`
	Action string `json:"action"`
	// Expect is OLM's decision a check carries (recorded), or the trace's
	// expectation.
	Expect   v1alpha1.Verdict `json:"expect,omitempty"`
	Verdicts []PolicyDecision `json:"verdicts"`
}

// VerdictsOf is a row's verdicts, each with its policy and reason (nil
// when the gate was not evaluated at the step).
func VerdictsOf(policies []contract.Policy, r Row) *StepVerdicts {
	if r.Outcome.Verdicts == nil {
		return nil
	}
	sv := &StepVerdicts{Step: r.Outcome.Step, Line: r.Step.Line, Actor: string(r.Step.Actor), Action: r.Step.Action(), Expect: r.Step.Expect}
	for i, p := range policies {
		d := r.Outcome.Verdicts[i]
		if i < len(r.Why) {
			d.Reason = r.Why[i]
		}
		sv.Verdicts = append(sv.Verdicts, PolicyDecision{Policy: p, Decision: d})
	}
	return sv
}

// Historical says whether a violation of policy p, in a run whose
// primary policy is primary, is of a historical gate: naive (OLM before
// operator-lifecycle-manager PR 2160), which no OLM ships, shown beside
// the gates that do (olm, and strict, the contract's own) but not in the
// exit code. Under --policy naive alone it is the run's own gate.
func Historical(p, primary contract.Policy) bool {
	return p == contract.PolicyNaive && primary != contract.PolicyNaive
}

func (s *Summary) add(vs ...Violation) {
	for _, v := range vs {
		if v.Policy != "" && Historical(v.Policy, s.Primary) {
			v.Historical = true
			if s.Historical == nil {
				s.Historical = map[string]int{}
			}
			s.Historical[v.Rule]++
		} else if !s.counted || v.Severity > s.worst {
			s.worst, s.counted = v.Severity, true
		}
		s.Counts[v.Rule]++
		if len(s.Violations) < MaxViolations {
			s.Violations = append(s.Violations, v)
		} else {
			s.Dropped++
		}
	}
}

// ExitCode is 1 when a violation is at or above failOn, else 0. A
// historical gate's violations (Historical) do not count.
// Each violation counts at its own severity (a replay's end-of-run
// never-upgradeable is a warning, --explore's the registry's error).
func (s *Summary) ExitCode(failOn result.Severity) int {
	if s.counted && s.worst >= failOn {
		return result.ExitFindings
	}
	return result.ExitOK
}

// NewSummary starts the summary of a run: what is known before the first
// step.
func NewSummary(t *trace.Trace, cfg *Config) *Summary {
	return &Summary{File: t.File, Name: t.Name, Format: t.Format, Source: cfg.Source.Marshal(),
		StatusSubresource: cfg.StatusSubresource, Mode: cfg.mode(), ReadsOC: cfg.ReadsOC(), Bridge: cfg.Bridge, Policies: cfg.Policies, Primary: cfg.Primary, Counts: map[string]int{}, Violations: []Violation{}}
}

// Replay runs a trace through the core. emit, when set, is called after
// every step; rows are not kept, so a long trace replays in constant
// memory. Without cfg.Memo the run has its own, a replay's (see Memo):
// the apiserver model's answer to a write alike in all the apiserver can
// tell apart (other generations, other timestamps) is reused.
func Replay(t *trace.Trace, cfg *Config, emit func(Row) error) (*Summary, error) {
	if cfg.Memo == nil {
		c := *cfg
		c.Memo = NewReplayMemo()
		cfg = &c
	}
	return replay(t, cfg, emit)
}

// replay is Replay with cfg's memo, or none.
func replay(t *trace.Trace, cfg *Config, emit func(Row) error) (*Summary, error) {
	sum := NewSummary(t, cfg)
	notesBefore := len(t.Notes)
	s, err := Initial(cfg, t.Initial, t.OperatorCondition)
	if err != nil {
		return sum, &trace.TraceError{File: t.File, Msg: err.Error()}
	}
	for {
		st, err := t.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return sum, err
		}
		var out Outcome
		s, out, err = Next(cfg, s, st)
		if err != nil {
			return sum, err
		}
		sum.add(out.Violations...)
		if emit != nil {
			if err := emit(RowOf(cfg, s, st, out)); err != nil {
				return sum, err
			}
		}
	}
	sum.Steps = s.Steps
	// What the reader noticed on the way (a cut-off last step).
	sum.Late = append(sum.Late, t.Notes[notesBefore:]...)
	sum.Skipped = t.Skipped()
	if s.Steps == 0 && !t.Stopped() {
		return sum, t.NoSteps()
	}
	sum.add(Finish(cfg, s)...)
	for _, p := range cfg.Policies {
		d := gate(cfg, &s, p)
		d.Reason = Why(cfg, &s, p, d)
		sum.Final = append(sum.Final, PolicyDecision{Policy: p, Decision: d})
	}
	sortByStep(sum.Violations)
	return sum, nil
}

// sortByStep orders violations by the step they are about, in the order
// found within a step; those of the end of the run (Finish's, which have
// no step of the trace to point at) come last.
func sortByStep(vs []Violation) {
	key := func(v Violation) int {
		if v.File == "" && v.Line == 0 {
			return math.MaxInt
		}
		return v.Step
	}
	sort.SliceStable(vs, func(i, j int) bool { return key(vs[i]) < key(vs[j]) })
}

// RowOf describes the state after a step. Condition is what the gate
// reads: the CR's Upgradeable condition, or in the OperatorCondition flow
// OLM's copy on the OperatorCondition, with its own observedGeneration
// (isOperatorUpgradeable reads no other).
func RowOf(cfg *Config, s State, st Step, out Outcome) Row {
	r := Row{Step: st, Outcome: out, Exists: s.CR.Exists, Generation: s.CR.Generation, Token: s.Token}
	if out.Verdicts != nil {
		r.Why = make([]string, len(out.Verdicts))
		for i, d := range out.Verdicts {
			r.Why[i] = Why(cfg, &s, cfg.Policies[i], d)
		}
	}
	if cfg.ReadsOC() {
		if !s.OC.Exists {
			r.Condition = "(no OC)"
			return r
		}
		c := contract.Find(s.OC.Conditions, contract.ConditionUpgradeable)
		if c == nil {
			r.Condition = fmt.Sprintf("OC gen=%d -", s.OC.Generation)
			return r
		}
		r.Condition = fmt.Sprintf("OC gen=%d %s og=%s", s.OC.Generation, c.Status, contract.FormatGeneration(c.ObservedGeneration))
		return r
	}
	if !s.CR.Exists {
		r.Condition = "(no CR)"
		return r
	}
	c := contract.Find(s.CR.Conditions, contract.ConditionUpgradeable)
	if c == nil {
		r.Condition = "-"
		return r
	}
	r.Condition = fmt.Sprintf("%s og=%s", c.Status, contract.FormatGeneration(s.CR.Observation().ObservedGeneration(c)))
	return r
}

// ContextConfig is the configuration of a run against a resolved status
// source (a bundle or --crd with --source): its CRD version served by
// package apiserver, its /status and its token types, and the bridge when
// the bundle declares one (source.Context.Bridge). explore runs on it.
func ContextConfig(c *source.Context, policies []contract.Policy, primary contract.Policy) *Config {
	cfg := &Config{Source: c.Source, CR: c.Resource, Tokens: c.Tokens, Policies: policies, Primary: primary, Bridge: c.Bridge != nil}
	if c.StatusSubresource != nil {
		cfg.StatusSubresource = *c.StatusSubresource
	}
	return cfg
}

// NewConfig builds a run's configuration: the resolved context first (the
// command line's --bundle or --crd/--source; nil when none was given),
// then the trace's own, then what the trace's object shows, with the
// status subresource assumed on (and said so).
func NewConfig(c *source.Context, t *trace.Trace, policies []contract.Policy, primary contract.Policy) (*Config, []string, error) {
	cfg := &Config{Policies: policies, Primary: primary, Continuous: t.Recorded, Bridge: t.Bridge}
	notes := append([]string(nil), t.Notes...)
	if c != nil && c.Source != nil {
		if err := contradicts(t, c); err != nil {
			return nil, nil, err
		}
	}
	switch {
	case c != nil && c.Source != nil:
		cfg.Source = c.Source
	case t.Source != nil:
		cfg.Source = t.Source
	case t.Initial != nil:
		id := trace.IdentityOf(t.Initial)
		cfg.Source = &v1alpha1.StatusSource{APIVersion: id.APIVersion, Kind: id.Kind, Name: id.Name}
		notes = append(notes, fmt.Sprintf("no status source given: reading %s %s with the default contract (Upgradeable, no handshake); use --bundle or --crd with --source", id.Kind, id.Name))
	default:
		return nil, nil, &trace.TraceError{File: t.File, Msg: "no status source: give --bundle, or --crd with --source"}
	}
	if c != nil {
		cfg.CR, cfg.Tokens = c.Resource, c.Tokens
	}
	switch {
	case c != nil && c.StatusSubresource != nil:
		cfg.StatusSubresource = *c.StatusSubresource
	case t.StatusSubresource != nil:
		cfg.StatusSubresource = *t.StatusSubresource
	default:
		cfg.StatusSubresource = true
		notes = append(notes, "no CRD given: assuming the status subresource is on")
	}
	return cfg, notes, nil
}

// contradicts checks a native trace against the status source the command
// line names: a trace about another object is not this run's trace.
func contradicts(t *trace.Trace, c *source.Context) error {
	want := c.Source
	wantGroup := want.GroupVersion().Group
	check := func(what string, apiVersion, kind, name, ns string) error {
		if kind == "" {
			return nil
		}
		group := schema.FromAPIVersionAndKind(apiVersion, kind).Group
		if kind != want.Kind || group != wantGroup || (name != "" && name != want.Name) ||
			(ns != "" && want.Namespace != "" && ns != want.Namespace) {
			return &trace.TraceError{File: t.File, Msg: fmt.Sprintf("%s is %s, but %s names %s", what,
				describeRef(kind, group, ns, name), c.From, describeRef(want.Kind, wantGroup, want.Namespace, want.Name))}
		}
		return nil
	}
	if d := t.Declared; d != nil {
		if err := check("the trace's statusSource", d.APIVersion, d.Kind, d.Name, d.Namespace); err != nil {
			return err
		}
	}
	if t.Format == trace.FormatTrace && t.Initial != nil {
		id := trace.IdentityOf(t.Initial)
		return check("the trace's initial object", id.APIVersion, id.Kind, id.Name, id.Namespace)
	}
	return nil
}

// describeRef names an object as "CoolOperator cool.operators.corp
// cool-system/cool-operator", the namespace left out when there is none.
func describeRef(kind, group, ns, name string) string {
	if ns != "" {
		name = ns + "/" + name
	}
	return strings.TrimSpace(fmt.Sprintf("%s %s %s", kind, orCoreGroup(group), name))
}

func orCoreGroup(g string) string {
	if g == "" {
		return "core"
	}
	return g
}
