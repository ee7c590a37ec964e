// Package explore runs every interleaving of the lock protocol's actors
// (a user, the operator, OLM) against simulate's core, breadth-first with
// state deduplication, and reports each violation once with its shortest
// trace, which it can write as a StatusTrace that replays to it.
package explore

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/jsonobj"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/simulate"
	"github.com/statuscheck/statuscheck/pkg/trace"
)

// Step, State and Config are the core's.
type (
	Step   = trace.Step
	State  = simulate.State
	Config = simulate.Config
)

// The explorer runs every interleaving of three actors against the core:
//
//   - a user, who changes the spec (one field the CRD keeps and accepts,
//     found by pickSpecChange), any number of times unless MaxUserChanges
//     bounds it;
//   - the operator, which reconciles each new generation and either starts
//     a migration (reporting Upgradeable=False) or does not (True), finishes
//     migrations (True), answers OLM's request, mirrors its condition into
//     the OperatorCondition in that handshake, and, having answered a
//     request with True, defers migrations;
//   - OLM, which requests (under RequestAck), checks, syncs the
//     OperatorCondition's status, and, after a check that allowed,
//     replaces the operator in a separate step.
//
// The search is breadth-first, so the first trace found to a violation is
// a shortest one. States are deduplicated on an encoding that leaves out
// what cannot matter (the step counter) and writes every generation
// relative to the CR's, so two interleavings that end in the same
// situation are explored once.

// Options configure a search.
type Options struct {
	// Depth is the most steps a trace may take.
	Depth int
	// MaxUserChanges bounds the user's spec changes per trace (0: only the
	// depth bounds them).
	MaxUserChanges int
	// MaxStates stops the search when the visited set reaches it (0: no
	// limit); Truncated is then set on the result.
	MaxStates int
	// Progress, when set, is called about once a second.
	Progress func(Progress)
	// Example is the CR the console would create (the CSV's
	// initialization resource or alm-examples entry for the kind), the
	// starting point of every trace; nil means an empty spec.
	Example map[string]interface{}
	// NoMemo decides every write afresh instead of remembering the
	// apiserver model's answers (simulate.Memo): slower, the same result.
	NoMemo bool
}

// DefaultDepth finishes in well under a second for every handshake of the
// default model (measured: at most 36k states at depth 20).
const DefaultDepth = 16

// Progress reports a running search.
type Progress struct {
	Depth  int
	States int
}

// Counterexample is the shortest trace found to one violation.
type Counterexample struct {
	Violation simulate.Violation `json:"violation"`
	Steps     []Step             `json:"-"`
}

// Result is what a search found.
type Result struct {
	Policy contract.Policy `json:"policy"`
	States int             `json:"states"`
	// Depth is the deepest level explored completely.
	Depth int `json:"depth"`
	// Exhausted is set when every reachable state was explored before the
	// depth limit: no deeper trace exists.
	Exhausted bool `json:"exhausted"`
	// Stopped is set when the search ended early (a timeout, MaxStates).
	Stopped         bool             `json:"stopped,omitempty"`
	Elapsed         time.Duration    `json:"elapsedNanoseconds"`
	Counterexamples []Counterexample `json:"counterexamples"`
	// Initial is where every trace starts, for writing traces.
	Initial           map[string]interface{} `json:"-"`
	OperatorCondition map[string]interface{} `json:"-"`
	// Change is the user's spec change the search made.
	Change SpecChange `json:"specChange"`
}

// actors is the explorer's state beyond the core's: what the actors
// remember.
type actors struct {
	observed  int64 // the generation the operator last reconciled
	migrating bool
	answered  int64 // the request token the operator last answered
	truthTrue bool  // what the operator last reported
	approved  bool  // OLM's check allowed; the replacement is due
	changes   int8  // the user's spec changes so far

	// The bridge (Config.Bridge): what it decided at its last read and
	// has not written yet, and whether OLM has made the replacing CSV
	// (RequestAck).
	bridgeRequest bool
	bridgeWrite   []interface{}
	replacing     bool
}

// node is a state of the frontier: the core's state, what the actors
// remember, the step that led to it and how many moves that took.
type node struct {
	state State
	act   actors
	step  Step
	idx   int32 // in the search's links
	depth int16
}

// link is all the search keeps of a state once its level is done: its
// parent and which of the parent's moves led to it (moves lists them in a
// fixed order), from which a path is replayed when a trace is wanted.
type link struct {
	parent int32
	move   uint8
}

// exploreStart is where every explored trace starts: the example CR (or
// an empty spec) with the user's field at its first value, the operator
// idle and its Upgradeable=True fresh at generation 1; and, in the
// OperatorCondition flow, the OperatorCondition saying the same. It checks
// that the apiserver takes the operator's status writes: a model operator
// whose writes the CRD refuses would explore nothing.
func exploreStart(cfg *Config, example map[string]interface{}) (cr, oc map[string]interface{}, change SpecChange, err error) {
	src := cfg.Source
	md := map[string]interface{}{"name": src.Name, "generation": int64(1)}
	if src.Namespace != "" {
		md["namespace"] = src.Namespace
	}
	cr = map[string]interface{}{"apiVersion": src.APIVersion, "kind": src.Kind, "metadata": md, "spec": map[string]interface{}{}}
	if spec, ok := example["spec"].(map[string]interface{}); ok {
		cr["spec"] = spec
	}
	if change, err = pickSpecChange(cfg, cr); err != nil {
		return nil, nil, change, err
	}
	cr = jsonobj.MergePatch(cr, change.patch(change.A))
	for _, ok := range []bool{false, true} {
		s, err := simulate.Initial(cfg, cr, nil)
		if err != nil {
			return nil, nil, change, err
		}
		status := statusValue(cfg, ok, 1, "1")
		_, rf, err := simulate.Write(cfg, s.CR, Step{Actor: v1alpha1.ActorOperator, Verb: v1alpha1.VerbUpdateStatus, Value: status})
		if err == nil && rf != nil {
			err = fmt.Errorf("the CRD refuses the status an operator writes with metav1.Condition (%s): %w", jsonobj.Compact(status), rf)
		}
		if err != nil {
			return nil, nil, change, err
		}
	}
	cr["status"] = statusValue(cfg, true, 1, "")
	if cfg.Bridge {
		if src.Mode() == v1alpha1.HandshakeOperatorCondition {
			return nil, nil, change, fmt.Errorf("the bridge writes the OperatorCondition in the operator's stead: explore it with a None or RequestAck handshake, not OperatorCondition")
		}
		oc, err = bridgeStart(cfg, cr)
		return cr, oc, change, err
	}
	if src.Mode() == v1alpha1.HandshakeOperatorCondition {
		oc = map[string]interface{}{
			"apiVersion": simulate.OperatorConditionAPIVersion, "kind": simulate.OperatorConditionKind,
			"metadata": map[string]interface{}{"name": "operator", "generation": int64(1)},
			"spec":     map[string]interface{}{"conditions": []interface{}{ocCondition(true)}},
			"status": map[string]interface{}{"conditions": []interface{}{
				jsonobj.MergePatch(ocCondition(true), map[string]interface{}{"observedGeneration": int64(1)})}},
		}
	}
	return cr, oc, change, nil
}

func reasonOf(ok bool) string {
	if ok {
		return "OperatorIdle"
	}
	return "MigrationInProgress"
}

func statusWord(ok bool) string {
	if ok {
		return contract.StatusTrue
	}
	return contract.StatusFalse
}

// transitionTime is every condition's lastTransitionTime in explored
// traces: the gate never reads it, the apiserver requires it.
var transitionTime = simulate.Epoch.Format(time.RFC3339)

// condition is a condition as an operator writes it with
// meta.SetStatusCondition: every field metav1.Condition requires.
func condition(t string, ok bool) map[string]interface{} {
	msg := "the operator is idle"
	if !ok {
		msg = "a migration is in progress"
	}
	return map[string]interface{}{"type": t, "status": statusWord(ok), "reason": reasonOf(ok), "message": msg, "lastTransitionTime": transitionTime}
}

// statusValue is the operator's status write: every gated condition with
// the same answer, and the echo where the handshake asks for one.
func statusValue(cfg *Config, ok bool, og int64, echo string) map[string]interface{} {
	src := cfg.Source
	var conds []interface{}
	for _, t := range src.ConditionTypes() {
		c := condition(t, ok)
		c["observedGeneration"] = og
		conds = append(conds, c)
	}
	st := map[string]interface{}{"conditions": conds}
	if p := src.AckPath(); echo != "" && p != nil {
		st = jsonobj.MergePatch(st, jsonobj.NestedPatch(p[1:], cfg.Tokens.AckValue(echo)))
	}
	return st
}

func ocCondition(ok bool) map[string]interface{} {
	return condition(contract.ConditionUpgradeable, ok)
}

// Run searches breadth-first up to opts.Depth. It stops early when ctx
// is done (Stopped is then set).
func Run(ctx context.Context, cfg *Config, opts Options) (*Result, error) {
	if opts.Depth <= 0 {
		opts.Depth = DefaultDepth
	}
	if opts.MaxUserChanges <= 0 {
		opts.MaxUserChanges = opts.Depth
	}
	start := time.Now()
	withMemo := *cfg
	withMemo.Memo = nil
	if !opts.NoMemo {
		withMemo.Memo = simulate.NewMemo()
	}
	cfg = &withMemo
	res := &Result{Policy: cfg.Policies[0]}
	var err error
	if res.Initial, res.OperatorCondition, res.Change, err = exploreStart(cfg, opts.Example); err != nil {
		return nil, fmt.Errorf("explore: %w", err)
	}
	init, err := simulate.Initial(cfg, res.Initial, res.OperatorCondition)
	if err != nil {
		return nil, fmt.Errorf("explore: %w", err)
	}
	root := node{state: init, act: actors{observed: 1, truthTrue: true}}
	s := search{cfg: cfg, opts: opts, change: res.Change, root: root, links: []link{{parent: -1}}}
	visited := map[string]struct{}{encode(cfg, &root, res.Change): {}}
	found := map[string]bool{}
	live := liveness{best: -1}
	frontier := []node{root}
	lastReport := time.Now()
	for depth := 0; depth < opts.Depth && len(frontier) > 0; depth++ {
		var next []node
		for i := range frontier {
			if ctx.Err() != nil {
				res.Stopped = true
				res.finish(len(visited), depth, start)
				return res, nil
			}
			n := &frontier[i]
			ms := moves(cfg, n, opts.MaxUserChanges, res.Change)
			if len(ms) > math.MaxUint8 {
				return nil, fmt.Errorf("explore: %d moves from one state (a bug)", len(ms))
			}
			for m, st := range ms {
				child, out, err := apply(cfg, n, st, opts)
				if err != nil {
					return nil, fmt.Errorf("explore: the model made an impossible step (a bug): %w", err)
				}
				child.step, child.depth = st, n.depth+1
				for _, v := range out.Violations {
					key := v.Rule + "/" + string(v.Policy)
					if found[key] {
						continue
					}
					found[key] = true
					steps, _, err := s.path(n.idx)
					if err != nil {
						return nil, err
					}
					res.Counterexamples = append(res.Counterexamples, Counterexample{Violation: v, Steps: append(steps, st)})
				}
				k := encode(cfg, &child, res.Change)
				if _, seen := visited[k]; seen {
					continue
				}
				visited[k] = struct{}{}
				s.links = append(s.links, link{parent: n.idx, move: uint8(m)})
				child.idx = int32(len(s.links) - 1)
				next = append(next, child)
				live.see(cfg, &child, out, child.idx)
				if opts.MaxStates > 0 && len(visited) >= opts.MaxStates {
					res.Stopped = true
					res.finish(len(visited), depth, start)
					return res, nil
				}
			}
			if opts.Progress != nil && time.Since(lastReport) > time.Second {
				lastReport = time.Now()
				opts.Progress(Progress{Depth: depth + 1, States: len(visited)})
			}
		}
		// A finished level keeps only its links: memory is the frontier's.
		frontier = next
		res.Depth = depth + 1
	}
	res.Exhausted = len(frontier) == 0
	c, ok, err := live.counterexample(cfg, &s, res, len(visited))
	if err != nil {
		return nil, err
	}
	if ok {
		res.Counterexamples = append(res.Counterexamples, c)
	}
	res.finish(len(visited), res.Depth, start)
	return res, nil
}

// liveness watches the search for an upgrade: when no reachable state
// lets one through, the gate can never open under the policy, and the
// shortest path to the best state reached shows why. The best state is
// an OLM check that blocks while the operator's last report is
// Upgradeable=True (simulate.Finish's never-upgradeable): the operator
// has done all it can.
type liveness struct {
	upgraded bool
	best     int32
	why      simulate.Violation
	reason   string
}

func (l *liveness) see(cfg *Config, n *node, out simulate.Outcome, idx int32) {
	if n.state.Upgraded {
		l.upgraded = true
	}
	if l.upgraded || l.best >= 0 || n.step.Actor != v1alpha1.ActorOLM || n.step.Verb != v1alpha1.VerbCheck {
		return
	}
	if len(out.Verdicts) == 0 || out.Verdicts[0].Verdict != contract.Block {
		return
	}
	for _, v := range simulate.Finish(cfg, n.state) {
		if v.Rule == simulate.RuleNeverUpgradeable && v.Policy == cfg.Policies[0] {
			l.best, l.why, l.reason = idx, v, out.Verdicts[0].Reason
			return
		}
	}
}

func (l *liveness) counterexample(cfg *Config, s *search, res *Result, states int) (Counterexample, bool, error) {
	if l.upgraded || res.Stopped {
		return Counterexample{}, false, nil
	}
	scope := fmt.Sprintf("in %d states, to depth %d", states, res.Depth)
	if res.Exhausted {
		scope = fmt.Sprintf("in all %d reachable states", states)
	}
	if l.best < 0 {
		v := simulate.Unreachable(cfg.Policies[0], fmt.Sprintf("no upgrade gets through the %s gate %s, and no OLM check blocks a True report: the operator never reports Upgradeable=True where the gate reads it", cfg.Policies[0], scope))
		return Counterexample{Violation: v}, true, nil
	}
	// The violation keeps simulate.Finish's step (the operator's last
	// report), as a replay of the counterexample shows it.
	steps, depth, err := s.path(l.best)
	if err != nil {
		return Counterexample{}, false, err
	}
	v := l.why
	v.Kind = simulate.KindUnreachable
	v.Message = fmt.Sprintf("no upgrade gets through the %s gate %s; at best, step %d, OLM's check blocks although the operator's last report is Upgradeable=True: %s",
		cfg.Policies[0], scope, depth, l.reason)
	return Counterexample{Violation: v, Steps: steps}, true, nil
}

func (r *Result) finish(states, depth int, start time.Time) {
	r.States, r.Depth, r.Elapsed = states, depth, time.Since(start)
	sort.SliceStable(r.Counterexamples, func(i, j int) bool {
		return len(r.Counterexamples[i].Steps) < len(r.Counterexamples[j].Steps)
	})
}

// search is what a path is replayed from: the root and the links.
type search struct {
	cfg    *Config
	opts   Options
	change SpecChange
	root   node
	links  []link
}

// path is the trace to the state links[idx]: its moves, found by walking
// the links up to the root, replayed from the root (moves and apply are
// deterministic, and the memo answers them at once), without the
// explorer's own moves; depth counts every move.
func (s *search) path(idx int32) (steps []Step, depth int, err error) {
	var rev []uint8
	for i := idx; i > 0; i = s.links[i].parent {
		rev = append(rev, s.links[i].move)
	}
	n := s.root
	for i := len(rev) - 1; i >= 0; i-- {
		ms := moves(s.cfg, &n, s.opts.MaxUserChanges, s.change)
		if int(rev[i]) >= len(ms) {
			return nil, 0, fmt.Errorf("explore: replaying a path found no move %d (a bug)", rev[i])
		}
		st := ms[rev[i]]
		child, _, err := apply(s.cfg, &n, st, s.opts)
		if err != nil {
			return nil, 0, fmt.Errorf("explore: replaying a path: %w", err)
		}
		if !internal(st) {
			steps = append(steps, st)
		}
		n = child
	}
	return steps, len(rev), nil
}

// moves lists the steps the actors may take next.
func moves(cfg *Config, n *node, maxChanges int, change SpecChange) []Step {
	s, a := &n.state, &n.act
	if s.Upgraded {
		return nil // the operator is replaced: this version's story ends
	}
	var out []Step
	mode := cfg.Source.Mode()
	// The user.
	if int(a.changes) < maxChanges {
		out = append(out, Step{Actor: v1alpha1.ActorUser, Verb: v1alpha1.VerbUpdate, Value: change.patch(change.other(s.CR))})
	}
	// The operator.
	gen := s.CR.Generation
	request := pendingRequest(s, a)
	echo := ""
	if s.Requested {
		echo = s.TokenValue
	}
	locked := lockHeld(s, a)
	if !a.migrating && (gen > a.observed || request) {
		out = append(out, Step{Actor: v1alpha1.ActorOperator, Verb: v1alpha1.VerbUpdateStatus, Value: statusValue(cfg, true, gen, echo)})
		if gen > a.observed && !locked {
			out = append(out, Step{Actor: v1alpha1.ActorOperator, Verb: v1alpha1.VerbUpdateStatus, Value: statusValue(cfg, false, gen, echo)})
		}
	}
	if a.migrating {
		out = append(out, Step{Actor: v1alpha1.ActorOperator, Verb: v1alpha1.VerbUpdateStatus, Value: statusValue(cfg, true, a.observed, echo)})
	}
	if mode == v1alpha1.HandshakeOperatorCondition {
		if want := ocCondition(a.truthTrue); !ocSpecIs(s.OC, want) {
			out = append(out, Step{Actor: v1alpha1.ActorOperator, Verb: v1alpha1.VerbUpdate, Target: v1alpha1.TargetOperatorCondition,
				Value: map[string]interface{}{"spec": map[string]interface{}{"conditions": []interface{}{want}}}})
		}
	}
	if cfg.Bridge {
		out = append(out, bridgeMoves(cfg, n)...)
	}
	if cfg.ReadsOC() && !ocSynced(s.OC) {
		out = append(out, Step{Actor: v1alpha1.ActorOLM, Verb: v1alpha1.VerbUpdateStatus, Target: v1alpha1.TargetOperatorCondition})
	}
	// OLM.
	switch {
	case a.approved:
		out = append(out, Step{Actor: v1alpha1.ActorOLM, Verb: v1alpha1.VerbUpgrade})
	case cfg.Bridge && mode == v1alpha1.HandshakeRequestAck && !a.replacing:
		out = append(out, Step{Actor: v1alpha1.ActorOLM, Verb: verbReplacement})
	case cfg.Bridge:
		out = append(out, Step{Actor: v1alpha1.ActorOLM, Verb: v1alpha1.VerbCheck})
	case mode == v1alpha1.HandshakeRequestAck && !s.Requested:
		out = append(out, Step{Actor: v1alpha1.ActorOLM, Verb: v1alpha1.VerbRequest})
	default:
		out = append(out, Step{Actor: v1alpha1.ActorOLM, Verb: v1alpha1.VerbCheck})
	}
	return out
}

// pendingRequest: a request stands that the operator has not answered.
func pendingRequest(s *State, a *actors) bool {
	return s.Requested && a.answered != s.Token
}

// lockHeld: the operator answered the standing request with True, so it
// defers migrations.
func lockHeld(s *State, a *actors) bool {
	return s.Requested && a.answered == s.Token && a.truthTrue && !a.migrating
}

func ocSpecIs(oc simulate.Object, want map[string]interface{}) bool {
	spec, _ := oc.Body["spec"].(map[string]interface{})
	conds, _ := spec["conditions"].([]interface{})
	return len(conds) == 1 && jsonobj.Equal(conds[0], want)
}

// ocSynced: OLM's status copy matches the OperatorCondition's spec at
// its generation, so there is nothing for syncOperatorConditionStatus to do.
func ocSynced(oc simulate.Object) bool {
	spec, _ := oc.Body["spec"].(map[string]interface{})
	conds, _ := spec["conditions"].([]interface{})
	if len(conds) != len(oc.Conditions) {
		return false
	}
	for i, c := range conds {
		m, _ := c.(map[string]interface{})
		got := oc.Conditions[i]
		if m["status"] != got.Status || got.ObservedGeneration == nil || *got.ObservedGeneration != oc.Generation {
			return false
		}
	}
	return true
}

// apply runs a move through the core and updates what the actors remember.
func apply(cfg *Config, n *node, st Step, opts Options) (node, simulate.Outcome, error) {
	child := node{act: n.act}
	switch st.Verb {
	case verbBridgeReads:
		child.state = n.state
		bridgeReads(cfg, &child.state, &child.act)
		return child, simulate.Outcome{}, nil
	case verbReplacement:
		child.state = n.state
		child.act.replacing = true
		return child, simulate.Outcome{}, nil
	}
	s, out, err := simulate.Next(cfg, n.state, st)
	if err != nil {
		return child, out, err
	}
	child.state = s
	a := &child.act
	switch {
	case st.Actor == v1alpha1.ActorUser:
		a.changes++
	case st.Actor == v1alpha1.ActorOperator && st.Verb == v1alpha1.VerbUpdateStatus:
		ok := reportTrue(st.Value)
		og := reportOG(st.Value)
		if a.migrating { // finishing
			a.migrating = false
		} else {
			a.observed = og
			a.migrating = !ok
		}
		a.truthTrue = ok
		if n.state.Requested {
			a.answered = n.state.Token
		}
	case st.Actor == v1alpha1.ActorBridge && st.Verb == v1alpha1.VerbRequest:
		a.bridgeRequest = false
	case st.Actor == v1alpha1.ActorBridge:
		a.bridgeWrite = nil
	case st.Verb == v1alpha1.VerbUpgrade:
		a.replacing = false
	case st.Verb == v1alpha1.VerbCheck:
		for _, d := range out.Verdicts {
			if d.Verdict == contract.Allow {
				a.approved = true
			}
		}
	}
	return child, out, nil
}

func reportTrue(status map[string]interface{}) bool {
	conds, _ := status["conditions"].([]interface{})
	if len(conds) == 0 {
		return false
	}
	m, _ := conds[0].(map[string]interface{})
	return m["status"] == contract.StatusTrue
}

func reportOG(status map[string]interface{}) int64 {
	conds, _ := status["conditions"].([]interface{})
	if len(conds) == 0 {
		return 0
	}
	m, _ := conds[0].(map[string]interface{})
	g, _ := jsonobj.Int(m["observedGeneration"])
	return g
}

// encode writes what distinguishes a state, with every generation relative
// to the CR's: a few dozen bytes.
func encode(cfg *Config, n *node, change SpecChange) string {
	s, a := &n.state, &n.act
	g := s.CR.Generation
	b := make([]byte, 0, 48)
	rel := func(v int64) { b = binary.AppendVarint(b, v-g) }
	flag := func(v bool) {
		if v {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	flag(s.CR.Exists)
	cur, _ := nested(s.CR.Body, change.Path)
	flag(jsonobj.Equal(cur, change.B))
	b = append(b, tokenByte(s, cfg))
	for _, c := range s.CR.Conditions {
		b = append(b, c.Status[0])
		if c.ObservedGeneration != nil {
			rel(*c.ObservedGeneration)
		}
	}
	b = append(b, '|')
	b = append(b, contract.EchoOf(s.CR.Status, cfg.Source)...)
	b = append(b, '|')
	// The OperatorCondition, relative to its own generation.
	spec2, _ := s.OC.Body["spec"].(map[string]interface{})
	if conds, ok := spec2["conditions"].([]interface{}); ok && len(conds) > 0 {
		m, _ := conds[0].(map[string]interface{})
		b = append(b, fmt.Sprint(m["status"])[0])
		if cfg.Bridge { // the bridge writes again when its reason changes
			b = append(b, fmt.Sprint(m["reason"])...)
		}
	}
	for _, c := range s.OC.Conditions {
		b = append(b, c.Status[0])
		if c.ObservedGeneration != nil {
			b = binary.AppendVarint(b, *c.ObservedGeneration-s.OC.Generation)
		}
	}
	b = append(b, '|')
	b = binary.AppendVarint(b, s.Token)
	flag(s.Requested)
	flag(s.Acked)
	flag(s.Upgraded)
	if s.Requested {
		rel(s.ReqGen)
	}
	flag(s.Report.Made())
	if s.Report.Made() {
		b = append(b, []byte(s.Report.Status + " ")[0])
		rel(s.Report.ObservedGeneration)
	}
	for i := range cfg.Policies {
		b = append(b, []byte(string(s.Checked[i].Verdict) + " ")[0])
	}
	rel(a.observed)
	flag(a.migrating)
	b = binary.AppendVarint(b, a.answered)
	flag(a.truthTrue)
	flag(a.approved)
	b = append(b, byte(a.changes))
	if cfg.Bridge {
		flag(a.bridgeRequest)
		flag(a.replacing)
		b = append(b, '|')
		for _, c := range a.bridgeWrite {
			m, _ := c.(map[string]interface{})
			b = append(b, fmt.Sprint(m["status"], m["reason"])...)
		}
	}
	return string(b)
}

func tokenByte(s *State, cfg *Config) byte {
	if r := cfg.Source.Request(); r != nil && r.SpecPath != "" {
		v, _, _ := unstructured.NestedFieldNoCopy(s.CR.Body, v1alpha1.FieldPath(r.SpecPath)...)
		if n, err := strconv.Atoi(fmt.Sprint(v)); err == nil {
			return byte(n)
		}
	}
	return 0
}
