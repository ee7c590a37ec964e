// Package record turns what happens on a live cluster into a StatusTrace
// that simulate replays: the status-source CR, the OperatorCondition OLM
// reads and the ClusterServiceVersions of the operator's namespace are
// watched, and each event becomes a step, written and flushed as it
// arrives. Recorder is the pure part (events in, steps out); Run lists
// and watches a cluster with client-go and feeds it.
//
// OLM's own steps are read off the replacement CSV's status, where OLM's
// gate sits (operator-lifecycle-manager v0.46.0
// pkg/controller/operators/olm/operator.go, transitionCSVState): each
// status write that a sync of the CSV in Pending made is a check, with
// OLM's decision as its expect (Block for reason
// OperatorConditionNotUpgradeable, Allow for anything else, InstallReady
// included: the commit); its move to Installing, which installer.Install
// makes after writing the new deployments, is the upgrade. The running
// CSV entering Replacing is not: OLM sets Replacing as soon as a
// replacement exists (checkReplacementsAndUpdateStatus), before the gate
// has allowed anything.
package record

import (
	"fmt"
	"io"
	"reflect"
	"sort"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/jsonobj"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/trace"
)

// Options say what is recorded and where it goes.
type Options struct {
	// Source is the status source (its namespace resolved for a
	// namespaced kind).
	Source *v1alpha1.StatusSource
	// StatusSubresource is the CRD version's, for the trace's header.
	StatusSubresource bool
	// Out receives the trace; each step is written in one Write.
	Out io.Writer
	// Now stamps steps whose write carries no time; nil means time.Now.
	Now func() time.Time
	// Server names the cluster in the trace's header comment.
	Server string
}

// Recorder turns events into steps.
type Recorder struct {
	opts Options
	cr   *trace.Observer
	crRV string
	// csvs is the last state seen of each CSV of the namespace (copied
	// ones left out).
	csvs map[string]csvState
	// running is the CSV that runs the operator now; runningGone is set
	// once it was deleted (its replacement is then not gated).
	running     string
	runningGone bool
	// upgraded holds the replacements that replaced the operator.
	upgraded map[string]bool
	// replacing notes the CSVs seen entering Replacing.
	replacing map[string]bool
	// oc is the running CSV's OperatorCondition as last seen (nil: as the
	// model's fresh one, empty); ocGone is set while it is deleted.
	oc     map[string]interface{}
	ocRV   string
	ocGone bool
	// ocSeen is the last state of each OperatorCondition of the namespace.
	ocSeen map[string]*unstructured.Unstructured
	// operatorManagers are the field managers seen writing /status: the
	// operator's. A spec write by one of them is the operator's too.
	operatorManagers map[string]bool
	// listRV is the revision the starting lists were taken at, and
	// listsApart says the CSVs or OperatorConditions could not be listed
	// at it (set by run before Start).
	listRV     string
	listsApart bool
	// Steps counts the steps written.
	Steps int
	err   error
}

// New starts a recording.
func New(opts Options) *Recorder {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Recorder{opts: opts, cr: trace.NewObserver(opts.Source, opts.StatusSubresource), csvs: map[string]csvState{},
		upgraded: map[string]bool{}, replacing: map[string]bool{}, ocSeen: map[string]*unstructured.Unstructured{}, operatorManagers: map[string]bool{}}
}

// Start writes the trace's header from what the first lists showed: the
// CR (nil: it does not exist yet), and the namespace's CSVs and
// OperatorConditions.
func (r *Recorder) Start(cr *unstructured.Unstructured, csvs, ocs []unstructured.Unstructured) error {
	if cr != nil {
		r.noteManagers(cr)
		if _, err := r.cr.Observe(trace.Observation{Object: cr.Object}); err != nil {
			return err
		}
		r.crRV = cr.GetResourceVersion()
	} else {
		r.cr.Start()
	}
	var notes []string
	for i := range csvs {
		if !copied(&csvs[i]) {
			st := stateOf(&csvs[i])
			st.owns = ownsSource(r.opts.Source, &csvs[i])
			r.csvs[csvs[i].GetName()] = st
		}
	}
	r.running = r.runningCSV()
	for name, c := range r.csvs {
		if r.running != "" && c.replaces == r.running && c.phase == "InstallReady" {
			notes = append(notes, fmt.Sprintf("%s was past OLM's gate (InstallReady) when the recording began; its move to Installing is the upgrade", name))
		}
	}
	var oc map[string]interface{}
	for i := range ocs {
		r.ocSeen[ocs[i].GetName()] = &ocs[i]
		if ocs[i].GetName() == r.running && r.running != "" {
			oc = stripped(ocs[i].Object)
			r.oc, r.ocRV = ocs[i].Object, ocs[i].GetResourceVersion()
		}
	}
	var init map[string]interface{}
	if i := r.cr.Initial(); i != nil {
		init = stripped(i)
	}
	comment := fmt.Sprintf("Recorded by statuscheck record from %s, starting %s.\n", r.opts.Server, r.opts.Now().UTC().Format(time.RFC3339)) +
		"Each step carries the generation, resourceVersion and time the cluster gave it; OLM's\n" +
		"check and upgrade are inferred from the ClusterServiceVersions (see statuscheck's README)."
	switch {
	case r.listRV != "" && r.listsApart:
		comment += "\nThe CR was listed at resourceVersion " + r.listRV + "; the CSVs and OperatorConditions could not be listed there and were listed later."
	case r.listRV != "":
		comment += "\nThe CR, CSVs and OperatorConditions: lists at resourceVersion " + r.listRV + "."
	}
	for _, n := range notes {
		comment += "\n" + n
	}
	return r.write(trace.Header{
		Name:    "recorded",
		Comment: comment,
		Source:  r.opts.Source, StatusSubresource: r.opts.StatusSubresource, Recorded: true,
		Initial: init, OperatorCondition: oc,
	}.YAML())
}

func (r *Recorder) write(s string) error {
	if r.err != nil {
		return r.err
	}
	if _, err := io.WriteString(r.opts.Out, s); err != nil {
		r.err = fmt.Errorf("writing the trace: %w", err)
	}
	if f, ok := r.opts.Out.(interface{ Flush() error }); ok && r.err == nil {
		if err := f.Flush(); err != nil {
			r.err = fmt.Errorf("writing the trace: %w", err)
		}
	}
	return r.err
}

func (r *Recorder) emit(steps ...trace.Step) error {
	for _, st := range steps {
		if err := r.write(trace.StepLine(st)); err != nil {
			return err
		}
		r.Steps++
	}
	return nil
}

// take gives an event to the handler of its kind ("cr", "csv" or "oc").
func (r *Recorder) take(kind string, t watch.EventType, obj *unstructured.Unstructured) error {
	switch kind {
	case "cr":
		return r.CR(t, obj)
	case "csv":
		return r.CSV(t, obj)
	case "oc":
		return r.OC(t, obj)
	}
	return fmt.Errorf("an event of unknown kind %q", kind)
}

// CR takes an event of the status source.
func (r *Recorder) CR(t watch.EventType, obj *unstructured.Unstructured) error {
	if obj != nil && t != watch.Deleted && obj.GetResourceVersion() == r.crRV {
		return nil // seen already (a relist after an expired watch)
	}
	ob := trace.Observation{Deleted: t == watch.Deleted}
	if obj != nil {
		ob.Object = obj.Object // a deletion's last state
	}
	if t != watch.Deleted {
		// A watch event is a change: what changed (spec, metadata,
		// status) says which write it was; managedFields only say who.
		ob.Created = t == watch.Added && r.cr.Initial() == nil && r.crRV == ""
		r.noteManagers(obj)
		r.crRV = obj.GetResourceVersion()
	} else {
		r.crRV = ""
	}
	steps, err := r.cr.Observe(ob)
	if err != nil {
		return err
	}
	for i := range steps {
		if obj == nil {
			continue
		}
		steps[i].ResourceVersion = obj.GetResourceVersion()
		steps[i].Time = r.timeOf(obj)
		if t == watch.Deleted {
			// When and by whom, the deleted object does not say (its
			// last stored state, managedFields and all): the time is
			// when the recorder saw it go.
			steps[i].Time = r.opts.Now().UTC().Format(time.RFC3339)
			continue
		}
		status := steps[i].Verb == v1alpha1.VerbUpdateStatus
		steps[i].Who = manager(obj, status)
		if steps[i].Actor == v1alpha1.ActorUser && steps[i].Verb == v1alpha1.VerbUpdate && r.operatorManagers[steps[i].Who] {
			steps[i].Actor = v1alpha1.ActorOperator // the operator's own spec write
		}
	}
	return r.emit(steps...)
}

// noteManagers remembers the field managers that wrote /status: the
// operator's.
func (r *Recorder) noteManagers(obj *unstructured.Unstructured) {
	for _, mf := range obj.GetManagedFields() {
		if mf.Subresource == "status" {
			r.operatorManagers[mf.Manager] = true
		}
	}
}

// manager is the field manager that wrote obj last through /status
// (status) or the main resource: the latest entry of that kind. Entries
// carry times to the second; of equal times the later entry wins.
func manager(obj *unstructured.Unstructured, status bool) string {
	var latest time.Time
	who := ""
	for _, mf := range obj.GetManagedFields() {
		if (mf.Subresource == "status") != status || mf.Time == nil {
			continue
		}
		if !mf.Time.Time.Before(latest) {
			latest, who = mf.Time.Time, mf.Manager
		}
	}
	return who
}

func (r *Recorder) timeOf(obj *unstructured.Unstructured) string {
	var latest time.Time
	for _, mf := range obj.GetManagedFields() {
		if mf.Time != nil && mf.Time.Time.After(latest) {
			latest = mf.Time.Time
		}
	}
	if latest.IsZero() {
		latest = r.opts.Now()
	}
	return latest.UTC().Format(time.RFC3339)
}

// csvState is what the recorder reads of a CSV.
type csvState struct {
	phase, reason, message string
	// requirements is status.requirementStatus, as JSON: a Pending sync
	// that allows may change only that.
	requirements string
	replaces     string
	owns         bool
}

func stateOf(csv *unstructured.Unstructured) csvState {
	reason, _, _ := unstructured.NestedString(csv.Object, "status", "reason")
	msg, _, _ := unstructured.NestedString(csv.Object, "status", "message")
	req, _, _ := unstructured.NestedFieldNoCopy(csv.Object, "status", "requirementStatus")
	return csvState{phase: phase(csv), reason: reason, message: msg, requirements: jsonobj.Compact(req), replaces: replaces(csv)}
}

// same reports whether two states are the same status write.
func (c csvState) same(d csvState) bool {
	return c.phase == d.phase && c.reason == d.reason && c.message == d.message && c.requirements == d.requirements
}

// OLM's phases and the reason of its Block (operator-framework/api
// v1alpha1: CSVPhase*, CSVReasonOperatorConditionNotUpgradeable).
const (
	phasePending      = "Pending"
	phaseInstallReady = "InstallReady"
	phaseInstalling   = "Installing"
	phaseSucceeded    = "Succeeded"
	phaseFailed       = "Failed"
	phaseReplacing    = "Replacing"
	reasonBlocked     = "OperatorConditionNotUpgradeable"
)

// copied: a CSV OLM copied into a target namespace of an OperatorGroup
// (label olm.copiedFrom); OLM's replace finder skips those
// (pkg/lib/csv/replace_finder.go, IsBeingReplaced), and so does the
// recorder.
func copied(csv *unstructured.Unstructured) bool {
	_, ok := csv.GetLabels()[operatorsv1alpha1.CopiedLabelKey]
	return ok
}

// CSV takes an event of a ClusterServiceVersion of the namespace.
func (r *Recorder) CSV(t watch.EventType, obj *unstructured.Unstructured) error {
	if copied(obj) {
		return nil
	}
	name := obj.GetName()
	prev, seen := r.csvs[name]
	if t == watch.Deleted {
		delete(r.csvs, name)
		if name == r.running && !r.runningGone {
			// OLM's replace finder GETs the CSV being replaced; with it
			// gone, isReplacing returns nil and transitionCSVState skips
			// the gate (pkg/lib/csv/replace_finder.go, IsReplacing).
			r.runningGone = true
			return r.write(fmt.Sprintf("# %s was deleted (resourceVersion %s): OLM's gate is skipped for a CSV that replaces it, since isReplacing finds nothing to read\n",
				name, obj.GetResourceVersion()))
		}
		return nil
	}
	cur := stateOf(obj)
	cur.owns = ownsSource(r.opts.Source, obj)
	r.csvs[name] = cur
	if r.running == "" {
		// The first install, whatever its spec.replaces names (the
		// resolver keeps a bundle's own replaces on a first install, so
		// a freshly installed CSV usually names one that never ran here).
		if cur.owns && cur.phase == phaseSucceeded {
			r.running = name
		}
		return nil
	}
	if name == r.running {
		if cur.phase == phaseReplacing && !r.replacing[name] {
			// Said in the trace, for whoever reads it, but not a step: OLM
			// sets Replacing as soon as a CSV replacing this one exists
			// (operator.go, checkReplacementsAndUpdateStatus), before its
			// gate has allowed anything.
			r.replacing[name] = true
			return r.write(fmt.Sprintf("# %s entered Replacing (resourceVersion %s, %s): OLM does this as soon as a replacement exists, before its gate allows anything; not an upgrade\n",
				name, obj.GetResourceVersion(), r.timeOf(obj)))
		}
		return nil
	}
	failedForward := cur.replaces != r.running && r.failsForward(cur)
	if cur.replaces != r.running && !failedForward || r.upgraded[name] || (seen && prev.same(cur)) {
		return nil
	}
	at := r.timeOf(obj)
	who := fmt.Sprintf("olm (%s %s/%s)", name, orNone(cur.phase), cur.reason)
	check := func(v v1alpha1.Verdict) error {
		if r.runningGone {
			return r.write(fmt.Sprintf("# %s moved to %s/%s without OLM's gate: the CSV it replaces is gone\n", name, cur.phase, cur.reason))
		}
		if failedForward {
			// The OperatorGroup's upgradeStrategy is
			// TechPreviewUnsafeFailForward: OLM moved the failed CSV to
			// Replacing ungated (transitionCSVState, case Failed), and the
			// gate of the CSV replacing it reads the failed CSV's
			// OperatorCondition (isReplacing finds it), which the running
			// operator does not write. The running operator's gate is
			// not asked.
			return r.write(fmt.Sprintf("# %s moved to %s/%s without the running operator's gate: it replaces %s, which failed (UnsafeFailForward), and OLM's gate reads %s's OperatorCondition\n",
				name, cur.phase, cur.reason, cur.replaces, cur.replaces))
		}
		return r.emit(trace.Step{Actor: v1alpha1.ActorOLM, Verb: v1alpha1.VerbCheck, Expect: v, Who: who, ResourceVersion: obj.GetResourceVersion(), Time: at})
	}
	switch cur.phase {
	case phasePending:
		// Only a sync of a CSV that was Pending evaluates the gate; one
		// that moves it into Pending (None, Failed, Installing or
		// Succeeded to Pending) does not, and the next sync will.
		if !seen || prev.phase != phasePending {
			return nil
		}
		if cur.reason == reasonBlocked {
			return check(v1alpha1.Block)
		}
		return check(v1alpha1.Allow) // past the gate, held by something else (requirements)
	case phaseInstallReady:
		// The gate allowed and OLM committed, in the same sync.
		if seen && prev.phase != phasePending {
			return nil
		}
		return check(v1alpha1.Allow)
	case phaseInstalling, phaseSucceeded:
		// installer.Install wrote the new deployments: the operator is
		// replaced (the old one runs until its CSV goes).
		r.upgraded[name] = true
		was := r.running
		r.running, r.runningGone = name, false
		r.oc, r.ocRV, r.ocGone = nil, "", false
		if err := r.emit(trace.Step{Actor: v1alpha1.ActorOLM, Verb: v1alpha1.VerbUpgrade, Who: fmt.Sprintf("olm (%s replaces %s, now %s)", name, was, cur.phase), ResourceVersion: obj.GetResourceVersion(), Time: at}); err != nil {
			return err
		}
		if seen := r.ocSeen[name]; seen != nil {
			// The new CSV's OperatorCondition, written before it ran.
			return r.ocChanged(seen)
		}
		return nil
	case phaseFailed:
		return r.write(fmt.Sprintf("# %s failed (%s, resourceVersion %s): nothing was replaced; OLM takes it back to Pending, and gates it again, unless the OperatorGroup's UnsafeFailForward lets a newer CSV replace it\n", name, cur.reason, obj.GetResourceVersion()))
	case phaseReplacing:
		if seen && prev.phase == phaseFailed && !r.replacing[name] {
			r.replacing[name] = true
			return r.write(fmt.Sprintf("# %s, failed, entered Replacing (resourceVersion %s): UnsafeFailForward, with no gate; the CSV replacing it is gated by its OperatorCondition\n", name, obj.GetResourceVersion()))
		}
	}
	return nil
}

// failsForward says whether a CSV replaces, through CSVs that failed (or
// were then moved to Replacing), one that replaces the running CSV: the
// chain an OperatorGroup with upgradeStrategy TechPreviewUnsafeFailForward
// lets OLM walk (resolver.WalkReplacementChain).
func (r *Recorder) failsForward(c csvState) bool {
	if !c.owns || r.running == "" {
		return false
	}
	for p, n := c.replaces, 0; p != "" && n <= len(r.csvs); n++ {
		f, ok := r.csvs[p]
		if !ok || r.upgraded[p] || f.phase != phaseFailed && f.phase != phaseReplacing {
			return false
		}
		if f.replaces == r.running {
			return true
		}
		p = f.replaces
	}
	return false
}

// OC takes an event of an OperatorCondition of the namespace: the running
// CSV's is what the gate reads.
func (r *Recorder) OC(t watch.EventType, obj *unstructured.Unstructured) error {
	name := obj.GetName()
	if t == watch.Deleted {
		delete(r.ocSeen, name)
		if name != r.running || r.running == "" {
			return nil
		}
		// Deleted (by an admin: OLM deletes one only with its CSV), and
		// not yet recreated by OLM's generator: the gate finds none and
		// allows (isOperatorUpgradeable, NotFound).
		r.oc, r.ocRV, r.ocGone = nil, "", true
		return r.emit(trace.Step{Actor: v1alpha1.ActorAdmin, Verb: v1alpha1.VerbDelete, Target: v1alpha1.TargetOperatorCondition,
			ResourceVersion: obj.GetResourceVersion(), Time: r.opts.Now().UTC().Format(time.RFC3339)})
	}
	r.ocSeen[name] = obj
	if name != r.running || r.running == "" || obj.GetResourceVersion() == r.ocRV {
		return nil
	}
	if r.ocGone {
		// OLM's OperatorConditionGeneratorReconciler creates it again,
		// empty but for its deployments and service accounts.
		r.ocGone = false
		r.oc, r.ocRV = obj.Object, obj.GetResourceVersion()
		created := stripped(obj.Object)
		unstructured.RemoveNestedField(created, "status")
		return r.emit(trace.Step{Actor: v1alpha1.ActorOLM, Verb: v1alpha1.VerbCreate, Target: v1alpha1.TargetOperatorCondition, Value: created,
			Recorded: generationOf(obj), ResourceVersion: obj.GetResourceVersion(), Time: r.timeOf(obj), Who: manager(obj, false)})
	}
	return r.ocChanged(obj)
}

// ocChanged writes what changed in the running CSV's OperatorCondition
// since r.oc (the model's fresh one when none was seen yet): the
// operator's (spec.conditions) or an admin's (spec.overrides) spec write,
// and OLM's status sync, each with the generation the cluster gave it
// (OLM's own spec writes, deployments and serviceAccounts, which the gate
// does not read, move it too and are not steps).
func (r *Recorder) ocChanged(obj *unstructured.Unstructured) error {
	prev := r.oc
	if prev == nil {
		prev = freshOC()
	}
	r.oc, r.ocRV = obj.Object, obj.GetResourceVersion()
	var steps []trace.Step
	oldSpec, _ := prev["spec"].(map[string]interface{})
	newSpec, _ := obj.Object["spec"].(map[string]interface{})
	patch := jsonobj.CreateMergePatch(oldSpec, newSpec)
	for k := range patch {
		if k != "conditions" && k != "overrides" {
			delete(patch, k)
		}
	}
	if len(patch) > 0 {
		actor := v1alpha1.ActorOperator
		if onlyKey(patch, "overrides") {
			actor = v1alpha1.ActorAdmin
		}
		steps = append(steps, trace.Step{Actor: actor, Verb: v1alpha1.VerbUpdate, Target: v1alpha1.TargetOperatorCondition,
			Value: map[string]interface{}{"spec": patch}})
	}
	oldStatus, _ := prev["status"].(map[string]interface{})
	newStatus, _ := obj.Object["status"].(map[string]interface{})
	if !reflect.DeepEqual(oldStatus, newStatus) {
		steps = append(steps, trace.Step{Actor: v1alpha1.ActorOLM, Verb: v1alpha1.VerbUpdateStatus, Target: v1alpha1.TargetOperatorCondition, Value: newStatus})
	}
	for i := range steps {
		steps[i].ResourceVersion, steps[i].Time = obj.GetResourceVersion(), r.timeOf(obj)
		steps[i].Who = manager(obj, steps[i].Verb == v1alpha1.VerbUpdateStatus)
		steps[i].Recorded = generationOf(obj)
	}
	return r.emit(steps...)
}

func generationOf(obj *unstructured.Unstructured) *int64 {
	g := obj.GetGeneration()
	return &g
}

// freshOC is the OperatorCondition the model gives a new CSV (an empty
// spec; OLM's OperatorConditionGeneratorReconciler creates it so).
func freshOC() map[string]interface{} {
	return map[string]interface{}{"spec": map[string]interface{}{}}
}

func onlyKey(m map[string]interface{}, k string) bool {
	_, ok := m[k]
	return ok && len(m) == 1
}

// runningCSV finds, among the CSVs at the start, the one that runs the
// operator: it owns the status source's kind, has run (Succeeded, or
// Failed or Replacing since), and no CSV that replaces it has replaced the
// operator yet (Installing or on). Its spec.replaces does not matter.
func (r *Recorder) runningCSV() string {
	var names []string
	for n := range r.csvs {
		names = append(names, n)
	}
	sort.Strings(names)
	replaced := map[string]bool{}
	for _, n := range names {
		switch c := r.csvs[n]; c.phase {
		case phaseInstalling, phaseSucceeded, phaseReplacing:
			if c.replaces != "" && c.owns {
				replaced[c.replaces] = true
			}
		}
	}
	for _, n := range names {
		c := r.csvs[n]
		switch c.phase {
		case phaseSucceeded, phaseFailed, phaseReplacing:
			if c.owns && !replaced[n] {
				return n
			}
		}
	}
	return ""
}

// ownsSource says whether a CSV of the cluster owns the status source's
// kind (bundle.Owns, on the CSV decoded into operator-framework/api's type).
func ownsSource(src *v1alpha1.StatusSource, csv *unstructured.Unstructured) bool {
	var typed operatorsv1alpha1.ClusterServiceVersion
	owned, _, _ := unstructured.NestedFieldNoCopy(csv.Object, "spec", "customresourcedefinitions")
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]interface{}{"spec": map[string]interface{}{"customresourcedefinitions": owned}}, &typed); err != nil {
		return false
	}
	return bundle.Owns(&typed, src.GroupVersion().Group, src.Kind)
}

func replaces(csv *unstructured.Unstructured) string {
	s, _, _ := unstructured.NestedString(csv.Object, "spec", "replaces")
	return s
}

func phase(csv *unstructured.Unstructured) string {
	s, _, _ := unstructured.NestedString(csv.Object, "status", "phase")
	return s
}

func orNone(s string) string {
	if s == "" {
		return "new"
	}
	return s
}

// stripped is an object without the bookkeeping a trace does not need.
func stripped(obj map[string]interface{}) map[string]interface{} {
	u := (&unstructured.Unstructured{Object: obj}).DeepCopy()
	u.SetManagedFields(nil)
	return u.Object
}
