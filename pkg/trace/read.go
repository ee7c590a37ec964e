package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/manifest"
	"github.com/statuscheck/statuscheck/pkg/manifest/typed"
)

// Format is a trace's input format.
type Format string

// Input formats.
const (
	FormatAuto      Format = "auto"
	FormatTrace     Format = "trace"
	FormatSnapshots Format = "snapshots"
	FormatAudit     Format = "audit"
)

// Limits bound a trace.
type Limits struct {
	// MaxSteps is the longest trace replayed.
	MaxSteps int
	// Manifest bounds each document (a step, a snapshot, an event).
	Manifest manifest.Limits
	// MaxWhole is the largest trace read whole rather than streamed. A
	// trace read whole is one document, which Manifest.MaxFileSize bounds
	// too: above that, MaxWhole only changes the message.
	MaxWhole int64
}

// DefaultLimits allow ten million steps; memory does not grow with them.
// A trace read whole may be as large as a manifest file.
var DefaultLimits = Limits{MaxSteps: 10_000_000, Manifest: manifest.DefaultLimits, MaxWhole: manifest.DefaultLimits.MaxFileSize}

// Identity names the object a recording is about.
type Identity struct {
	APIVersion, Kind, Name, Namespace string
	// Plural is the resource name audit events use; may be empty.
	Plural string
}

func (id Identity) group() string { return schema.FromAPIVersionAndKind(id.APIVersion, "").Group }

// Trace is an opened input: where it starts and a stream of steps.
type Trace struct {
	File   string
	Format Format
	Name   string
	// Initial is the CR as first observed (nil: it does not exist).
	Initial map[string]interface{}
	// OperatorCondition is the OperatorCondition at the start (nil: the
	// empty one OLM creates).
	OperatorCondition map[string]interface{}
	// Recorded is set for snapshots and audit logs: OLM's steps are not in
	// them, so the gate is evaluated after every change.
	Recorded bool
	// Bridge is a native trace's StatusTrace.Bridge: OLM reads the
	// OperatorCondition the bridge writes.
	Bridge bool
	// Source is the status source the trace is read with: the command
	// line's when it named one (OpenOptions.Source), else the trace's own
	// (Declared).
	Source *v1alpha1.StatusSource
	// Declared is a native trace's own statusSource, nil when it has none.
	Declared *v1alpha1.StatusSource
	// StatusSubresource is a native trace's own statusSubresource.
	StatusSubresource *bool
	// Identity is the object the trace is about.
	Identity Identity
	// Notes say what the reader assumed (where a replay starts, what it
	// skipped).
	Notes []string

	// given is set when the command line named the source.
	given bool

	next    func() (Step, error)
	closer  io.Closer
	steps   int
	limits  Limits
	stopped atomic.Bool
	// differ is set for recorded input.
	differ *differ
	// subresource is the command line's statusSubresource, for the differ.
	subresource *bool
}

// FromSteps is a trace held in memory: a native trace built in Go, read
// as a file of it would be.
func FromSteps(name string, src *v1alpha1.StatusSource, initial map[string]interface{}, steps []Step) *Trace {
	i := 0
	t := &Trace{File: "(" + name + ")", Format: FormatTrace, Name: name, Initial: initial, Source: src, Declared: src, limits: DefaultLimits}
	if initial != nil {
		t.Identity = identityOf(initial)
	}
	t.next = func() (Step, error) {
		if i >= len(steps) {
			return Step{}, io.EOF
		}
		i++
		return steps[i-1], nil
	}
	return t
}

// Stop ends a trace early, from another goroutine (SIGINT on a live
// stream): the input is closed, and Next returns io.EOF from then on, so a
// replay finishes with what it has read.
func (t *Trace) Stop() {
	if t.stopped.Swap(true) {
		return
	}
	if t.closer != nil {
		_ = t.closer.Close()
	}
}

// Stopped reports whether Stop was called.
func (t *Trace) Stopped() bool { return t.stopped.Load() }

// Next returns the next step, or io.EOF (also once Stop was called).
func (t *Trace) Next() (Step, error) {
	if t.stopped.Load() {
		return Step{}, io.EOF
	}
	st, err := t.next()
	if err != nil {
		if t.stopped.Load() {
			return Step{}, io.EOF // the input was closed under the reader
		}
		return st, err
	}
	t.steps++
	if t.limits.MaxSteps > 0 && t.steps > t.limits.MaxSteps {
		return st, fmt.Errorf("%s:%d: the trace is longer than %d steps", t.File, st.Line, t.limits.MaxSteps)
	}
	return st, nil
}

// Close releases the input.
func (t *Trace) Close() error {
	if t.closer != nil {
		return t.closer.Close()
	}
	return nil
}

// TraceError is a trace that does not parse or makes no sense.
type TraceError struct {
	File string
	Line int
	Msg  string
}

func (e *TraceError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// OpenOptions say how to read a trace.
type OpenOptions struct {
	// Format is FormatAuto (detect it) or a given format.
	Format Format
	// Source is the status source, when the command line gave one: it
	// picks the object out of an audit log and tells which field carries
	// a handshake request.
	Source *v1alpha1.StatusSource
	// Plural is the CRD's resource name, to match audit events exactly.
	Plural string
	// StatusSubresource is the CRD version's /status, when known: without
	// it, one observed write of spec and status is one update.
	StatusSubresource *bool
	Limits            Limits
}

func (o OpenOptions) identity() Identity {
	if o.Source == nil {
		return Identity{Plural: o.Plural}
	}
	return Identity{APIVersion: o.Source.APIVersion, Kind: o.Source.Kind, Name: o.Source.Name, Namespace: o.Source.Namespace, Plural: o.Plural}
}

// Stdin is the name a trace read from standard input goes by.
const Stdin = "-"

// Open opens a trace file, or standard input for "-".
func Open(path string, opts OpenOptions) (*Trace, error) {
	if path == Stdin {
		in := newStoppable(os.Stdin)
		t, err := OpenReader("(stdin)", in, opts)
		if err != nil {
			return nil, err
		}
		t.closer = in
		return t, nil
	}
	f, err := os.Open(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("reading %s: is a directory, not a trace", path)
	}
	t, err := OpenReader(path, f, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	t.closer = f
	return t, nil
}

// stoppable reads from a reader in a goroutine of its own, so that Close
// ends a Read that is waiting on a pipe (closing a blocking stdin does not
// interrupt a read in progress; it waits for it).
type stoppable struct {
	r       io.Reader
	once    sync.Once
	chunks  chan []byte
	errc    chan error
	stop    chan struct{}
	closed  sync.Once
	pending []byte
}

func newStoppable(r io.Reader) *stoppable {
	return &stoppable{r: r, chunks: make(chan []byte), errc: make(chan error, 1), stop: make(chan struct{})}
}

func (s *stoppable) start() {
	go func() {
		for {
			buf := make([]byte, 32<<10)
			n, err := s.r.Read(buf)
			if n > 0 {
				select {
				case s.chunks <- buf[:n]:
				case <-s.stop:
					return
				}
			}
			if err != nil {
				s.errc <- err
				return
			}
		}
	}()
}

func (s *stoppable) Read(p []byte) (int, error) {
	s.once.Do(s.start)
	if len(s.pending) == 0 {
		select {
		case c := <-s.chunks:
			s.pending = c
		case err := <-s.errc:
			s.errc <- err // every later Read sees it too
			return 0, err
		case <-s.stop:
			return 0, io.EOF
		}
	}
	n := copy(p, s.pending)
	s.pending = s.pending[n:]
	return n, nil
}

// Close makes Read return io.EOF at once; the reader goroutine ends with
// the process or its next read.
func (s *stoppable) Close() error {
	s.closed.Do(func() { close(s.stop) })
	return nil
}

var (
	traceKindRE     = regexp.MustCompile(`^kind:\s*["']?StatusTrace["']?\s*(#.*)?$`)
	topKindRE       = regexp.MustCompile(`^kind:`)
	jsonTraceKindRE = regexp.MustCompile(`"kind"\s*:\s*"StatusTrace"`)
)

// detect tells the format from the first document, reading no further
// than it needs: a live stream (kubectl get -w | statuscheck simulate -)
// is detected as soon as its first object is complete.
func detect(path string, br *bufio.Reader) (Format, error) {
	want := 1
	for {
		head, err := br.Peek(want)
		eof := err != nil
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
			return "", fmt.Errorf("reading %s: %w", path, err)
		}
		if f, ok := decide(head, eof); ok {
			if f == "" {
				return "", &TraceError{File: path, Msg: "empty trace"}
			}
			return f, nil
		}
		if eof {
			return FormatSnapshots, nil
		}
		want = len(head) + 1
	}
}

// decide tells the format from the bytes read so far; ok is false while
// more are needed. "" means the input is empty.
func decide(head []byte, eof bool) (Format, bool) {
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimLeft(head, " \t\r\n")
	if len(trimmed) == 0 {
		return "", eof
	}
	if trimmed[0] == '{' || trimmed[0] == '[' {
		end := jsonEnd(trimmed)
		if end < 0 && !eof {
			return "", false
		}
		if end < 0 {
			end = len(trimmed)
		}
		first := trimmed[:end]
		switch {
		case jsonTraceKindRE.Match(first):
			return FormatTrace, true // a StatusTrace written as JSON
		case bytes.Contains(first, []byte(`"audit.k8s.io/`)) && bytes.Contains(first, []byte(`"Event"`)):
			return FormatAudit, true
		}
		return FormatSnapshots, true
	}
	// YAML: the top-level kind of the first document decides.
	content := false
	for len(head) > 0 {
		i := bytes.IndexByte(head, '\n')
		if i < 0 && !eof {
			return "", false // the line is not complete yet
		}
		line := head
		if i >= 0 {
			line, head = head[:i], head[i+1:]
		} else {
			head = nil
		}
		line = bytes.TrimRight(line, "\r")
		switch {
		case traceKindRE.Match(line):
			return FormatTrace, true
		case topKindRE.Match(line):
			return FormatSnapshots, true
		case bytes.HasPrefix(line, []byte("---")) && content:
			return FormatSnapshots, true // the first document ended without a kind
		}
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' && !bytes.HasPrefix(t, []byte("---")) {
			content = true
		}
	}
	if !eof {
		return "", false
	}
	return FormatSnapshots, true
}

// jsonEnd is the end of the first JSON value in b, -1 if it is not
// complete.
func jsonEnd(b []byte) int {
	var sc jsonScan
	for i, c := range b {
		if sc.next(c) && (c == '}' || c == ']') {
			return i + 1
		}
	}
	return -1
}

// jsonScan follows JSON text byte by byte just far enough to tell where a
// value ends: brackets count outside strings, and a string ends at an
// unescaped quote.
type jsonScan struct {
	depth      int
	inStr, esc bool
}

// next takes one byte and reports whether the brackets are balanced
// outside a string after it.
func (s *jsonScan) next(c byte) bool {
	switch {
	case s.esc:
		s.esc = false
	case s.inStr && c == '\\':
		s.esc = true
	case c == '"':
		s.inStr = !s.inStr
	case s.inStr:
	case c == '{' || c == '[':
		s.depth++
	case c == '}' || c == ']':
		s.depth--
	}
	return s.depth == 0 && !s.inStr
}

// OpenReader is Open on a reader.
func OpenReader(path string, r io.Reader, opts OpenOptions) (*Trace, error) {
	format, lim := opts.Format, opts.Limits
	if lim.MaxSteps == 0 {
		lim = DefaultLimits
	}
	br := bufio.NewReaderSize(r, 64<<10)
	if format == FormatAuto || format == "" {
		var err error
		if format, err = detect(path, br); err != nil {
			return nil, err
		}
	}
	t := &Trace{File: path, Format: format, limits: lim, Identity: opts.identity(), Source: opts.Source, given: opts.Source != nil, subresource: opts.StatusSubresource}
	var err error
	switch format {
	case FormatTrace:
		err = openNative(t, br)
	case FormatSnapshots:
		err = openSnapshots(t, br)
	case FormatAudit:
		err = openAudit(t, br)
	default:
		err = fmt.Errorf("unknown trace format %q (want trace, snapshots or audit)", format)
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// lineReader reads lines with their numbers, keeping the line breaks.
type lineReader struct {
	r    *bufio.Reader
	line int
	peek *string
	err  error
	// max bounds a line (and so any one read), in bytes.
	max int64
}

func (l *lineReader) next() (string, bool) {
	if l.peek != nil {
		s := *l.peek
		l.peek = nil
		l.line++
		return s, true
	}
	// ReadSlice, not ReadString: a line longer than the limit is refused
	// before it is held in memory.
	var b []byte
	for {
		part, err := l.r.ReadSlice('\n')
		b = append(b, part...)
		if l.max > 0 && int64(len(b)) > l.max {
			l.err = fmt.Errorf("line %d is longer than the %d-byte limit", l.line+1, l.max)
			return "", false
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && (err != io.EOF || len(b) == 0) {
			if err != io.EOF {
				l.err = err
			}
			return "", false
		}
		break
	}
	l.line++
	return string(b), true
}

func (l *lineReader) unread(s string) {
	l.peek = &s
	l.line--
}

func indentOf(s string) int {
	n := 0
	for n < len(s) && s[n] == ' ' {
		n++
	}
	return n
}

func blankOrComment(s string) bool {
	t := strings.TrimSpace(s)
	return t == "" || strings.HasPrefix(t, "#")
}

var stepsKeyRE = regexp.MustCompile(`^steps:\s*(#.*)?$`)

// openNative reads a StatusTrace. The header (everything before a
// top-level "steps:" key) is parsed whole; the block sequence of steps is
// then read in chunks, so a trace of millions of steps streams in constant
// memory. A trace whose steps are a flow sequence, or that has keys after
// the steps, is read whole (up to Limits.MaxWhole).
func openNative(t *Trace, br *bufio.Reader) error {
	lr := &lineReader{r: br, max: t.limits.Manifest.MaxFileSize}
	var header bytes.Buffer
	streaming := false
	for {
		s, ok := lr.next()
		if !ok {
			break
		}
		if t.limits.Manifest.MaxFileSize > 0 && int64(header.Len()+len(s)) > t.limits.Manifest.MaxFileSize {
			return &TraceError{File: t.File, Line: lr.line, Msg: fmt.Sprintf("the trace's header (before steps:) is over the %d-byte limit", t.limits.Manifest.MaxFileSize)}
		}
		if stepsKeyRE.MatchString(strings.TrimRight(s, "\r\n")) {
			streaming = true
			break
		}
		header.WriteString(s)
	}
	if lr.err != nil {
		return &TraceError{File: t.File, Line: lr.line + 1, Msg: lr.err.Error()}
	}
	if !streaming {
		// No block "steps:" key: the whole trace is in the header.
		return nativeWhole(t, header.Bytes())
	}
	head, err := parseHeader(t, header.Bytes())
	if err != nil {
		return err
	}
	if head == nil || !hasKey(head.Object(), "initial") {
		// The steps come first, or initial follows them: read it whole.
		rest, err := io.ReadAll(io.LimitReader(br, t.limits.MaxWhole))
		if err != nil {
			return fmt.Errorf("reading %s: %w", t.File, err)
		}
		all := append(header.Bytes(), []byte("steps:\n")...)
		return nativeWhole(t, append(all, rest...))
	}
	if err := applyHeader(t, head); err != nil {
		return err
	}
	sr := &stepReader{t: t, lr: lr, indent: -1}
	t.next = sr.next
	return nil
}

func parseHeader(t *Trace, data []byte) (*manifest.Document, error) {
	docs, err := manifest.Parse(t.File, data, t.limits.Manifest)
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, nil
	}
	if len(docs) > 1 {
		return nil, &TraceError{File: t.File, Line: docs[1].Node.Line, Msg: "a StatusTrace is one YAML document"}
	}
	if docs[0].Object() == nil {
		return nil, &TraceError{File: t.File, Line: docs[0].Node.Line, Msg: "a StatusTrace is a YAML mapping"}
	}
	return docs[0], nil
}

// nativeWhole parses a StatusTrace held in memory.
func nativeWhole(t *Trace, data []byte) error {
	if int64(len(data)) > t.limits.MaxWhole {
		return &TraceError{File: t.File, Msg: fmt.Sprintf("a trace read whole may be at most %d bytes; to stream it, write initial: (null if none) before steps:, and steps: last, as a block list", t.limits.MaxWhole)}
	}
	docs, err := manifest.Parse(t.File, data, t.limits.Manifest)
	if err != nil {
		return err
	}
	if len(docs) != 1 || docs[0].Object() == nil {
		return &TraceError{File: t.File, Msg: "a StatusTrace is one YAML mapping"}
	}
	doc := docs[0]
	if err := applyHeader(t, doc); err != nil {
		return err
	}
	raw, ok := doc.Object()["steps"]
	if !ok {
		return &TraceError{File: t.File, Msg: "no steps"}
	}
	list, ok := raw.([]interface{})
	if !ok {
		pos, _ := doc.Locate(manifest.NewPath("steps"))
		return &TraceError{File: t.File, Line: pos.Line, Msg: "steps must be a list"}
	}
	i := 0
	t.next = func() (Step, error) {
		if i >= len(list) {
			return Step{}, io.EOF
		}
		item := doc.At(manifest.NewPath("steps").Index(i))
		i++
		return decodeStep(item, 0)
	}
	return nil
}

// applyHeader reads a StatusTrace's fields other than steps, strictly:
// api/v1alpha1's StatusTrace, unknown and repeated fields refused with
// their line.
func applyHeader(t *Trace, doc *manifest.Document) error {
	var h v1alpha1.StatusTrace
	if doc != nil {
		// The steps are decoded one by one, with their own lines.
		head := *doc
		if obj := doc.Object(); obj != nil {
			if _, ok := obj["steps"]; ok {
				cp := make(map[string]interface{}, len(obj))
				for k, v := range obj {
					if k != "steps" {
						cp[k] = v
					}
				}
				head.Value = cp
			}
		}
		if errs := typed.DecodeStrict(&head, &h); len(errs) > 0 {
			for _, e := range errs {
				if e.Path != "steps" && !strings.HasPrefix(e.Path, "steps.") {
					return headerError(t.File, e)
				}
			}
		}
	}
	line := 1
	if doc != nil {
		line = doc.Node.Line
	}
	at := func(field string) int {
		if doc == nil {
			return line
		}
		pos, _ := doc.Locate(manifest.NewPath(field))
		return pos.Line
	}
	if h.APIVersion != v1alpha1.GroupVersion {
		return &TraceError{File: t.File, Line: at("apiVersion"), Msg: fmt.Sprintf("apiVersion is %q, want %s", h.APIVersion, v1alpha1.GroupVersion)}
	}
	if h.Kind != v1alpha1.TraceKind {
		return &TraceError{File: t.File, Line: at("kind"), Msg: fmt.Sprintf("kind is %q, want %s", h.Kind, v1alpha1.TraceKind)}
	}
	t.Name = h.Metadata.Name
	t.Initial = h.Initial
	t.OperatorCondition = h.OperatorCondition
	for _, o := range []struct {
		name string
		obj  map[string]interface{}
	}{{"initial", h.Initial}, {"operatorCondition", h.OperatorCondition}} {
		if o.obj == nil {
			continue
		}
		if msg, path := objectProblem(o.name, o.obj); msg != "" {
			l := line
			if doc != nil {
				pos, _ := doc.Locate(manifest.ParsePath(path))
				l = pos.Line
			}
			return &TraceError{File: t.File, Line: l, Msg: msg}
		}
	}
	if raw := bytes.TrimSpace(h.StatusSource); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		val := string(raw)
		var s string
		if json.Unmarshal(raw, &s) == nil {
			val = s // the annotation's value as a string
		}
		src, problems := contract.Parse(val)
		if len(problems) > 0 {
			return &TraceError{File: t.File, Line: at("statusSource"), Msg: "statusSource: " + problems[0].String()}
		}
		t.Declared = src
		if !t.given {
			t.Source = src
		}
	}
	// Recorded from a cluster (statuscheck record): judged as recorded
	// input is, the gate evaluated after every observed change.
	t.Recorded = h.Recorded
	t.Bridge = h.Bridge
	t.StatusSubresource = h.StatusSubresource
	if t.Initial != nil && !t.given {
		t.Identity = identityOf(t.Initial)
	}
	return nil
}

func identityOf(obj map[string]interface{}) Identity {
	u := unstructured.Unstructured{Object: obj}
	return Identity{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Name: u.GetName(), Namespace: u.GetNamespace()}
}

// IdentityOf names the object obj is.
func IdentityOf(obj map[string]interface{}) Identity { return identityOf(obj) }

// stepChunk is how many steps are parsed at once: the YAML parser's setup
// is paid once per chunk, memory stays bounded.
const stepChunk = 512

// stepReader streams the block sequence under "steps:".
type stepReader struct {
	t      *Trace
	lr     *lineReader
	indent int
	buf    []Step
	done   bool
}

func (r *stepReader) next() (Step, error) {
	for len(r.buf) == 0 {
		if r.done {
			return Step{}, io.EOF
		}
		if err := r.fill(); err != nil {
			return Step{}, err
		}
	}
	st := r.buf[0]
	r.buf = r.buf[1:]
	return st, nil
}

// fill reads up to stepChunk items and decodes them.
func (r *stepReader) fill() error {
	var chunk bytes.Buffer
	startLine := r.lr.line + 1
	items, lastItem := 0, 0
	cut := false // the input ended inside a line
	for {
		s, ok := r.lr.next()
		if !ok {
			r.done = true
			break
		}
		trimmed := strings.TrimRight(s, "\r\n")
		if blankOrComment(trimmed) {
			if chunk.Len() == 0 {
				startLine++
				continue
			}
			chunk.WriteString(s)
			continue
		}
		ind := indentOf(trimmed)
		isItem := strings.HasPrefix(trimmed[ind:], "- ") || trimmed[ind:] == "-"
		if r.indent < 0 {
			if !isItem {
				return &TraceError{File: r.t.File, Line: r.lr.line, Msg: "steps must be a block list (\"- {actor: ..., ...}\")"}
			}
			r.indent = ind
		}
		if ind < r.indent || (ind == r.indent && !isItem) {
			// The list ended, and more keys follow: not streamable here.
			return &TraceError{File: r.t.File, Line: r.lr.line, Msg: "keys after steps: put steps: last in a StatusTrace"}
		}
		if ind == r.indent && isItem {
			if items == stepChunk {
				r.lr.unread(s)
				break
			}
			items++
			lastItem = chunk.Len()
		}
		chunk.WriteString(s)
		cut = !strings.HasSuffix(s, "\n")
		if max := r.t.limits.Manifest.MaxFileSize; max > 0 && int64(chunk.Len()) > max {
			return &TraceError{File: r.t.File, Line: r.lr.line, Msg: fmt.Sprintf("a step is over the %d-byte limit", max)}
		}
	}
	if r.lr.err != nil {
		return &TraceError{File: r.t.File, Line: r.lr.line + 1, Msg: r.lr.err.Error()}
	}
	if items == 0 {
		return nil
	}
	steps, err := r.decodeChunk(chunk.Bytes(), startLine)
	if err != nil && r.done && cut {
		// A recorder killed mid-write leaves its last step cut off (a
		// step that does not parse, or "-" alone, which does): the steps
		// before it are whole; read those.
		r.t.Notes = append(r.t.Notes, fmt.Sprintf("the last step (line %d) is cut off, as a killed recorder leaves it: read up to the step before", r.lr.line))
		chunk.Truncate(lastItem)
		if items--; items == 0 {
			return nil
		}
		steps, err = r.decodeChunk(chunk.Bytes(), startLine)
	}
	if err != nil {
		return err
	}
	r.buf = append(r.buf, steps...)
	return nil
}

// decodeChunk reads a run of steps that starts at startLine.
func (r *stepReader) decodeChunk(data []byte, startLine int) ([]Step, error) {
	docs, err := manifest.Parse(r.t.File, data, r.t.limits.Manifest)
	if err != nil {
		var me *manifest.Error
		if errors.As(err, &me) {
			return nil, &TraceError{File: r.t.File, Line: me.Pos.Line + startLine - 1, Msg: me.Msg}
		}
		return nil, err
	}
	if len(docs) != 1 {
		return nil, &TraceError{File: r.t.File, Line: startLine, Msg: "steps must be one YAML list"}
	}
	list, ok := docs[0].Value.([]interface{})
	if !ok {
		return nil, &TraceError{File: r.t.File, Line: startLine, Msg: "steps must be a list"}
	}
	steps := make([]Step, 0, len(list))
	for i := range list {
		st, err := decodeStep(docs[0].At(manifest.Path{}.Index(i)), startLine-1)
		if err != nil {
			return nil, err
		}
		steps = append(steps, st)
	}
	return steps, nil
}

// Skipped lists the other objects a recording held, which were left out,
// with how often each was seen ("" for none).
func (t *Trace) Skipped() string {
	if t.differ == nil || len(t.differ.others) == 0 {
		return ""
	}
	return t.differ.otherObjects()
}

// NoSteps is the error for an input that held no step: nothing to judge
// is never a clean result.
func (t *Trace) NoSteps() error {
	if t.differ != nil {
		return t.differ.noSteps()
	}
	return &TraceError{File: t.File, Msg: "the StatusTrace has no steps: nothing to replay"}
}

// hasKey reports whether m has the key k; a nil map has none.
func hasKey(m map[string]interface{}, k string) bool {
	_, ok := m[k]
	return ok
}
