// Package explore runs every interleaving of the lock protocol's actors
// (a user, the operator, OLM) against simulate's core, breadth-first with
// state deduplication, and reports each violation once with its shortest
// trace, which it can write as a StatusTrace that replays to it.
package explore

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/jsonobj"
	"github.com/statuscheck/statuscheck/pkg/bridge"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/result"
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
//     replaces the operator in a separate step;
//   - with Config.Bridge, statuscheck bridge (bridge.go), and with
//     Options.Faults the actors that broke it (faults.go).
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
	// Faults switches on the actors that broke the bridge (issue 25);
	// only with Config.Bridge.
	Faults Faults
	// MaxFaults bounds the faults a trace holds that happen at a moment
	// (all but a second replica and the operator's own OperatorCondition
	// writes, which act throughout); 0 is DefaultMaxFaults.
	MaxFaults int
	// Bridge is the bridge the model runs with Config.Bridge; nil is
	// statuscheck bridge's own (StatuscheckBridge).
	Bridge *Bridge
	// SettledChecks lets OLM check and replace only once the bridge has
	// nothing left to write and OLM's status copy is in sync: a slow OLM
	// against a quick bridge. It leaves out the lag every copy has (a
	// change of the CR that OLM acts on before the bridge and OLM's copy
	// catch up), so what is found is the bridge's decision itself. OLM's
	// own race between its check and the replacement stays.
	SettledChecks bool
	// StartUp starts the traces in the start-up window (docs/bridge.md):
	// the OperatorCondition of the version that runs is the empty one
	// OLM's generator makes for every new CSV, and that version's bridge
	// has not written its first entry. An empty OperatorCondition allows,
	// and OLM does not wait for that entry: until it is written, OLM
	// checks even with SettledChecks. Only with Config.Bridge.
	StartUp bool
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

	// The bridge (Config.Bridge): each process's pending writes and
	// memory, whether OLM has made the replacing CSV (RequestAck), and
	// the faults that have happened in this trace.
	bridges   *processes
	owned     bool // bridges is this state's own copy (edit)
	replacing bool
	used      Faults
}

// move is one move of an actor: a step through the core (two for the
// CR made again), or one of the explorer's own, which writes nothing and
// which traces leave out; replica names the bridge process that moves.
type move struct {
	st      Step
	then    *Step
	kind    moveKind
	replica int8
}

type moveKind uint8

const (
	moveStep          moveKind = iota // a step of the core
	moveBridgeRequest                 // a replica writes its request
	moveBridgeWrite                   // a replica writes spec.conditions
	moveStopWrite                     // the first replica withdraws its True and stops
	moveRecreate                      // the CR deleted and made again (two steps)
	moveRead                          // the explorer's own moves, from here: a replica reads
	moveReplacement                   // OLM makes the CSV that replaces the running one
	moveRestart                       // the first replica restarts
	moveStop                          // the first replica stops with nothing to withdraw
)

// steps are the move's steps as a trace holds them.
func (m move) steps() []Step {
	switch {
	case m.kind >= moveRead:
		return nil
	case m.then != nil:
		return []Step{m.st, *m.then}
	}
	return []Step{m.st}
}

// model is what a search runs: the core's configuration, the options,
// the user's spec change and the bridge, and what is computed once per
// object.
type model struct {
	cfg    *Config
	opts   Options
	change SpecChange
	bridge *Bridge
	// Caches, by object identity or text.
	ocs       map[simulate.ObjectID]*operatorsv2.OperatorCondition
	decisions map[decisionKey]*decided
	writers   map[simulate.ObjectID]writers
	codes     map[codeKey]string
	records   map[string]*bridge.RequestRecord
	// observed is the generation the operator has reconciled when the
	// traces start (start).
	observed int64
	// buf is where states are encoded.
	buf []byte
	// made are the steps made from an object once (writes, the user's
	// two patches, the operator's reports).
	made map[madeKey]made
}

// madeKey says what a step was made from: which step, an object's
// identity, a word and a generation.
type madeKey struct {
	kind       byte
	id         simulate.ObjectID
	word, echo string
	gen        int64
}

type made struct {
	st, then Step
	ok       bool
}

// make returns the step made from k, making it once.
func (m *model) make(k madeKey, f func() made) made {
	if v, ok := m.made[k]; ok {
		return v
	}
	v := f()
	if len(m.made) > maxCached {
		clear(m.made)
	}
	m.made[k] = v
	return v
}

// one makes a single step.
func one(st Step, ok bool) made { return made{st: st, ok: ok} }

// newModel is a model of cfg with the caches made.
func newModel(cfg *Config, opts Options) *model {
	b := opts.Bridge
	if b == nil {
		b = StatuscheckBridge()
	}
	return &model{cfg: cfg, opts: opts, bridge: b, ocs: map[simulate.ObjectID]*operatorsv2.OperatorCondition{},
		decisions: map[decisionKey]*decided{}, writers: map[simulate.ObjectID]writers{}, codes: map[codeKey]string{}, records: map[string]*bridge.RequestRecord{}, made: map[madeKey]made{}}
}

// maxCached bounds the per-object caches: a search that outgrows it
// starts them over.
const maxCached = 1 << 14

// maxConverted bounds the typed OperatorConditions kept (a kilobyte each,
// and asked again only where a decision or a writer is not remembered).
const maxConverted = 1 << 12

// node is a state of the frontier: the core's state, what the actors
// remember, and whether the move that led to it was OLM's check.
type node struct {
	state   State
	act     actors
	idx     int32 // in the search's links
	checked bool
}

// level is a level of the frontier, in chunks of nodes: it grows without
// copying, and a chunk is let go once it is expanded. The chunks start
// small and double up to chunk, so that a small search (Quick's) does not
// clear and collect a large chunk for each level.
type level [][]node

const (
	firstChunk = 1 << 4
	chunk      = 1 << 12
)

func (l *level) add(n node) {
	if k := len(*l); k == 0 || len((*l)[k-1]) == cap((*l)[k-1]) {
		size := firstChunk
		if k > 0 {
			size = min(2*cap((*l)[k-1]), chunk)
		}
		*l = append(*l, make([]node, 0, size))
	}
	last := &(*l)[len(*l)-1]
	*last = append(*last, n)
}

func (l level) empty() bool { return len(l) == 0 }

// link is all the search keeps of a state once its level is done: its
// parent and which of the parent's moves led to it (moves lists them in a
// fixed order), from which a path is replayed when a trace is wanted.
type link struct {
	parent int32
	move   uint8
}

// exploreStart is where every explored trace starts, a state the
// apiserver model gives for the bundle's CRD: the example CR (or an empty
// spec) with the user's field at its first value, created through the
// core, then the operator's status write of Upgradeable=True for the
// generation the create gave, through the core too, and the operator idle
// with that generation reconciled. Where the CRD has the status
// subresource, that is a fresh True at generation 1; without it the
// status write is a main-resource write that moves generation, and the
// traces start from the outdated True every cluster has then (issue 27,
// item 3: never-upgradeable is judged on reachable states). In the
// OperatorCondition flow the OperatorCondition says the same. It checks
// that the apiserver takes the operator's status writes: a model operator
// whose writes the CRD refuses would explore nothing.
func exploreStart(cfg *Config, example map[string]interface{}) (cr, oc map[string]interface{}, change SpecChange, err error) {
	return newModel(cfg, Options{}).start(example)
}

func (m *model) start(example map[string]interface{}) (cr, oc map[string]interface{}, change SpecChange, err error) {
	cfg := m.cfg
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
	// The CR is created where the console creates it: in the status
	// source's namespace, else the example's (a CRD may pin it, as
	// HyperConverged's schema does), else the apiserver's default.
	create := cr
	if ns := exampleNamespace(example); src.Namespace == "" && ns != "" && cfg.CR != nil && cfg.CR.Namespaced {
		create = jsonobj.MergePatch(cr, map[string]interface{}{"metadata": map[string]interface{}{"namespace": ns}})
	}
	created, rf, err := simulate.Write(cfg, simulate.Object{}, Step{Actor: v1alpha1.ActorUser, Verb: v1alpha1.VerbCreate, Value: create})
	if err == nil && rf != nil {
		err = fmt.Errorf("the apiserver refuses to create the %s the traces start from (%s): %w", src.Kind, jsonobj.Compact(create), rf)
	}
	if err != nil {
		return nil, nil, change, err
	}
	m.observed = created.Generation
	var written simulate.Object
	for _, ok := range []bool{false, true} {
		status := statusValue(cfg, ok, m.observed, "1")
		_, rf, err := simulate.Write(cfg, created, Step{Actor: v1alpha1.ActorOperator, Verb: v1alpha1.VerbUpdateStatus, Value: status})
		if err == nil && rf != nil {
			err = fmt.Errorf("the CRD refuses the status an operator writes with metav1.Condition (%s): %w", jsonobj.Compact(status), rf)
		}
		if err != nil {
			return nil, nil, change, err
		}
	}
	status := statusValue(cfg, true, m.observed, "")
	written, rf, err = simulate.Write(cfg, created, Step{Actor: v1alpha1.ActorOperator, Verb: v1alpha1.VerbUpdateStatus, Value: status})
	if err == nil && rf != nil {
		err = fmt.Errorf("the CRD refuses the status an operator writes with metav1.Condition (%s): %w", jsonobj.Compact(status), rf)
	}
	if err != nil {
		return nil, nil, change, err
	}
	// The trace's initial object is what the writes left, without the
	// identity the apiserver assigned (uid, creationTimestamp, a default
	// namespace): a recreate (FaultRecreate) makes a new UID.
	cr = written.Full(src.APIVersion, src.Kind)
	md = map[string]interface{}{"name": src.Name, "generation": written.Generation}
	if src.Namespace != "" {
		md["namespace"] = src.Namespace
	}
	cr["metadata"] = md
	if cfg.Bridge {
		if src.Mode() == v1alpha1.HandshakeOperatorCondition {
			return nil, nil, change, fmt.Errorf("the bridge writes the OperatorCondition in the operator's stead: explore it with a None or RequestAck handshake, not OperatorCondition")
		}
		if m.opts.StartUp {
			oc, err = withOLMStatus(newOperatorCondition())
		} else {
			oc, err = m.bridgeStart(cr)
		}
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

// exampleNamespace is the namespace the example CR names, if any.
func exampleNamespace(example map[string]interface{}) string {
	md, _ := example["metadata"].(map[string]interface{})
	ns, _ := md["namespace"].(string)
	return ns
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
// meta.SetStatusCondition: every field metav1.Condition requires. status
// is True (idle), False (migrating) or Unknown (starting).
func condition(t, status string) map[string]interface{} {
	reason, msg := "OperatorIdle", "the operator is idle"
	switch status {
	case contract.StatusFalse:
		reason, msg = "MigrationInProgress", "a migration is in progress"
	case contract.StatusUnknown:
		reason, msg = "OperatorStarting", "the operator is starting"
	}
	return map[string]interface{}{"type": t, "status": status, "reason": reason, "message": msg, "lastTransitionTime": transitionTime}
}

// statusValue is the operator's status write: every gated condition with
// the same answer, and the echo where the handshake asks for one.
func statusValue(cfg *Config, ok bool, og int64, echo string) map[string]interface{} {
	return statusOf(cfg, statusWord(ok), og, echo)
}

// statusOf is statusValue with any status. The operator writes the
// generation it reconciled twice, as operators commonly do: in each
// condition's observedGeneration and in status.observedGeneration. The
// apiserver model prunes either where the CRD does not keep it; a CRD that
// keeps only status.observedGeneration (Strimzi's) then works under the
// strict policy, which falls back to it (and so with the bridge, which
// judges the CR under strict), and not under olm, which reads only the
// condition's.
func statusOf(cfg *Config, status string, og int64, echo string) map[string]interface{} {
	src := cfg.Source
	var conds []interface{}
	for _, t := range src.ConditionTypes() {
		c := condition(t, status)
		c["observedGeneration"] = og
		conds = append(conds, c)
	}
	st := map[string]interface{}{"observedGeneration": og, "conditions": conds}
	if p := src.AckPath(); echo != "" && p != nil {
		st = jsonobj.MergePatch(st, jsonobj.NestedPatch(p[1:], cfg.Tokens.AckValue(echo)))
	}
	return st
}

func ocCondition(ok bool) map[string]interface{} {
	return condition(contract.ConditionUpgradeable, statusWord(ok))
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
	if opts.Faults != 0 && !cfg.Bridge {
		return nil, fmt.Errorf("explore: the faults (%s) are the bridge's: explore them with the bridge", opts.Faults)
	}
	if opts.StartUp && !cfg.Bridge {
		return nil, fmt.Errorf("explore: the start-up window is the bridge's (its first entry): explore it with the bridge")
	}
	start := time.Now()
	withMemo := *cfg
	withMemo.Memo = nil
	if !opts.NoMemo {
		withMemo.Memo = simulate.NewMemo()
	}
	cfg = &withMemo
	m := newModel(cfg, opts)
	res := &Result{Policy: cfg.Policies[0]}
	var err error
	if res.Initial, res.OperatorCondition, res.Change, err = m.start(opts.Example); err != nil {
		return nil, fmt.Errorf("explore: %w", err)
	}
	m.change = res.Change
	init, err := simulate.Initial(cfg, res.Initial, res.OperatorCondition)
	if err != nil {
		return nil, fmt.Errorf("explore: %w", err)
	}
	root := node{state: init, act: actors{observed: m.observed, truthTrue: true}}
	s := search{model: m, root: root, links: []link{{parent: -1}}}
	visited := map[stateKey]struct{}{m.key(&root): {}}
	found := map[string]bool{}
	live := liveness{best: -1}
	frontier := level{{root}}
	lastReport := time.Now()
	var buf []move
	for depth := 0; depth < opts.Depth && !frontier.empty(); depth++ {
		var next level
		for c := range frontier {
			for i := range frontier[c] {
				if ctx.Err() != nil {
					res.Stopped = true
					res.finish(len(visited), depth, start)
					return res, nil
				}
				n := &frontier[c][i]
				buf = m.moves(n, buf[:0])
				ms := buf
				if len(ms) > math.MaxUint8 {
					return nil, fmt.Errorf("explore: %d moves from one state (a bug)", len(ms))
				}
				for j, mv := range ms {
					child, out, err := m.apply(n, mv)
					if err != nil {
						return nil, fmt.Errorf("explore: the model made an impossible step (a bug): %w", err)
					}
					child.checked = isCheck(mv.st)
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
						res.Counterexamples = append(res.Counterexamples, Counterexample{Violation: v, Steps: append(steps, mv.steps()...)})
					}
					k := m.key(&child)
					if _, seen := visited[k]; seen {
						continue
					}
					visited[k] = struct{}{}
					s.links = append(s.links, link{parent: n.idx, move: uint8(j)})
					child.idx = int32(len(s.links) - 1)
					next.add(child)
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
			frontier[c] = nil // expanded: only its links stay
		}
		// A finished level keeps only its links: memory is the frontier's.
		frontier = next
		res.Depth = depth + 1
	}
	res.Exhausted = frontier.empty()
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
	if l.upgraded || l.best >= 0 || !n.checked {
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
	if k := s.opts.MaxUserChanges; k < s.opts.Depth {
		// The user is bounded: the search is exhaustive only under that
		// bound.
		changes := fmt.Sprintf("%d spec changes", k)
		if k == 1 {
			changes = "1 spec change"
		}
		scope = fmt.Sprintf("in %d states, to depth %d with at most %s by the user", states, res.Depth, changes)
		if res.Exhausted {
			scope = fmt.Sprintf("in all %d states reachable with at most %s by the user", states, changes)
		}
	}
	if l.best < 0 {
		v := simulate.Unreachable(cfg.Policies[0], fmt.Sprintf("no upgrade gets through the %s gate %s, and no OLM check blocks a True report: the operator never reports Upgradeable=True where the gate reads it", cfg.Policies[0], scope))
		return Counterexample{Violation: v}, true, nil
	}
	// The violation keeps simulate.Finish's step (the operator's last
	// report), as a replay of the counterexample shows it.
	// The step named is the trace's last (the check): path's depth counts
	// the explorer's own moves too (the bridge's reads, OLM's making of
	// the replacing CSV), which traces leave out.
	steps, _, err := s.path(l.best)
	if err != nil {
		return Counterexample{}, false, err
	}
	v := l.why
	v.Kind = simulate.KindUnreachable
	// An error here, where the replay's end of run is a warning: no
	// reachable state lets an upgrade through (simulate.Kinds).
	v.Severity = result.Error
	v.Message = fmt.Sprintf("no upgrade gets through the %s gate %s; at best, step %d, OLM's check blocks although the operator's last report is Upgradeable=True: %s",
		cfg.Policies[0], scope, len(steps), l.reason)
	return Counterexample{Violation: v, Steps: steps}, true, nil
}

func (r *Result) finish(states, depth int, start time.Time) {
	r.States, r.Depth, r.Elapsed = states, depth, time.Since(start)
	sort.SliceStable(r.Counterexamples, func(i, j int) bool {
		return len(r.Counterexamples[i].Steps) < len(r.Counterexamples[j].Steps)
	})
}

// search is what a path is replayed from: the model, the root and the
// links.
type search struct {
	*model
	root  node
	links []link
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
		ms := s.moves(&n, nil)
		if int(rev[i]) >= len(ms) {
			return nil, 0, fmt.Errorf("explore: replaying a path found no move %d (a bug)", rev[i])
		}
		mv := ms[rev[i]]
		child, _, err := s.apply(&n, mv)
		if err != nil {
			return nil, 0, fmt.Errorf("explore: replaying a path: %w", err)
		}
		steps = append(steps, mv.steps()...)
		n = child
	}
	return steps, len(rev), nil
}

// moves lists the moves the actors may take next, in a fixed order,
// appended to out.
func (m *model) moves(n *node, out []move) []move {
	cfg := m.cfg
	s, a := &n.state, &n.act
	if s.Upgraded {
		return out // the operator is replaced: this version's story ends
	}
	add := func(st Step) { out = append(out, move{st: st}) }
	mode := cfg.Source.Mode()
	// The user.
	if int(a.changes) < m.opts.MaxUserChanges {
		toB := !jsonobj.Equal(m.change.other(s.CR), m.change.A)
		add(m.make(madeKey{kind: 'u', word: strconv.FormatBool(toB)}, func() made {
			return one(Step{Actor: v1alpha1.ActorUser, Verb: v1alpha1.VerbUpdate, Value: m.change.patch(m.change.other(s.CR))}, true)
		}).st)
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
		add(m.report(contract.StatusTrue, gen, echo))
		if gen > a.observed && !locked {
			add(m.report(contract.StatusFalse, gen, echo))
		}
	}
	if a.migrating {
		add(m.report(contract.StatusTrue, a.observed, echo))
	}
	if m.fault(a, FaultUnknown) && !a.migrating && !locked {
		add(m.report(contract.StatusUnknown, gen, echo))
	}
	if mode == v1alpha1.HandshakeOperatorCondition {
		if want := ocCondition(a.truthTrue); !ocSpecIs(s.OC, want) {
			add(Step{Actor: v1alpha1.ActorOperator, Verb: v1alpha1.VerbUpdate, Target: v1alpha1.TargetOperatorCondition,
				Value: map[string]interface{}{"spec": map[string]interface{}{"conditions": []interface{}{want}}}})
		}
	}
	if m.opts.Faults.Has(FaultOtherWriter) {
		if w := m.make(madeKey{kind: 'o', id: s.OC.ID(), word: s.Report.Status}, func() made { return one(operatorWrite(s)) }); w.ok {
			add(w.st)
		}
	}
	settled := true
	if cfg.Bridge {
		out, settled = m.bridgeMoves(n, out)
	}
	// An admin, GitOps.
	if m.fault(a, FaultDuplicate) {
		if w := m.make(madeKey{kind: 'd', id: s.OC.ID()}, func() made { return one(duplicateWrite(s)) }); w.ok {
			add(w.st)
		}
	}
	if m.fault(a, FaultRevert) {
		if w := m.make(madeKey{kind: 'r', id: s.CR.ID()}, func() made { return one(revertWrite(cfg, s)) }); w.ok {
			add(w.st)
		}
	}
	if m.fault(a, FaultRecreate) && s.CR.Exists {
		w := m.make(madeKey{kind: 'c', id: s.CR.ID()}, func() made {
			del, create := recreateWrites(cfg, s)
			return made{st: del, then: create, ok: true}
		})
		out = append(out, move{st: w.st, then: &w.then, kind: moveRecreate})
	}
	if cfg.ReadsOC() && !ocSynced(s.OC) {
		settled = false
		add(Step{Actor: v1alpha1.ActorOLM, Verb: v1alpha1.VerbUpdateStatus, Target: v1alpha1.TargetOperatorCondition})
	}
	// In the start-up window OLM checks, settled or not, while what it
	// reads (the OperatorCondition's status, isOperatorUpgradeable) has
	// no Upgradeable condition yet.
	olmMay := settled || !m.opts.SettledChecks || (m.opts.StartUp && contract.Find(s.OC.Conditions, contract.ConditionUpgradeable) == nil)
	// OLM.
	switch {
	case a.approved:
		if olmMay {
			add(Step{Actor: v1alpha1.ActorOLM, Verb: v1alpha1.VerbUpgrade})
		}
	case cfg.Bridge && mode == v1alpha1.HandshakeRequestAck && !a.replacing:
		out = append(out, move{st: Step{Actor: v1alpha1.ActorOLM, Verb: verbReplacement}, kind: moveReplacement})
	case cfg.Bridge:
		if olmMay {
			add(Step{Actor: v1alpha1.ActorOLM, Verb: v1alpha1.VerbCheck})
		}
	case mode == v1alpha1.HandshakeRequestAck && !s.Requested:
		add(Step{Actor: v1alpha1.ActorOLM, Verb: v1alpha1.VerbRequest})
	default:
		add(Step{Actor: v1alpha1.ActorOLM, Verb: v1alpha1.VerbCheck})
	}
	return out
}

// report is the operator's status write of status for generation og,
// with the echo, made once.
func (m *model) report(status string, og int64, echo string) Step {
	return m.make(madeKey{kind: 's', word: status, echo: echo, gen: og}, func() made {
		return one(Step{Actor: v1alpha1.ActorOperator, Verb: v1alpha1.VerbUpdateStatus, Value: statusOf(m.cfg, status, og, echo)}, true)
	}).st
}

func isCheck(st Step) bool { return st.Actor == v1alpha1.ActorOLM && st.Verb == v1alpha1.VerbCheck }

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
	conds := ocConditions(oc)
	return len(conds) == 1 && jsonobj.Equal(conds[0], want)
}

// ocSynced: OLM's status copy says what its next copy of spec.conditions
// would (syncOperatorConditionStatus: each type as its last entry says,
// observed at the OperatorCondition's generation), so there is nothing
// for it to do.
func ocSynced(oc simulate.Object) bool {
	conds := ocConditions(oc)
	for i, c := range conds {
		m, _ := c.(map[string]interface{})
		t, _ := m["type"].(string)
		if later := slices.IndexFunc(conds[i+1:], func(c interface{}) bool {
			e, _ := c.(map[string]interface{})
			return e["type"] == t
		}); later >= 0 {
			continue // a later entry of the type wins
		}
		got := contract.Find(oc.Conditions, t)
		if got == nil || m["status"] != got.Status || got.ObservedGeneration == nil || *got.ObservedGeneration != oc.Generation {
			return false
		}
	}
	return true
}

// apply runs a move through the core and updates what the actors remember.
func (m *model) apply(n *node, mv move) (node, simulate.Outcome, error) {
	cfg := m.cfg
	child := node{act: n.act, state: n.state}
	a := &child.act
	a.owned = false
	switch mv.kind {
	case moveRead:
		m.read(&child.state, a, int(mv.replica))
		return child, simulate.Outcome{}, nil
	case moveReplacement:
		a.replacing = true
		return child, simulate.Outcome{}, nil
	case moveRestart:
		*a.edit(0) = replica{}
		a.used |= FaultRestart
		return child, simulate.Outcome{}, nil
	case moveStop:
		*a.edit(0) = replica{down: true}
		a.used |= FaultStop
		return child, simulate.Outcome{}, nil
	}
	s, out, err := simulate.Next(cfg, n.state, mv.st)
	if err != nil {
		return child, out, err
	}
	if mv.then != nil {
		var more simulate.Outcome
		if s, more, err = simulate.Next(cfg, s, *mv.then); err != nil {
			return child, out, err
		}
		out.Violations = append(out.Violations, more.Violations...)
		out.Step = more.Step
	}
	child.state = s
	if n.state.Requested && !s.Requested && !s.Upgraded {
		a.answered = 0 // the request left the CR: the operator's answer with it
	}
	if cfg.Bridge {
		m.conflicts(n, &child, mv)
	}
	st := mv.st
	switch {
	case mv.kind == moveBridgeRequest:
		m.requestWritten(&s, a, int(mv.replica))
	case mv.kind == moveBridgeWrite:
		a.edit(int(mv.replica)).write = nil
	case mv.kind == moveStopWrite:
		*a.edit(0) = replica{down: true}
		a.used |= FaultStop
	case mv.kind == moveRecreate:
		// A new object: the operator reconciles it from the start.
		a.used |= FaultRecreate
		a.observed, a.migrating, a.answered, a.truthTrue = 0, false, 0, false
	case st.Actor == v1alpha1.ActorUser:
		a.changes++
	case st.Actor == v1alpha1.ActorOperator && st.Verb == v1alpha1.VerbUpdateStatus:
		status := reportStatus(st.Value)
		ok := status == contract.StatusTrue
		og := reportOG(st.Value)
		if a.migrating { // finishing
			a.migrating = false
		} else {
			a.observed = og
			a.migrating = !ok
		}
		a.truthTrue = ok
		if status == contract.StatusUnknown {
			a.used |= FaultUnknown
		}
		if n.state.Requested {
			a.answered = n.state.Token
		}
	case st.Actor == v1alpha1.ActorAdmin && st.Target == v1alpha1.TargetOperatorCondition:
		a.used |= FaultDuplicate
	case st.Actor == v1alpha1.ActorAdmin:
		a.used |= FaultRevert
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

// reportStatus is the status of the operator's report: its first gated
// condition's.
func reportStatus(status map[string]interface{}) string {
	conds, _ := status["conditions"].([]interface{})
	if len(conds) == 0 {
		return ""
	}
	m, _ := conds[0].(map[string]interface{})
	s, _ := m["status"].(string)
	return s
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

// stateKey is a state's key in the visited set: the first 128 bits of
// the SHA-256 of its encoding. A set of fixed-size keys without pointers
// is cheap to hash and costs the garbage collector nothing; two states
// alike in 128 bits of SHA-256 are not met in any search this size.
type stateKey [16]byte

func (m *model) key(n *node) stateKey {
	m.buf = m.encode(m.buf[:0], n)
	sum := sha256.Sum256(m.buf)
	return stateKey(sum[:16])
}

// encode writes what distinguishes a state, with every generation relative
// to its object's: a few dozen bytes, appended to b. What is read from
// the CR and the OperatorCondition is written once per object (objCode).
func (m *model) encode(b []byte, n *node) []byte {
	cfg := m.cfg
	s, a := &n.state, &n.act
	g := s.CR.Generation
	rel := func(v int64) { b = binary.AppendVarint(b, v-g) }
	flag := func(v bool) {
		if v {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	b = append(b, m.objCode(&s.CR, false)...)
	b = append(b, m.objCode(&s.OC, true)...)
	b = binary.AppendVarint(b, s.Token)
	flag(s.Requested)
	flag(s.Acked)
	flag(s.Upgraded)
	if s.Requested {
		rel(s.ReqGen)
	}
	flag(s.Report.Made())
	if s.Report.Made() {
		b = append(b, firstByte(s.Report.Status))
		rel(s.Report.ObservedGeneration)
	}
	for i := range cfg.Policies {
		b = append(b, firstByte(string(s.Checked[i].Verdict)))
	}
	rel(a.observed)
	flag(a.migrating)
	b = binary.AppendVarint(b, a.answered)
	flag(a.truthTrue)
	flag(a.approved)
	b = append(b, byte(a.changes))
	if cfg.Bridge {
		flag(a.replacing)
		b = binary.AppendUvarint(b, uint64(a.used))
		b = m.encodeProcesses(b, s, a)
	}
	return b
}

// objCode is the CR's or the OperatorCondition's part of the encoding,
// made once per object.
func (m *model) objCode(o *simulate.Object, oc bool) string {
	if m.opts.NoMemo {
		// Without the memo no two states share an object: nothing to
		// remember, and remembering would keep every object alive.
		return string(m.code(nil, o, oc))
	}
	k := codeKey{o.ID(), oc}
	if c, ok := m.codes[k]; ok {
		return c
	}
	c := string(m.code(nil, o, oc))
	if len(m.codes) > maxCached {
		clear(m.codes)
	}
	m.codes[k] = c
	return c
}

func (m *model) code(b []byte, o *simulate.Object, oc bool) []byte {
	if oc {
		return m.ocCode(b, o)
	}
	return m.crCode(b, o)
}

// codeKey is an object's in the codes; oc tells the OperatorCondition's
// from the CR's.
type codeKey struct {
	id simulate.ObjectID
	oc bool
}

// crCode is what the model reads of the CR, generations relative to its
// own: the user's field, the conditions, the echo, and under the bridge
// the token and the bridge's record of the request.
func (m *model) crCode(b []byte, o *simulate.Object) []byte {
	cfg, g := m.cfg, o.Generation
	b = append(b, boolByte(o.Exists))
	cur, _ := nested(o.Body, m.change.Path)
	b = append(b, boolByte(jsonobj.Equal(cur, m.change.B)))
	b = append(b, tokenByte(o, cfg))
	for _, c := range o.Conditions {
		b = append(b, c.Status[0])
		if c.ObservedGeneration != nil {
			b = binary.AppendVarint(b, *c.ObservedGeneration-g)
		}
	}
	b = append(b, '|')
	if o.StatusOG != nil {
		// What strict (and the bridge) read where a condition has none.
		b = binary.AppendVarint(b, *o.StatusOG-g)
	}
	b = append(b, '|')
	b = append(b, contract.EchoOf(o.Status, cfg.Source)...)
	b = append(b, '|')
	if cfg.Bridge {
		if token, ok := cfg.TokenOn(*o); ok {
			b = append(b, token...)
		}
		b = append(b, '|')
		uid, _ := o.Meta["uid"].(string)
		b = appendRecord(b, m.record(recordOn(*o)), g, uid)
	}
	return b
}

// ocCode is what the model reads of the OperatorCondition, generations
// relative to its own: the first entry of spec.conditions (every entry,
// with its reason, under the bridge, which writes again when its reason
// changes), OLM's copy in status, and under the bridge who keeps the
// entry.
func (m *model) ocCode(b []byte, o *simulate.Object) []byte {
	for i, c := range ocConditions(*o) {
		if i > 0 && !m.cfg.Bridge {
			break
		}
		e, _ := c.(map[string]interface{})
		status, _ := e["status"].(string)
		b = append(b, firstByte(status))
		if m.cfg.Bridge {
			b = appendWord(b, e["reason"])
		}
	}
	for _, c := range o.Conditions {
		b = append(b, c.Status[0])
		if c.ObservedGeneration != nil {
			b = binary.AppendVarint(b, *c.ObservedGeneration-o.Generation)
		}
	}
	b = append(b, '|')
	if m.cfg.Bridge && o.Exists {
		w := m.otherWriter(o)
		b = append(b, w.other...)
		if w.own {
			b = append(b, '=')
		}
		b = append(b, '|')
	}
	return b
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// encodeProcesses adds the bridge's processes: their pending writes and
// memory, generations relative to the CR's.
func (m *model) encodeProcesses(b []byte, s *State, a *actors) []byte {
	g := s.CR.Generation
	uid, _ := s.CR.Meta["uid"].(string)
	for i := 0; i < m.replicas(); i++ {
		r := a.replica(i)
		switch {
		case r.down:
			b = append(b, 'D')
		case r.request != nil:
			b = append(b, 'R')
			if r.request.Withdraw {
				b = append(b, 'W')
			}
			b = appendRecord(b, &r.request.Record, g, uid)
		}
		if r.write != nil {
			b = append(b, r.write.code...)
		}
		if w := r.remembered(); m.bridge.Remembers && w.Standing {
			b = binary.AppendVarint(b, w.Token)
			b = binary.AppendVarint(b, w.Generation-g)
		}
		b = append(b, '|')
	}
	return b
}

// record reads the bridge's record annotation, once per text.
func (m *model) record(text string) *bridge.RequestRecord {
	if text == "" {
		return nil
	}
	if r, ok := m.records[text]; ok {
		return r
	}
	r := bridge.RecordOf(&unstructured.Unstructured{Object: map[string]interface{}{"metadata": map[string]interface{}{
		"annotations": map[string]interface{}{bridge.AnnotationRequest: text}}}})
	if len(m.records) > maxCached {
		clear(m.records)
	}
	m.records[text] = r
	return r
}

// firstByte is s's first byte, or a space.
func firstByte(s string) byte {
	if s == "" {
		return ' '
	}
	return s[0]
}

// appendWord appends a string value and a terminator.
func appendWord(b []byte, v interface{}) []byte {
	s, _ := v.(string)
	return append(append(b, s...), 0)
}

// appendRecord encodes a request record relative to the CR: its token,
// whether it names the replacing CSV, its generation and whether its UID
// is the CR's.
func appendRecord(b []byte, r *bridge.RequestRecord, g int64, uid string) []byte {
	if r == nil {
		return append(b, '-')
	}
	b = binary.AppendVarint(b, r.Token)
	b = append(b, r.CSV...)
	b = append(b, 0)
	b = binary.AppendVarint(b, r.Generation-g)
	if string(r.UID) == uid {
		b = append(b, '=')
	}
	return b
}

func tokenByte(o *simulate.Object, cfg *Config) byte {
	if r := cfg.Source.Request(); r != nil && r.SpecPath != "" {
		if text, ok := cfg.TokenOn(*o); ok {
			if n, err := strconv.Atoi(text); err == nil {
				return byte(n)
			}
		}
	}
	return 0
}
