package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/jsonobj"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/manifest"
)

// Recorded input is a stream of observations of the CR: full snapshots
// (kubectl get -w -o json|yaml, with or without --output-watch-events) or
// audit events. Consecutive observations are diffed into steps: a change
// of spec (or anything outside metadata and status) is a user's update, a
// change of status the operator's status write, a change of the handshake's
// request field OLM's request. The generation each recording carries is
// checked against the apiserver model.

// recording is one recorded state of the object.
type recording struct {
	obj     map[string]interface{} // nil: deleted
	line    int
	who     string
	status  bool // a /status write (audit)
	deleted bool
	created bool
	// read marks an audit event of a read (get, list): it shows the state
	// before the first write, and is not a change.
	read bool
	// id is the object a deletion is about (watch events carry it).
	id *Identity
}

// differ turns observations into steps.
type differ struct {
	t *Trace
	// statusSubresource is the run's, when known (nil: not known).
	statusSubresource *bool
	src               *v1alpha1.StatusSource
	prev              map[string]interface{}
	started           bool
	queue             []Step
	source            func() (recording, error)
	// lastRead is the last read of the object before the first write.
	lastRead *recording
	// others counts observations of other objects, which are skipped.
	others map[string]int
	// observations counts the observations of the object.
	observations int
}

func (d *differ) next() (Step, error) {
	for len(d.queue) == 0 {
		ob, err := d.source()
		if err != nil {
			return Step{}, err
		}
		if err := d.observe(ob); err != nil {
			return Step{}, err
		}
	}
	st := d.queue[0]
	d.queue = d.queue[1:]
	return st, nil
}

// volatile metadata is bookkeeping the apiserver writes on every change.
var volatile = map[string]bool{"resourceVersion": true, "managedFields": true, "generation": true,
	"creationTimestamp": true, "uid": true, "selfLink": true}

// matches says whether an observation is of the object the run is about.
// Without a given identity, the first object observed is the one; other
// objects in the stream (kubectl get KIND -A -w interleaves them) are
// skipped and counted.
func (d *differ) matches(ob recording) (bool, error) {
	var got Identity
	switch {
	case ob.obj != nil:
		got = identityOf(ob.obj)
	case ob.id != nil:
		got = *ob.id
	default:
		return d.started, nil // a deletion that does not say of what: the object's, once it exists
	}
	if got.Kind == v1alpha1.TraceKind && got.group() == (Identity{APIVersion: v1alpha1.GroupVersion}).group() {
		return false, &TraceError{File: d.t.File, Line: ob.line, Msg: "this is a StatusTrace, not a recording of the status source: read it with --format trace (or auto)"}
	}
	want := d.t.Identity
	if want.Kind == "" {
		d.t.Identity = got
		return true, nil
	}
	if got.Kind != want.Kind || got.Name != want.Name || (want.Namespace != "" && got.Namespace != "" && got.Namespace != want.Namespace) ||
		(want.APIVersion != "" && got.APIVersion != "" && got.group() != want.group()) {
		if d.others == nil {
			d.others = map[string]int{}
		}
		d.others[got.describe()]++
		return false, nil
	}
	return true, nil
}

// describe names an object for messages: Kind namespace/name.
func (id Identity) describe() string {
	if id.Namespace != "" {
		return fmt.Sprintf("%s %s/%s", id.Kind, id.Namespace, id.Name)
	}
	return fmt.Sprintf("%s %s", id.Kind, id.Name)
}

// otherObjects lists what was skipped, most observed first.
func (d *differ) otherObjects() string {
	type kv struct {
		k string
		n int
	}
	var list []kv
	for k, n := range d.others {
		list = append(list, kv{k, n})
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].n != list[j].n {
			return list[i].n > list[j].n
		}
		return list[i].k < list[j].k
	})
	var parts []string
	for i, e := range list {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(list)-3))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%d)", e.k, e.n))
	}
	return strings.Join(parts, ", ")
}

func (d *differ) observe(ob recording) error {
	step := func(a v1alpha1.Actor, v v1alpha1.Verb, val map[string]interface{}) Step {
		rv, _, _ := unstructured.NestedString(ob.obj, "metadata", "resourceVersion")
		return Step{Actor: a, Verb: v, Value: val, File: d.t.File, Line: ob.line, Who: ob.who, ResourceVersion: rv}
	}
	ok, err := d.matches(ob)
	if err != nil || !ok {
		return err
	}
	if ob.read {
		if !d.started {
			r := ob
			d.lastRead = &r // the state before the first write
		}
		return nil // a read changes nothing
	}
	d.observations++
	if ob.deleted {
		if d.prev == nil {
			return nil // deleting what was never seen: nothing to replay
		}
		d.queue = append(d.queue, d.deletion(ob, step))
		d.prev = nil
		return nil
	}
	if !d.started {
		d.started = true
		switch {
		case d.lastRead != nil:
			// Start from the last read before the first write, so that
			// the write is judged (audit logs).
			d.t.Initial = d.lastRead.obj
			d.prev = d.lastRead.obj
		case !ob.created:
			if d.t.Format == FormatAudit {
				d.t.Notes = append(d.t.Notes, fmt.Sprintf("the log has no read of %s before its first write (line %d): the replay starts from that write's response, so the write itself is not judged",
					d.t.Identity.describe(), ob.line))
			}
			d.t.Initial = ob.obj // the first recording is where the run starts
			d.prev = ob.obj
			return nil
		}
	}
	gen := recordedGeneration(ob.obj)
	if d.prev == nil {
		st := step(v1alpha1.ActorUser, v1alpha1.VerbCreate, ob.obj)
		st.Recorded, st.Observed = gen, true
		d.queue = append(d.queue, st)
		d.prev = ob.obj
		return nil
	}
	before, after := jsonobj.Split(d.prev), jsonobj.Split(ob.obj)
	var steps []Step
	// Metadata: the request annotation is OLM's; the rest a user's.
	metaPatch := jsonobj.CreateMergePatch(cleanMeta(before.Meta), cleanMeta(after.Meta))
	// A delete of an object with finalizers is not deleted but marked
	// (k8s.io/apiserver registry/generic/registry/store.go, Store.Delete and
	// markAsDeleting): deletionTimestamp appears, with the garbage
	// collector's finalizer when the delete asked Orphan or Foreground.
	// That is a delete step, not an update of deletionTimestamp (which
	// the apiserver refuses).
	if _, marked := metaPatch["deletionTimestamp"]; marked && before.Meta["deletionTimestamp"] == nil {
		steps = append(steps, step(v1alpha1.ActorUser, v1alpha1.VerbDelete, propagation(before.Meta, after.Meta)))
		delete(metaPatch, "deletionTimestamp")
		delete(metaPatch, "deletionGracePeriodSeconds")
		if f := finalizers(after.Meta); len(f) > 0 && sameSet(withoutGC(f), withoutGC(finalizers(before.Meta))) {
			delete(metaPatch, "finalizers") // only the collector's, which the delete adds
		}
	}
	// A lifecycle manager's record of its request comes with the request,
	// in the same write: bookkeeping, not a user's change.
	dropAnnotation(metaPatch, v1alpha1.RequestRecordAnnotation)
	if req := d.request(); req != nil && req.Annotation != "" {
		if ann, ok := metaPatch["annotations"].(map[string]interface{}); ok {
			if tok, ok := ann[req.Annotation]; ok && tok != nil {
				steps = append(steps, step(v1alpha1.ActorOLM, v1alpha1.VerbRequest, map[string]interface{}{"token": fmt.Sprint(tok)}))
				dropAnnotation(metaPatch, req.Annotation)
			}
		}
	}
	bodyPatch := jsonobj.CreateMergePatch(before.Body, after.Body)
	if req := d.request(); req != nil && req.SpecPath != "" && len(bodyPatch) > 0 {
		fields := v1alpha1.FieldPath(req.SpecPath)
		if tok, ok := contract.TokenAt(after.Body, fields); ok {
			if old, _ := contract.TokenAt(before.Body, fields); old != tok && onlyPath(bodyPatch, fields) {
				steps = append(steps, step(v1alpha1.ActorOLM, v1alpha1.VerbRequest, map[string]interface{}{"token": tok}))
				bodyPatch = nil
			}
		}
	}
	if len(metaPatch) > 0 || len(bodyPatch) > 0 {
		patch := map[string]interface{}{}
		for k, v := range bodyPatch {
			patch[k] = v
		}
		if len(metaPatch) > 0 {
			patch["metadata"] = metaPatch
		}
		steps = append(steps, step(v1alpha1.ActorUser, v1alpha1.VerbUpdate, patch))
	}
	statusChanged := !reflect.DeepEqual(before.Status, after.Status)
	switch {
	case statusChanged && !ob.status && d.noSubresource() && len(steps) > 0 && steps[len(steps)-1].Verb == v1alpha1.VerbUpdate:
		// Without the status subresource one write carries spec and
		// status and moves generation once: it is one update, not an
		// update and a status write.
		last := &steps[len(steps)-1]
		last.Value = jsonobj.MergePatch(last.Value, map[string]interface{}{"status": jsonobj.CreateMergePatch(before.Status, after.Status)})
	case statusChanged || ob.status:
		steps = append(steps, step(v1alpha1.ActorOperator, v1alpha1.VerbUpdateStatus, after.Status))
	}
	if prev := generationOr1(d.prev); len(steps) == 0 && gen != nil && *gen != prev {
		// Only the generation moved: replay an empty write so the model
		// can say what it thinks of that.
		steps = append(steps, step(v1alpha1.ActorUser, v1alpha1.VerbUpdate, map[string]interface{}{}))
	}
	if len(steps) > 0 {
		steps[len(steps)-1].Recorded = gen
		steps[len(steps)-1].Observed = true
	}
	d.queue = append(d.queue, steps...)
	d.prev = ob.obj
	return nil
}

// noSubresource says whether the run is known to have no status
// subresource.
func (d *differ) noSubresource() bool {
	return d.statusSubresource != nil && !*d.statusSubresource
}

// deletion is the step a recorded deletion of the object was: a delete,
// or, for an object a delete had marked, the update that removed its last
// finalizer. The apiserver deletes the object in that update instead of
// storing it (Store.Update in k8s.io/apiserver's registry/generic/registry:
// shouldDeleteDuringUpdate, errEmptiedFinalizers, deleteWithoutFinalizers),
// and the watch's DELETED carries the state stored before, finalizers and
// all (etcd3's watcher decodes prevValue for a deletion, watcher.go
// transform): what the update removed is the finalizers that are left.
func (d *differ) deletion(ob recording, step func(v1alpha1.Actor, v1alpha1.Verb, map[string]interface{}) Step) Step {
	before := jsonobj.Split(d.prev)
	if ob.obj != nil && before.Meta["deletionTimestamp"] != nil {
		after := jsonobj.Split(ob.obj)
		patch := jsonobj.CreateMergePatch(cleanMeta(before.Meta), cleanMeta(after.Meta))
		if len(finalizers(after.Meta)) > 0 {
			if patch == nil {
				patch = map[string]interface{}{}
			}
			patch["finalizers"] = nil
		}
		if len(patch) > 0 {
			st := step(v1alpha1.ActorOperator, v1alpha1.VerbUpdate, map[string]interface{}{"metadata": patch})
			st.Observed = true
			return st
		}
	}
	st := step(v1alpha1.ActorUser, v1alpha1.VerbDelete, nil)
	if ob.obj != nil {
		st.Value = propagation(before.Meta, jsonobj.Split(ob.obj).Meta)
	}
	st.Observed = true
	return st
}

// The garbage collector's finalizers, which a delete's propagationPolicy
// adds (registry/store.go, deletionFinalizersForGarbageCollection).
const (
	orphanFinalizer     = "orphan"
	foregroundFinalizer = "foregroundDeletion"
)

// propagation infers a delete's propagationPolicy from the collector's
// finalizer it added (none: the default).
func propagation(before, after map[string]interface{}) map[string]interface{} {
	had := finalizers(before)
	for _, f := range finalizers(after) {
		if contains(had, f) {
			continue
		}
		switch f {
		case orphanFinalizer:
			return map[string]interface{}{"propagationPolicy": "Orphan"}
		case foregroundFinalizer:
			return map[string]interface{}{"propagationPolicy": "Foreground"}
		}
	}
	return nil
}

func finalizers(meta map[string]interface{}) []string {
	l, _, _ := unstructured.NestedStringSlice(meta, "finalizers")
	return l
}

func withoutGC(fs []string) []string {
	var out []string
	for _, f := range fs {
		if f != orphanFinalizer && f != foregroundFinalizer {
			out = append(out, f)
		}
	}
	return out
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !contains(b, x) {
			return false
		}
	}
	return true
}

func (d *differ) request() *v1alpha1.HandshakeRequest {
	if d.src == nil {
		return nil
	}
	return d.src.Request()
}

// generationOr1 is an object's generation, 1 when it has none (as a
// create gives it).
func generationOr1(obj map[string]interface{}) int64 {
	if g := recordedGeneration(obj); g != nil {
		return *g
	}
	return 1
}

func recordedGeneration(obj map[string]interface{}) *int64 {
	md, _ := obj["metadata"].(map[string]interface{})
	if g, ok := jsonobj.Int(md["generation"]); ok {
		return &g
	}
	return nil
}

func cleanMeta(m map[string]interface{}) map[string]interface{} {
	out := map[string]interface{}{}
	for k, v := range m {
		if !volatile[k] {
			out[k] = v
		}
	}
	return out
}

// dropAnnotation takes key out of a metadata merge patch's annotations,
// and the annotations out of the patch once none is left.
func dropAnnotation(metaPatch map[string]interface{}, key string) {
	ann, ok := metaPatch["annotations"].(map[string]interface{})
	if !ok {
		return
	}
	delete(ann, key)
	if len(ann) == 0 {
		delete(metaPatch, "annotations")
	}
}

// onlyPath reports whether a patch changes nothing but one field path.
func onlyPath(patch map[string]interface{}, fields []string) bool {
	if len(patch) != 1 {
		return false
	}
	v, ok := patch[fields[0]]
	if !ok {
		return false
	}
	if len(fields) == 1 {
		return true
	}
	m, ok := v.(map[string]interface{})
	return ok && onlyPath(m, fields[1:])
}

// openSnapshots reads a stream of snapshots in JSON or YAML.
func openSnapshots(t *Trace, br *bufio.Reader) error {
	t.Recorded = true
	d := &differ{t: t, src: t.source(), statusSubresource: t.subresource}
	t.differ = d
	head := firstContent(br)
	var pending []recording
	pop := func() (recording, bool) {
		if len(pending) == 0 {
			return recording{}, false
		}
		ob := pending[0]
		pending = pending[1:]
		return ob, true
	}
	if len(head) > 0 && (head[0] == '{' || head[0] == '[') {
		js := &jsonValues{r: br, line: 1, file: t.File, limit: t.limits.Manifest.MaxFileSize}
		d.source = func() (recording, error) {
			for {
				if ob, ok := pop(); ok {
					return ob, nil
				}
				v, line, err := js.next()
				if err != nil {
					return recording{}, err
				}
				obs, err := snapshotObservations(t.File, line, v)
				if err != nil {
					return recording{}, err
				}
				pending = obs
			}
		}
	} else {
		// A YAML document's size is only known once it is parsed: the
		// reader refuses to hand the parser more than the limit per
		// document, so one huge snapshot cannot take the memory.
		lr := &limitedReader{r: br, max: t.limits.Manifest.MaxFileSize}
		dec := yaml.NewDecoder(lr)
		d.source = func() (recording, error) {
			for {
				if ob, ok := pop(); ok {
					return ob, nil
				}
				var n yaml.Node
				lr.reset()
				if err := dec.Decode(&n); err != nil {
					if lr.over {
						return recording{}, &TraceError{File: t.File, Msg: fmt.Sprintf("a snapshot over the %d-byte limit", lr.max)}
					}
					if errors.Is(err, io.EOF) {
						return recording{}, io.EOF
					}
					return recording{}, &TraceError{File: t.File, Msg: "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
				}
				if len(n.Content) == 0 {
					continue
				}
				root := n.Content[0]
				v, err := manifest.Convert(t.File, root, t.limits.Manifest)
				if err != nil {
					return recording{}, err
				}
				if v == nil {
					continue
				}
				obs, err := snapshotObservations(t.File, root.Line, v)
				if err != nil {
					return recording{}, err
				}
				pending = obs
			}
		}
	}
	t.next = d.next
	return d.prime()
}

// firstContent peeks up to the first byte that is not blank (after a byte
// order mark), reading no more than that needs: a live stream is not
// waited on.
func firstContent(br *bufio.Reader) []byte {
	for want := 1; want <= br.Size(); want++ {
		head, err := br.Peek(want)
		trimmed := bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
		if len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("\xef")) && !bytes.Equal(trimmed, []byte("\xef\xbb")) {
			return trimmed
		}
		if err != nil {
			return nil
		}
		want = max(want, len(head))
	}
	return nil
}

// limitedReader fails a read once more than max bytes (plus the parser's
// read-ahead) were read since the last reset.
type limitedReader struct {
	r    io.Reader
	max  int64
	n    int64
	over bool
}

func (l *limitedReader) reset() { l.n = 0 }

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.max > 0 && l.n > l.max+64<<10 {
		l.over = true
		return 0, fmt.Errorf("document over the %d-byte limit", l.max)
	}
	n, err := l.r.Read(p)
	l.n += int64(n)
	return n, err
}

// prime reads up to the first recording, which is the initial state.
func (d *differ) prime() error {
	for !d.started {
		ob, err := d.source()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return d.nothing()
			}
			return err
		}
		if err := d.observe(ob); err != nil {
			return err
		}
	}
	return nil
}

// noSteps says why a recording that was read gave no step.
func (d *differ) noSteps() error {
	msg := fmt.Sprintf("%d recording(s) of %s and no change to replay", d.observations, d.t.Identity.describe())
	if d.observations <= 1 {
		msg = fmt.Sprintf("one recording of %s and no change to replay", d.t.Identity.describe())
	}
	if len(d.others) > 0 {
		msg += fmt.Sprintf(" (other objects skipped: %s)", d.otherObjects())
	}
	msg += "; simulate replays a StatusTrace, a stream of snapshots in which the status-source CR changes (kubectl get -w -o json), or an audit log that writes it"
	if d.t.Identity.Kind == csvKind {
		msg += csvHint
	}
	return &TraceError{File: d.t.File, Msg: msg}
}

const (
	csvKind = "ClusterServiceVersion"
	// csvHint points a CSV given as the trace at where it belongs.
	csvHint = "; a ClusterServiceVersion is not a trace: give its bundle with --bundle DIR and the trace to replay as the argument"
)

// onlyCSVs: the skipped objects are all ClusterServiceVersions.
func (d *differ) onlyCSVs() bool {
	for k := range d.others {
		if !strings.HasPrefix(k, csvKind+" ") {
			return false
		}
	}
	return len(d.others) > 0
}

// nothing says why a recording holds nothing to replay.
func (d *differ) nothing() error {
	what := "the status-source CR"
	if d.t.Identity.Kind != "" {
		what = d.t.Identity.describe()
	}
	switch {
	case d.lastRead != nil:
		return &TraceError{File: d.t.File, Msg: fmt.Sprintf("the log reads %s but never writes it: nothing to replay", what)}
	case len(d.others) > 0:
		if d.onlyCSVs() {
			return &TraceError{File: d.t.File, Msg: fmt.Sprintf("no recording of %s in the input; it has %s%s", what, d.otherObjects(), csvHint)}
		}
		return &TraceError{File: d.t.File, Msg: fmt.Sprintf("no recording of %s in the input; it has %s (give --bundle, or --crd with --source, to name the object)", what, d.otherObjects())}
	}
	return &TraceError{File: d.t.File, Msg: fmt.Sprintf("no recording of %s in the input", what)}
}

// snapshotObservations reads one JSON/YAML value of a snapshot stream: an
// object, a watch event ({type, object}) or a List.
func snapshotObservations(file string, line int, v interface{}) ([]recording, error) {
	m, ok := v.(map[string]interface{})
	if !ok {
		return nil, &TraceError{File: file, Line: line, Msg: "a snapshot must be a Kubernetes object"}
	}
	if obj, ok := m["object"].(map[string]interface{}); ok {
		if typ, _ := m["type"].(string); typ != "" {
			switch typ {
			case "DELETED":
				id := identityOf(obj)
				return []recording{{obj: obj, line: line, deleted: true, id: &id}}, nil
			case "BOOKMARK", "ERROR":
				return nil, nil
			}
			return []recording{{obj: obj, line: line}}, nil
		}
	}
	if items, ok := m["items"].([]interface{}); ok && strings.HasSuffix(fmt.Sprint(m["kind"]), "List") {
		var out []recording
		for _, it := range items {
			sub, err := snapshotObservations(file, line, it)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		}
		return out, nil
	}
	if _, ok := m["kind"].(string); !ok {
		return nil, &TraceError{File: file, Line: line, Msg: "a snapshot must be a Kubernetes object (no kind)"}
	}
	return []recording{{obj: m, line: line}}, nil
}

// jsonValues splits a stream into top-level JSON values, knowing the line
// each starts on.
type jsonValues struct {
	r     *bufio.Reader
	line  int
	file  string
	limit int64
}

func (j *jsonValues) next() (interface{}, int, error) {
	// Skip whitespace.
	for {
		c, err := j.r.ReadByte()
		if err != nil {
			return nil, 0, io.EOF
		}
		if c == '\n' {
			j.line++
			continue
		}
		if c == ' ' || c == '\t' || c == '\r' || c == ',' {
			continue
		}
		if c == 0xEF { // a byte order mark
			_, _ = j.r.Discard(2)
			continue
		}
		_ = j.r.UnreadByte()
		break
	}
	start := j.line
	var buf bytes.Buffer
	var sc jsonScan
	for {
		c, err := j.r.ReadByte()
		if err != nil {
			return nil, 0, &TraceError{File: j.file, Line: start, Msg: "unexpected end of input inside a JSON value"}
		}
		buf.WriteByte(c)
		if j.limit > 0 && int64(buf.Len()) > j.limit {
			return nil, 0, &TraceError{File: j.file, Line: start, Msg: fmt.Sprintf("a JSON value over the %d-byte limit", j.limit)}
		}
		if c == '\n' {
			j.line++
		}
		if sc.next(c) {
			if buf.Len() == 1 && c != '}' && c != ']' {
				return nil, 0, &TraceError{File: j.file, Line: start, Msg: fmt.Sprintf("expected a JSON object, found %q", c)}
			}
			break
		}
	}
	v, err := decodeJSON(buf.Bytes())
	if err != nil {
		return nil, 0, &TraceError{File: j.file, Line: start, Msg: "invalid JSON: " + err.Error()}
	}
	return v, start, nil
}

// decodeJSON decodes a JSON value with its numbers as an unstructured
// object holds them (int64, else float64).
func decodeJSON(data []byte) (interface{}, error) {
	var v interface{}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return numbers(v), nil
}

// numbers turns json.Numbers into int64 or float64, as an unstructured
// object holds them.
func numbers(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		for k, x := range t {
			t[k] = numbers(x)
		}
	case []interface{}:
		for i, x := range t {
			t[i] = numbers(x)
		}
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	}
	return v
}

// auditObjectRef is an audit Event's objectRef.
type auditObjectRef struct {
	Resource   string `json:"resource"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	APIGroup   string `json:"apiGroup"`
	APIVersion string `json:"apiVersion"`
}

// firstAuditObject is the objectRef of the audit log's first event, nil
// when the first line (within what br has buffered) is not one.
func firstAuditObject(br *bufio.Reader) *auditObjectRef {
	head, _ := br.Peek(br.Size())
	line, _, _ := bytes.Cut(head, []byte("\n"))
	var ev struct {
		ObjectRef *auditObjectRef `json:"objectRef"`
	}
	if json.Unmarshal(line, &ev) != nil || ev.ObjectRef == nil || ev.ObjectRef.Resource == "" || ev.ObjectRef.Name == "" {
		return nil
	}
	return ev.ObjectRef
}

// openAudit reads audit.k8s.io/v1 Events (JSON lines at RequestResponse
// level) and keeps the writes to the status source.
func openAudit(t *Trace, br *bufio.Reader) error {
	t.Recorded = true
	id := t.Identity
	if id.Name == "" || id.Kind == "" {
		msg := "an audit log needs the status source to pick its object out: give --bundle, or --crd with --source"
		if ref := firstAuditObject(br); ref != nil {
			gr := ref.Resource
			if ref.APIGroup != "" {
				gr += "." + ref.APIGroup
			}
			where := ref.Name
			if ref.Namespace != "" {
				where = ref.Namespace + "/" + ref.Name
			}
			msg = fmt.Sprintf("an audit log needs the status source to pick its object out; its first event is about %s %s: give --bundle with the bundle whose CSV owns %s (its CRD and status-source annotation), or --crd with the CRD file of %s and --source %s/%s/KIND/%s",
				gr, where, gr, gr, ref.APIGroup, ref.APIVersion, ref.Name)
		}
		return &TraceError{File: t.File, Msg: msg}
	}
	d := &differ{t: t, src: t.source(), statusSubresource: t.subresource}
	t.differ = d
	js := &jsonValues{r: br, line: 1, file: t.File, limit: t.limits.Manifest.MaxFileSize}
	d.source = func() (recording, error) {
		for {
			v, line, err := js.next()
			if err != nil {
				return recording{}, err
			}
			ob, ok, err := auditObservation(t.File, line, v, id)
			if err != nil {
				return recording{}, err
			}
			if ok {
				return ob, nil
			}
		}
	}
	t.next = d.next
	return d.prime()
}

// auditObservation reads one audit event (k8s.io/apiserver's
// audit.k8s.io/v1 Event); ok is false for events about other objects,
// failed requests, earlier stages and reads without a body. A get of the
// object, or a list that holds it, is a read: the state before the first
// write (watches carry no body in an audit log).
func auditObservation(file string, line int, v interface{}, id Identity) (recording, bool, error) {
	notEvent := &TraceError{File: file, Line: line, Msg: "not an audit.k8s.io Event"}
	m, isMap := v.(map[string]interface{})
	if !isMap {
		return recording{}, false, notEvent
	}
	var ev auditv1.Event
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &ev); err != nil || ev.Kind != "Event" || !strings.HasPrefix(ev.APIVersion, "audit.k8s.io/") {
		return recording{}, false, notEvent
	}
	if ev.Stage != "" && ev.Stage != auditv1.StageResponseComplete {
		return recording{}, false, nil
	}
	if rs := ev.ResponseStatus; rs != nil && rs.Code != 0 && (rs.Code < 200 || rs.Code >= 300) {
		return recording{}, false, nil
	}
	ref := ev.ObjectRef
	if ref == nil {
		ref = &auditv1.ObjectReference{}
	}
	if ref.APIGroup != id.group() || (id.Plural != "" && ref.Resource != id.Plural) {
		return recording{}, false, nil
	}
	if id.Namespace != "" && ref.Namespace != "" && ref.Namespace != id.Namespace {
		return recording{}, false, nil
	}
	// The response as the unstructured object it is; ev.ResponseObject
	// holds its JSON.
	resp, _, _ := unstructured.NestedMap(m, "responseObject")
	ob := recording{line: line, who: ev.User.Username}
	if ev.Verb == "list" {
		items, _ := resp["items"].([]interface{})
		for _, it := range items {
			obj, _ := it.(map[string]interface{})
			if got := identityOf(obj); got.Name == id.Name && (id.Namespace == "" || got.Namespace == "" || got.Namespace == id.Namespace) {
				if got.Kind == "" { // list items may leave apiVersion and kind out
					obj = jsonobj.MergePatch(obj, map[string]interface{}{"apiVersion": id.APIVersion, "kind": id.Kind})
				}
				ob.obj, ob.read = obj, true
				return ob, true, nil
			}
		}
		return recording{}, false, nil
	}
	if ref.Name != id.Name {
		return recording{}, false, nil
	}
	respKind, _ := resp["kind"].(string)
	switch ev.Verb {
	case "create", "update", "patch":
	case "get":
		if resp == nil || respKind != id.Kind {
			return recording{}, false, nil // a get at Metadata level, or of a subresource
		}
		ob.obj, ob.read = resp, true
		return ob, true, nil
	case "delete":
		if resp != nil && respKind == id.Kind {
			ob.obj = resp // graceful deletion: the object lives on with a deletionTimestamp
			return ob, true, nil
		}
		ob.deleted = true
		return ob, true, nil
	default:
		return recording{}, false, nil // watch: no body
	}
	if resp == nil {
		return recording{}, false, &TraceError{File: file, Line: line, Msg: fmt.Sprintf("a %s of %s has no responseObject: record audit events at level RequestResponse", ev.Verb, id.Name)}
	}
	ob.obj = resp
	ob.status = ref.Subresource == "status"
	ob.created = ev.Verb == "create"
	return ob, true, nil
}

func (t *Trace) source() *v1alpha1.StatusSource { return t.Source }

// Observer turns successive observations of a status source into steps,
// as the snapshot and audit readers do; statuscheck record feeds it a
// watch.
type Observer struct {
	t *Trace
	d *differ
}

// NewObserver starts observing src, whose CRD version has the status
// subresource or not.
func NewObserver(src *v1alpha1.StatusSource, statusSubresource bool) *Observer {
	t := &Trace{File: "(watch)", Format: FormatSnapshots, Recorded: true, Source: src, given: true,
		Identity: Identity{APIVersion: src.APIVersion, Kind: src.Kind, Name: src.Name, Namespace: src.Namespace}}
	return &Observer{t: t, d: &differ{t: t, src: src, statusSubresource: &statusSubresource}}
}

// Observation is one state of the object a watch reported.
type Observation struct {
	// Object is the object: its last state when Deleted.
	Object map[string]interface{}
	// Deleted says the object is gone.
	Deleted bool
	// Created says the object was created by this event (the watch saw
	// it ADDED after the start).
	Created bool
	// StatusWrite says the write that made it went through /status.
	StatusWrite bool
	// Who wrote it (a field manager), if known.
	Who string
}

// Observe returns the steps an observation implies. The first observation
// of an object that exists at the start is where the run starts (Initial)
// and gives none.
func (o *Observer) Observe(ob Observation) ([]Step, error) {
	rec := recording{obj: ob.Object, deleted: ob.Deleted || ob.Object == nil, created: ob.Created, status: ob.StatusWrite, who: ob.Who}
	if err := o.d.observe(rec); err != nil {
		return nil, err
	}
	steps := o.d.queue
	o.d.queue = nil
	return steps, nil
}

// Start records that the object does not exist at the start: the run
// starts without it, and its creation is a step.
func (o *Observer) Start() { o.d.started = true }

// Initial is the object at the start (nil: it did not exist).
func (o *Observer) Initial() map[string]interface{} { return o.t.Initial }
