package explore

import (
	"math/bits"
	"strconv"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/jsonobj"
	"github.com/statuscheck/statuscheck/pkg/bridge"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/simulate"
)

// With Config.Bridge the explorer adds statuscheck bridge as an actor and
// OLM reads the OperatorCondition, as OLM v0 does. The bridge runs its
// decision (Options.Bridge; statuscheck bridge's own, bridge.Decide, the
// runner's, unless told otherwise) in two moves, as the runner's sync
// does: it reads the CR and the OperatorCondition (a move of the
// explorer's own, which writes nothing and is left out of the traces),
// and later writes what it decided then: under RequestAck first the
// request to the CR, exactly the decision's merge patch (the token at the
// handshake's place and the bridge's record of the request, or their
// withdrawal), as a bridge request step that a trace holds and a replay
// applies through the core; then the OperatorCondition's Upgradeable
// entry, under the bridge's field manager. OLM's copy of spec.conditions
// into status is a move of its own (syncOperatorConditionStatus), and
// OLM's check reads that copy. Under RequestAck, OLM's move before any
// check is making the CSV that replaces the running one (the explorer's
// own move too: the bridge sees it in the namespace's CSVs and writes the
// request; OLM never does).
//
// Both of the bridge's writes carry a precondition on a real cluster:
// the request the CR's resourceVersion (in the patch), the
// OperatorCondition's update the OperatorCondition's. A write from an
// older read then conflicts, and the runner decides again on what it
// reads (retry.RetryOnConflict). The model honours both, without
// resourceVersions (the CR it hands the decision has none, so the
// request's patch carries none): once the CR changes after a replica's
// read, its pending request is void, and the OperatorCondition write of
// the same sync with it; once the OperatorCondition changes (OLM's
// status copy included), its pending OperatorCondition write is void. The
// replica reads again when its decision on the new state writes
// something. A change of the CR alone leaves a pending OperatorCondition
// write standing: that write has no precondition on the CR, and the
// window it leaves is real (the lag every copy has). Letting the request
// through instead would find what no cluster does: a request decided at
// one generation and written at a later one, whose record names the
// earlier generation, so that the operator's report for the later one
// reads as its answer.
//
// The faults (Options.Faults) add what broke the bridge in production;
// see Faults.

// Bridge is a bridge the explorer model-checks: its decision, and what
// its graceful stop writes. Any decision with bridge.Decide's values can
// be checked; statuscheck bridge's own is StatuscheckBridge.
type Bridge struct {
	// Decide decides on what one bridge process read. wrote is the last
	// request the process wrote and still remembers (a restart forgets
	// it), for a decision that keeps its request in its process;
	// bridge.Decide reads the request back from the CR and has no use
	// for it.
	Decide func(in bridge.Input, wrote contract.Request) bridge.Decision
	// Remembers says that Decide reads wrote: the explorer then keeps it
	// for each process, as part of the state.
	Remembers bool
	// Stopped is what a graceful stop writes to the OperatorCondition,
	// and false when nothing (bridge.Stopped); nil: a stop writes nothing.
	Stopped func(oc *operatorsv2.OperatorCondition, now time.Time) (bridge.Decision, bool)
}

// StatuscheckBridge is statuscheck bridge's own decision and stop:
// bridge.Decide and bridge.Stopped.
func StatuscheckBridge() *Bridge {
	return &Bridge{Decide: func(in bridge.Input, _ contract.Request) bridge.Decision { return bridge.Decide(in) }, Stopped: bridge.Stopped}
}

// Moves of the explorer's own: they write nothing, and traces leave them
// out.
const (
	verbBridgeReads v1alpha1.Verb = "(the bridge reads the CR and the OperatorCondition)"
	verbReplacement v1alpha1.Verb = "(OLM makes the CSV that replaces the running one)"
	verbRestart     v1alpha1.Verb = "(the bridge restarts and forgets what it held)"
	verbStop        v1alpha1.Verb = "(the bridge stops with nothing to withdraw)"
)

func internal(st Step) bool {
	switch st.Verb {
	case verbBridgeReads, verbReplacement, verbRestart, verbStop:
		return true
	}
	return false
}

// The names of the bridge's model: the CSVs, and the field managers of
// the OperatorCondition's other writers.
const (
	runningCSV = "operator"
	nextCSV    = "operator-next"
	// operatorManager is the operator's own client (FaultOtherWriter).
	operatorManager = "cool-operator"
	// adminManager is an admin's edit (FaultDuplicate).
	adminManager = "kubectl-edit"
)

// replacingCSVs are the namespace's CSVs once OLM has made the one that
// replaces the running one. Decide only reads them.
var replacingCSVs = func() []operatorsv1alpha1.ClusterServiceVersion {
	next := operatorsv1alpha1.ClusterServiceVersion{}
	next.Name, next.Spec.Replaces = nextCSV, runningCSV
	return []operatorsv1alpha1.ClusterServiceVersion{next}
}()

// replica is one bridge process: what it has decided and not written
// yet, and what it remembers.
type replica struct {
	down    bool
	request *bridge.Request   // the request to write first
	write   *pendingWrite     // then the OperatorCondition
	wrote   *contract.Request // what it remembers (Bridge.Remembers)
}

// pendingWrite is a process's write of the OperatorCondition
// (bridgeWrite), and its part of the encoding: its entries' statuses and
// reasons.
type pendingWrite struct {
	st   Step
	code string
}

func newPendingWrite(d bridge.Decision) *pendingWrite {
	w := &pendingWrite{st: bridgeWrite(conditionsValue(d.Conditions), d.Digest)}
	var b []byte
	for i := range d.Conditions {
		b = append(append(b, d.Conditions[i].Status...), 0)
		b = append(append(b, d.Conditions[i].Reason...), 0)
	}
	w.code = string(b)
	return w
}

// remembered is what process r remembers.
func (r *replica) remembered() contract.Request {
	if r.wrote == nil {
		return contract.Request{}
	}
	return *r.wrote
}

// processes are the bridge's processes. A state shares them with the
// state it came from until a move changes one (edit copies them).
type processes [2]replica

// noProcess is every process before it has done anything; read only.
var noProcess replica

// replica is process i, to read.
func (a *actors) replica(i int) *replica {
	if a.bridges == nil {
		return &noProcess
	}
	return &a.bridges[i]
}

// edit is process i, to change: the processes are copied first, once
// per move (apply clears owned).
func (a *actors) edit(i int) *replica {
	if !a.owned {
		var c processes
		if a.bridges != nil {
			c = *a.bridges
		}
		a.bridges, a.owned = &c, true
	}
	return &a.bridges[i]
}

// typedOC is the OperatorCondition as the bridge reads it, converted once
// per object (objects are immutable values; the memo hands out the same
// one for the same answer).
func (m *model) typedOC(o *simulate.Object) *operatorsv2.OperatorCondition {
	id := o.ID()
	if oc, ok := m.ocs[id]; ok {
		return oc
	}
	oc := &operatorsv2.OperatorCondition{}
	if runtime.DefaultUnstructuredConverter.FromUnstructured(o.Full(simulate.OperatorConditionAPIVersion, simulate.OperatorConditionKind), oc) != nil {
		oc = nil
	}
	if len(m.ocs) > maxConverted {
		clear(m.ocs)
	}
	m.ocs[id] = oc
	return oc
}

// decisionKey is what a decision is made on: the objects read (by
// identity), whether a CSV replaces the running one, and what the process
// remembers.
type decisionKey struct {
	cr, oc    simulate.ObjectID
	replacing bool
	wrote     contract.Request
}

// decided is a decision and, when it writes the OperatorCondition, the
// write it makes (bridgeWrite), made once.
type decided struct {
	bridge.Decision
	write *pendingWrite
}

// decide is replica i's decision on a state (i < 0: a process that
// remembers nothing), made once per what it is made on.
func (m *model) decide(s *State, a *actors, i int) *decided {
	k := decisionKey{cr: s.CR.ID(), oc: s.OC.ID(), replacing: a.replacing}
	if i >= 0 {
		k.wrote = a.replica(i).remembered()
	}
	if d, ok := m.decisions[k]; ok {
		return d
	}
	d := &decided{Decision: m.decideAfresh(s, a, i)}
	if d.WriteOC {
		d.write = newPendingWrite(d.Decision)
	}
	if len(m.decisions) > maxCached {
		clear(m.decisions)
	}
	m.decisions[k] = d
	return d
}

func (m *model) decideAfresh(s *State, a *actors, i int) bridge.Decision {
	in := bridge.Input{Source: m.cfg.Source, Tokens: m.cfg.Tokens, Running: runningCSV, Now: simulate.Epoch}
	if s.CR.Exists {
		in.CR = &unstructured.Unstructured{Object: s.CR.Full(m.cfg.Source.APIVersion, m.cfg.Source.Kind)}
	}
	if s.OC.Exists {
		in.OC = m.typedOC(&s.OC)
	}
	if a.replacing {
		in.CSVs = replacingCSVs
	}
	var wrote contract.Request
	if i >= 0 {
		wrote = a.replica(i).remembered()
	}
	return m.bridge.Decide(in, wrote)
}

func writes(d bridge.Decision) bool { return d.Request != nil || d.WriteOC }

// replicas is how many bridge processes run in the model.
func (m *model) replicas() int {
	if m.opts.Faults.Has(FaultReplica) {
		return 2
	}
	return 1
}

// bridgeMoves are the bridge's moves: each replica's pending write, else
// its read when its decision on the state would write something; and the
// first replica's restart and stop. settled says no replica has anything
// left to write.
func (m *model) bridgeMoves(n *node, out []move) ([]move, bool) {
	s, a := &n.state, &n.act
	settled := true
	for i := 0; i < m.replicas(); i++ {
		r := a.replica(i)
		switch {
		case r.down:
		case r.request != nil:
			settled = false
			out = append(out, move{st: Step{Actor: v1alpha1.ActorBridge, Verb: v1alpha1.VerbRequest, Value: map[string]interface{}{"patch": r.request.Patch}},
				kind: moveBridgeRequest, replica: int8(i)})
		case r.write != nil:
			settled = false
			out = append(out, move{st: r.write.st, kind: moveBridgeWrite, replica: int8(i)})
		case writes(m.decide(s, a, i).Decision):
			settled = false
			out = append(out, move{st: Step{Actor: v1alpha1.ActorBridge, Verb: verbBridgeReads}, kind: moveRead, replica: int8(i)})
		}
	}
	first := a.replica(0)
	if m.fault(a, FaultRestart) && !first.down && (first.request != nil || first.write != nil || first.wrote != nil) {
		out = append(out, move{st: Step{Actor: v1alpha1.ActorBridge, Verb: verbRestart}, kind: moveRestart})
	}
	if m.fault(a, FaultStop) && !first.down {
		out = append(out, m.make(madeKey{kind: 'x', id: s.OC.ID(), word: strconv.FormatBool(a.replacing)}, func() made {
			mv := m.stop(s, a)
			return made{st: mv.st, ok: mv.kind == moveStopWrite}
		}).stopMove())
	}
	return out, settled
}

// fault says a fault is on and has not happened yet in this trace.
func (m *model) fault(a *actors, f Faults) bool {
	return m.opts.Faults.Has(f) && !a.used.Has(f) && bits.OnesCount16(uint16(a.used&events)) < m.maxFaults()
}

// maxFaults is Options.MaxFaults or its default.
func (m *model) maxFaults() int {
	if m.opts.MaxFaults > 0 {
		return m.opts.MaxFaults
	}
	return DefaultMaxFaults
}

// stopMove is the stop made (ok: it writes).
func (w made) stopMove() move {
	if w.ok {
		return move{st: w.st, kind: moveStopWrite}
	}
	return move{st: w.st, kind: moveStop}
}

// bridgeWrite is the bridge's write of the OperatorCondition, as the
// runner makes it under its field manager: spec.conditions, and the
// entry's digest where the decision has one (bridge.AnnotationEntry).
func bridgeWrite(conds []interface{}, digest string) Step {
	v := map[string]interface{}{"spec": map[string]interface{}{"conditions": conds}}
	if digest != "" {
		v["metadata"] = map[string]interface{}{"annotations": map[string]interface{}{bridge.AnnotationEntry: digest}}
	}
	return Step{Actor: v1alpha1.ActorBridge, Verb: v1alpha1.VerbUpdate, Target: v1alpha1.TargetOperatorCondition, Who: bridge.FieldManager, Value: v}
}

// stop is the first replica's graceful stop, as its runner makes it
// (pkg/bridge/runner.go, stop): the OperatorCondition read afresh and
// Bridge.Stopped's withdrawal of a True written, except under RequestAck
// while a CSV replaces the running one; then the process is gone.
func (m *model) stop(s *State, a *actors) move {
	down := move{st: Step{Actor: v1alpha1.ActorBridge, Verb: verbStop}, kind: moveStop}
	if m.bridge.Stopped == nil || !s.OC.Exists || m.cfg.Source.Mode() == v1alpha1.HandshakeRequestAck && a.replacing {
		return down
	}
	oc := m.typedOC(&s.OC)
	if oc == nil {
		return down
	}
	d, changed := m.bridge.Stopped(oc, simulate.Epoch)
	if !changed {
		return down
	}
	return move{st: bridgeWrite(conditionsValue(d.Conditions), d.Digest), kind: moveStopWrite}
}

// read remembers what replica i decided, to write later; nothing when it
// yields to another writer.
func (m *model) read(s *State, a *actors, i int) {
	d := m.decide(s, a, i)
	r := a.edit(i)
	r.request, r.write = d.Request, d.write
}

// requestWritten is what replica i remembers once its request is on the
// CR (s after the write), as the runner before issue 25 kept it: the
// request, at the CR's generation after the write.
func (m *model) requestWritten(s *State, a *actors, i int) {
	r := a.edit(i)
	req := r.request
	r.request = nil
	if m.bridge.Remembers && req != nil {
		r.wrote = &contract.Request{Standing: !req.Withdraw, Token: req.Record.Token, Value: strconv.FormatInt(req.Record.Token, 10), Generation: s.CR.Generation}
	}
}

// conditionsValue is spec.conditions as the runner writes it.
func conditionsValue(cs []metav1.Condition) []interface{} {
	out := make([]interface{}, 0, len(cs))
	for i := range cs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&cs[i])
		if err == nil {
			out = append(out, m)
		}
	}
	return out
}

// bridgeStart is the OperatorCondition the bridge has written by the time
// the explored traces start: its decision on the starting CR, copied into
// status by OLM's own copy (simulate.SyncOperatorConditionStatus).
func (m *model) bridgeStart(cr map[string]interface{}) (map[string]interface{}, error) {
	oc := newOperatorCondition()
	s, err := simulate.Initial(m.cfg, cr, oc)
	if err != nil {
		return nil, err
	}
	d := m.decide(&s, &actors{}, -1)
	oc["spec"] = map[string]interface{}{"conditions": conditionsValue(d.Conditions)}
	if d.Digest != "" {
		oc["metadata"].(map[string]interface{})["annotations"] = map[string]interface{}{bridge.AnnotationEntry: d.Digest}
	}
	return withOLMStatus(oc)
}

// newOperatorCondition is the running CSV's OperatorCondition as OLM's
// generator makes it for every new CSV: no spec.conditions. With OLM's
// copy into status (withOLMStatus), it is where the traces start in the
// start-up window (Options.StartUp).
func newOperatorCondition() map[string]interface{} {
	return map[string]interface{}{
		"apiVersion": simulate.OperatorConditionAPIVersion, "kind": simulate.OperatorConditionKind,
		"metadata": map[string]interface{}{"name": runningCSV, "generation": int64(1)},
		"spec":     map[string]interface{}{},
	}
}

// withOLMStatus sets the OperatorCondition's status to OLM's copy of its
// spec (simulate.SyncOperatorConditionStatus).
func withOLMStatus(oc map[string]interface{}) (map[string]interface{}, error) {
	status, _, err := simulate.SyncOperatorConditionStatus(oc, simulate.Epoch)
	if err != nil {
		return nil, err
	}
	oc["status"] = status
	return oc, nil
}

// The faults' writes.

// ocConditions is the OperatorCondition's spec.conditions.
func ocConditions(oc simulate.Object) []interface{} {
	spec, _ := oc.Body["spec"].(map[string]interface{})
	conds, _ := spec["conditions"].([]interface{})
	return conds
}

// upgradeableEntries are the indexes of the Upgradeable entries of
// spec.conditions.
func upgradeableEntries(conds []interface{}) []int {
	var out []int
	for i, c := range conds {
		if m, _ := c.(map[string]interface{}); m["type"] == contract.ConditionUpgradeable {
			out = append(out, i)
		}
	}
	return out
}

// operatorWrite is the operator's own write of its OperatorCondition's
// Upgradeable entry with its last report (operator-lib's conditions.Set:
// meta.SetStatusCondition on spec.conditions, then an update), when the
// entry says otherwise (FaultOtherWriter).
func operatorWrite(s *State) (Step, bool) {
	status := s.Report.Status
	if !s.OC.Exists || status == "" {
		return Step{}, false
	}
	want := condition(contract.ConditionUpgradeable, status)
	conds := ocConditions(s.OC)
	at := upgradeableEntries(conds)
	if len(at) > 0 {
		e, _ := conds[at[0]].(map[string]interface{})
		if e["status"] == want["status"] && e["reason"] == want["reason"] {
			return Step{}, false
		}
	}
	next := append([]interface{}(nil), conds...)
	if len(at) > 0 {
		next[at[0]] = want
	} else {
		next = append(next, want)
	}
	return Step{Actor: v1alpha1.ActorOperator, Verb: v1alpha1.VerbUpdate, Target: v1alpha1.TargetOperatorCondition, Who: operatorManager,
		Value: map[string]interface{}{"spec": map[string]interface{}{"conditions": next}}}, true
}

// duplicateWrite is an admin's append of a copy of the one Upgradeable
// entry to spec.conditions (FaultDuplicate).
func duplicateWrite(s *State) (Step, bool) {
	conds := ocConditions(s.OC)
	at := upgradeableEntries(conds)
	if !s.OC.Exists || len(at) != 1 {
		return Step{}, false
	}
	next := append(append([]interface{}(nil), conds...), conds[at[0]])
	return Step{Actor: v1alpha1.ActorAdmin, Verb: v1alpha1.VerbUpdate, Target: v1alpha1.TargetOperatorCondition, Who: adminManager,
		Value: map[string]interface{}{"spec": map[string]interface{}{"conditions": next}}}, true
}

// recordOn is the bridge's record annotation on the CR ("" when none).
func recordOn(o simulate.Object) string {
	anns, _ := o.Meta["annotations"].(map[string]interface{})
	rec, _ := anns[bridge.AnnotationRequest].(string)
	return rec
}

// revertWrite is GitOps putting the CR back: the request's token and the
// bridge's record taken off (FaultRevert), when the CR holds either.
func revertWrite(cfg *Config, s *State) (Step, bool) {
	r := cfg.Source.Request()
	_, token := cfg.TokenOn(s.CR)
	if r == nil || !s.CR.Exists || !token && recordOn(s.CR) == "" {
		return Step{}, false
	}
	anns := map[string]interface{}{bridge.AnnotationRequest: nil}
	if r.Annotation != "" {
		anns[r.Annotation] = nil
	}
	patch := map[string]interface{}{}
	if r.SpecPath != "" {
		// The null kept: the path is under spec, apart from metadata.
		patch = jsonobj.NestedPatch(v1alpha1.FieldPath(r.SpecPath), nil)
	}
	patch["metadata"] = map[string]interface{}{"annotations": anns}
	return Step{Actor: v1alpha1.ActorAdmin, Verb: v1alpha1.VerbUpdate, Value: patch}, true
}

// recreateWrites are the CR's delete and its create from a copy made
// before (its spec and annotations; the apiserver gives it a new UID and
// generation 1, and the operator has not reported on it yet)
// (FaultRecreate).
func recreateWrites(cfg *Config, s *State) (del, create Step) {
	md := map[string]interface{}{}
	for _, k := range []string{"name", "namespace", "labels", "annotations"} {
		if v, ok := s.CR.Meta[k]; ok {
			md[k] = v
		}
	}
	obj := map[string]interface{}{"apiVersion": cfg.Source.APIVersion, "kind": cfg.Source.Kind, "metadata": md}
	for k, v := range s.CR.Body {
		obj[k] = v
	}
	return Step{Actor: v1alpha1.ActorAdmin, Verb: v1alpha1.VerbDelete, Value: map[string]interface{}{}},
		Step{Actor: v1alpha1.ActorAdmin, Verb: v1alpha1.VerbCreate, Value: obj}
}

// conflicts voids the pending writes of the replicas whose precondition
// the move broke (see above): a pending request once the CR changed
// (with the OperatorCondition write of its sync), a pending
// OperatorCondition write once the OperatorCondition changed. The mover's
// own write is the change, not a conflict.
func (m *model) conflicts(n, child *node, mv move) {
	pending := false
	for i := 0; i < m.replicas(); i++ {
		r := child.act.replica(i)
		pending = pending || r.request != nil || r.write != nil
	}
	if !pending {
		return
	}
	crChanged := !sameObject(&n.state.CR, &child.state.CR)
	ocChanged := !sameObject(&n.state.OC, &child.state.OC)
	for i := 0; i < m.replicas(); i++ {
		r := child.act.replica(i)
		mover := mv.kind == moveBridgeRequest && int(mv.replica) == i
		voidRequest := crChanged && r.request != nil && !mover
		voidWrite := voidRequest || ocChanged && r.write != nil && !mover
		if voidRequest || voidWrite {
			r = child.act.edit(i)
		}
		if voidRequest {
			r.request = nil
		}
		if voidWrite {
			r.write = nil
		}
	}
}

// sameObject says two objects hold one content: what a resourceVersion
// precondition tells apart, for writes that change something (a write
// that changes nothing gives no new resourceVersion).
func sameObject(a, b *simulate.Object) bool {
	if a.Exists != b.Exists {
		return false
	}
	if !a.Exists || a.ID() == b.ID() {
		return true
	}
	return a.Generation == b.Generation && jsonobj.Equal(a.Status, b.Status) && jsonobj.Equal(a.Body, b.Body) && jsonobj.Equal(a.Meta, b.Meta)
}

// writers is who keeps an OperatorCondition's Upgradeable entry:
// another writer (bridge.OtherWriter), and whether the entry is the one
// the bridge last wrote (its digest, bridge.AnnotationEntry).
type writers struct {
	other string
	own   bool
}

// otherWriter is writers for an OperatorCondition, once per object.
func (m *model) otherWriter(o *simulate.Object) writers {
	id := o.ID()
	if w, ok := m.writers[id]; ok {
		return w
	}
	var w writers
	if oc := m.typedOC(o); oc != nil {
		e := meta.FindStatusCondition(oc.Spec.Conditions, contract.ConditionUpgradeable)
		w = writers{other: bridge.OtherWriter(oc), own: e != nil && oc.Annotations[bridge.AnnotationEntry] == bridge.EntryDigest(*e)}
	}
	if len(m.writers) > maxCached {
		clear(m.writers)
	}
	m.writers[id] = w
	return w
}
