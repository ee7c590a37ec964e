// Package record turns what happens on a live cluster into a StatusTrace
// that simulate replays: the status-source CR, the OperatorCondition OLM
// reads and the ClusterServiceVersions of the operator's namespace are
// watched, and each event becomes a step, written and flushed as it
// arrives. Recorder is the pure part (events in, steps out); Run lists
// and watches a cluster with client-go and feeds it.
//
// OLM's own steps are inferred from the ClusterServiceVersions, following
// where OLM's gate sits (operator-lifecycle-manager
// pkg/controller/operators/olm/operator.go, transitionCSVState): a CSV
// whose spec.replaces names the running one is evaluated by the gate in
// every sync while it is Pending, so each change of it while Pending is a
// check; that CSV leaving Pending (InstallReady and on) is the upgrade.
// The running CSV entering Replacing is not: OLM sets Replacing as soon
// as a replacement exists (checkReplacementsAndUpdateStatus), before the
// gate has allowed anything.
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
	// running is the CSV that runs the operator now; pending holds the
	// last state seen of each CSV replacing it while it is Pending.
	running  string
	pending  map[string]string
	upgraded map[string]bool
	// replacing notes the CSVs seen entering Replacing.
	replacing map[string]bool
	// oc is the running CSV's OperatorCondition as last seen.
	oc   map[string]interface{}
	ocRV string
	// ocSeen is the last state of each OperatorCondition of the namespace.
	ocSeen map[string]*unstructured.Unstructured
	// operatorManagers are the field managers seen writing /status: the
	// operator's. A spec write by one of them is the operator's too.
	operatorManagers map[string]bool
	// Steps counts the steps written.
	Steps int
	err   error
}

// New starts a recording.
func New(opts Options) *Recorder {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Recorder{opts: opts, cr: trace.NewObserver(opts.Source), pending: map[string]string{},
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
	r.running = runningCSV(r.opts.Source, csvs)
	for _, c := range csvs {
		if replaces(&c) == r.running && r.running != "" && phase(&c) == "Pending" {
			r.pending[c.GetName()] = csvState(&c)
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
	return r.write(trace.Header{
		Name: "recorded",
		Comment: fmt.Sprintf("Recorded by statuscheck record from %s, starting %s.\n", r.opts.Server, r.opts.Now().UTC().Format(time.RFC3339)) +
			"Each step carries the generation, resourceVersion and time the cluster gave it; OLM's\n" +
			"check and upgrade are inferred from the ClusterServiceVersions (see statuscheck's README).",
		Source: r.opts.Source, StatusSubresource: r.opts.StatusSubresource, Recorded: true,
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
	ob := trace.Observation{}
	if t != watch.Deleted {
		// A watch event is a change: what changed (spec, metadata,
		// status) says which write it was; managedFields only say who.
		ob.Object = obj.Object
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
			// When and by whom, the deleted object does not say: the
			// time is when the recorder saw it go.
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

// CSV takes an event of a ClusterServiceVersion of the namespace.
func (r *Recorder) CSV(t watch.EventType, obj *unstructured.Unstructured) error {
	if t == watch.Deleted {
		delete(r.pending, obj.GetName())
		return nil
	}
	name := obj.GetName()
	if r.running == "" && ownsSource(r.opts.Source, obj) && phase(obj) == "Succeeded" && replaces(obj) == "" {
		r.running = name // the operator's first install
		return nil
	}
	if name == r.running && phase(obj) == "Replacing" && !r.replacing[name] {
		// Said in the trace, for whoever reads it, but not a step: OLM
		// sets Replacing as soon as a CSV replacing this one exists
		// (operator.go, checkReplacementsAndUpdateStatus), before its gate
		// has allowed anything.
		r.replacing[name] = true
		return r.write(fmt.Sprintf("# %s entered Replacing (resourceVersion %s, %s): OLM does this as soon as a replacement exists, before its gate allows anything; not an upgrade\n",
			name, obj.GetResourceVersion(), r.timeOf(obj)))
	}
	if r.running == "" || replaces(obj) != r.running || r.upgraded[name] {
		return nil
	}
	at := r.timeOf(obj)
	switch p := phase(obj); p {
	case "", "Pending":
		// The gate runs in each sync of a Pending replacement: a check.
		state := csvState(obj)
		if r.pending[name] == state {
			return nil
		}
		r.pending[name] = state
		return r.emit(trace.Step{Actor: v1alpha1.ActorOLM, Verb: v1alpha1.VerbCheck, Who: "olm (" + name + " " + orNone(p) + ")", ResourceVersion: obj.GetResourceVersion(), Time: at})
	case "Failed":
		return nil
	default:
		// The replacement left Pending: the gate allowed, the operator is
		// replaced.
		r.upgraded[name] = true
		delete(r.pending, name)
		prev := r.running
		r.running = name
		r.oc, r.ocRV = freshOC(), ""
		if err := r.emit(trace.Step{Actor: v1alpha1.ActorOLM, Verb: v1alpha1.VerbUpgrade, Who: "olm (" + name + " replaces " + prev + ", now " + p + ")", ResourceVersion: obj.GetResourceVersion(), Time: at}); err != nil {
			return err
		}
		if seen := r.ocSeen[name]; seen != nil {
			// The new CSV's OperatorCondition, written before it ran.
			return r.ocChanged(seen)
		}
		return nil
	}
}

// OC takes an event of an OperatorCondition of the namespace: the running
// CSV's is what the gate reads.
func (r *Recorder) OC(t watch.EventType, obj *unstructured.Unstructured) error {
	name := obj.GetName()
	if t == watch.Deleted {
		delete(r.ocSeen, name)
		if name == r.running {
			r.oc, r.ocRV = nil, ""
		}
		return nil
	}
	r.ocSeen[name] = obj
	if name != r.running || r.running == "" || obj.GetResourceVersion() == r.ocRV {
		return nil
	}
	return r.ocChanged(obj)
}

// ocChanged writes what changed in the running CSV's OperatorCondition
// since r.oc: the operator's (spec.conditions) or an admin's
// (spec.overrides) spec write, and OLM's status sync. The rest of the
// spec (deployments, serviceAccounts) is OLM's bookkeeping, which the
// gate does not read.
func (r *Recorder) ocChanged(obj *unstructured.Unstructured) error {
	prev := r.oc
	r.oc, r.ocRV = obj.Object, obj.GetResourceVersion()
	if prev == nil {
		return nil // seen for the first time: where the run starts
	}
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
	}
	return r.emit(steps...)
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
// operator: it owns the status source's kind and nothing replaces it that
// has left Pending.
func runningCSV(src *v1alpha1.StatusSource, csvs []unstructured.Unstructured) string {
	var owners []*unstructured.Unstructured
	for i := range csvs {
		if ownsSource(src, &csvs[i]) {
			owners = append(owners, &csvs[i])
		}
	}
	sort.Slice(owners, func(i, j int) bool { return owners[i].GetName() < owners[j].GetName() })
	replaced := map[string]bool{}
	for _, c := range owners {
		if p, r := phase(c), replaces(c); r != "" && p != "" && p != "Pending" {
			replaced[r] = true
		}
	}
	for _, c := range owners {
		if !replaced[c.GetName()] && phase(c) != "" && phase(c) != "Pending" {
			return c.GetName()
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

func csvState(csv *unstructured.Unstructured) string {
	reason, _, _ := unstructured.NestedString(csv.Object, "status", "reason")
	msg, _, _ := unstructured.NestedString(csv.Object, "status", "message")
	return phase(csv) + "/" + reason + "/" + msg
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
