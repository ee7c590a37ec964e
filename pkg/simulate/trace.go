package simulate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/manifest"
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

// Trace APIs.
const (
	TraceAPIVersion = "statuscheck.operatorframework.io/v1alpha1"
	TraceKind       = "StatusTrace"
)

// Limits bound a trace.
type Limits struct {
	// MaxSteps is the longest trace replayed.
	MaxSteps int
	// Manifest bounds each document (a step, a snapshot, an event).
	Manifest manifest.Limits
	// MaxWhole is the largest trace read whole rather than streamed.
	MaxWhole int64
}

// DefaultLimits allow ten million steps; memory does not grow with them.
var DefaultLimits = Limits{MaxSteps: 10_000_000, Manifest: manifest.DefaultLimits, MaxWhole: 64 << 20}

// Identity names the object a recording is about.
type Identity struct {
	APIVersion, Kind, Name, Namespace string
	// Plural is the resource name audit events use; may be empty.
	Plural string
}

func (id Identity) group() string {
	g, _, _ := strings.Cut(id.APIVersion, "/")
	if !strings.Contains(id.APIVersion, "/") {
		return ""
	}
	return g
}

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
	// Source and StatusSubresource are a native trace's own context, used
	// when the command line gives none.
	Source            *contract.StatusSource
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
	// declared is a native trace's own statusSource.
	declared *contract.StatusSource
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
	Source *contract.StatusSource
	// Plural is the CRD's resource name, to match audit events exactly.
	Plural string
	Limits Limits
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
	t := &Trace{File: path, Format: format, limits: lim, Identity: opts.identity(), Source: opts.Source, given: opts.Source != nil}
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
	if _, ok := head["initial"]; !ok {
		// The steps come first, or initial follows them: read it whole.
		rest, err := io.ReadAll(io.LimitReader(br, t.limits.MaxWhole))
		if err != nil {
			return fmt.Errorf("reading %s: %w", t.File, err)
		}
		all := append(header.Bytes(), []byte("steps:\n")...)
		return nativeWhole(t, append(all, rest...))
	}
	if err := applyHeader(t, head, 1); err != nil {
		return err
	}
	sr := &stepReader{t: t, lr: lr, indent: -1}
	t.next = sr.next
	return nil
}

func parseHeader(t *Trace, data []byte) (map[string]interface{}, error) {
	docs, err := manifest.Parse(t.File, data, t.limits.Manifest)
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return map[string]interface{}{}, nil
	}
	if len(docs) > 1 {
		return nil, &TraceError{File: t.File, Line: docs[1].Node.Line, Msg: "a StatusTrace is one YAML document"}
	}
	obj := docs[0].Object()
	if obj == nil {
		return nil, &TraceError{File: t.File, Line: docs[0].Node.Line, Msg: "a StatusTrace is a YAML mapping"}
	}
	return obj, nil
}

// nativeWhole parses a StatusTrace held in memory.
func nativeWhole(t *Trace, data []byte) error {
	if int64(len(data)) > t.limits.MaxWhole {
		return &TraceError{File: t.File, Msg: fmt.Sprintf("a trace read whole may be at most %d bytes; put steps: last to stream it", t.limits.MaxWhole)}
	}
	docs, err := manifest.Parse(t.File, data, t.limits.Manifest)
	if err != nil {
		return err
	}
	if len(docs) != 1 || docs[0].Object() == nil {
		return &TraceError{File: t.File, Msg: "a StatusTrace is one YAML mapping"}
	}
	doc := docs[0]
	obj := doc.Object()
	if err := applyHeader(t, obj, 1); err != nil {
		return err
	}
	raw, ok := obj["steps"]
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
		pos, _ := doc.Locate(manifest.NewPath("steps").Index(i))
		st, err := decodeStep(t.File, pos.Line, list[i])
		i++
		return st, err
	}
	return nil
}

var headerKeys = map[string]bool{"apiVersion": true, "kind": true, "metadata": true, "initial": true, "operatorCondition": true,
	"steps": true, "statusSource": true, "statusSubresource": true, "recorded": true}

// applyHeader reads a StatusTrace's fields other than steps.
func applyHeader(t *Trace, obj map[string]interface{}, line int) error {
	for k := range obj {
		if !headerKeys[k] {
			return &TraceError{File: t.File, Line: line, Msg: fmt.Sprintf("unknown StatusTrace field %q", k)}
		}
	}
	if av, _ := obj["apiVersion"].(string); av != TraceAPIVersion {
		return &TraceError{File: t.File, Line: line, Msg: fmt.Sprintf("apiVersion is %q, want %s", av, TraceAPIVersion)}
	}
	if k, _ := obj["kind"].(string); k != TraceKind {
		return &TraceError{File: t.File, Line: line, Msg: fmt.Sprintf("kind is %q, want %s", k, TraceKind)}
	}
	if md, ok := obj["metadata"].(map[string]interface{}); ok {
		t.Name, _ = md["name"].(string)
	}
	if init, ok := obj["initial"]; ok && init != nil {
		m, ok := init.(map[string]interface{})
		if !ok {
			return &TraceError{File: t.File, Line: line, Msg: "initial must be an object (the CR as first observed) or null"}
		}
		t.Initial = m
	}
	if oc, ok := obj["operatorCondition"]; ok && oc != nil {
		m, ok := oc.(map[string]interface{})
		if !ok {
			return &TraceError{File: t.File, Line: line, Msg: "operatorCondition must be an object"}
		}
		t.OperatorCondition = m
	}
	if ss, ok := obj["statusSource"]; ok && ss != nil {
		var val string
		switch v := ss.(type) {
		case string:
			val = v
		default:
			val = compactJSON(v)
		}
		src, problems := contract.Parse(val)
		if len(problems) > 0 {
			return &TraceError{File: t.File, Line: line, Msg: "statusSource: " + problems[0].String()}
		}
		t.declared = src
		if !t.given {
			t.Source = src
		}
	}
	if rec, ok := obj["recorded"]; ok {
		b, ok := rec.(bool)
		if !ok {
			return &TraceError{File: t.File, Line: line, Msg: "recorded must be true or false"}
		}
		// Recorded from a cluster (statuscheck record): judged as recorded
		// input is, the gate evaluated after every observed change.
		t.Recorded = b
	}
	if sub, ok := obj["statusSubresource"]; ok {
		b, ok := sub.(bool)
		if !ok {
			return &TraceError{File: t.File, Line: line, Msg: "statusSubresource must be true or false"}
		}
		t.StatusSubresource = &b
	}
	if t.Initial != nil && !t.given {
		t.Identity = identityOf(t.Initial)
	}
	return nil
}

func identityOf(obj map[string]interface{}) Identity {
	id := Identity{}
	id.APIVersion, _ = obj["apiVersion"].(string)
	id.Kind, _ = obj["kind"].(string)
	if md, ok := obj["metadata"].(map[string]interface{}); ok {
		id.Name, _ = md["name"].(string)
		id.Namespace, _ = md["namespace"].(string)
	}
	return id
}

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
	for i, item := range list {
		line := startLine
		if i < len(docs[0].Node.Content) {
			line = docs[0].Node.Content[i].Line + startLine - 1
		}
		st, err := decodeStep(r.t.File, line, item)
		if err != nil {
			return nil, err
		}
		steps = append(steps, st)
	}
	return steps, nil
}

var verbs = []Verb{VerbUpdate, VerbUpdateStatus, VerbRequest, VerbCheck, VerbUpgrade, VerbCreate, VerbDelete}

// allowed says which actor may take which verb on which target (docs/contract.md
// section 8): users, operators and admins write; the operator writes
// status; OLM requests, checks, upgrades and syncs the OperatorCondition.
func allowed(a Actor, v Verb, t Target) bool {
	switch v {
	case VerbUpdate, VerbCreate, VerbDelete:
		return a == ActorUser || a == ActorOperator || a == ActorAdmin
	case VerbUpdateStatus:
		if t == TargetOperatorCondition {
			return a == ActorOLM
		}
		return a == ActorOperator
	case VerbRequest, VerbCheck, VerbUpgrade:
		return a == ActorOLM && t == TargetSource
	}
	return false
}

// decodeStep reads one step: an actor, an optional target and one verb.
func decodeStep(file string, line int, raw interface{}) (Step, error) {
	fail := func(format string, args ...interface{}) (Step, error) {
		return Step{}, &TraceError{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	m, ok := raw.(map[string]interface{})
	if !ok {
		return fail("a step is a mapping like {actor: user, update: {...}}")
	}
	st := Step{File: file, Line: line}
	var verbFound []string
	for k, v := range m {
		switch k {
		case "generation":
			g, ok := toInt(v)
			if !ok {
				return fail("generation must be an integer, not %q", fmt.Sprint(v))
			}
			st.Recorded, st.Observed = &g, true
		case "resourceVersion":
			st.ResourceVersion = fmt.Sprint(v)
		case "time":
			st.Time = fmt.Sprint(v)
		case "who":
			st.Who = fmt.Sprint(v)
		case "actor":
			s, _ := v.(string)
			switch Actor(s) {
			case ActorUser, ActorOperator, ActorOLM, ActorAdmin:
				st.Actor = Actor(s)
			default:
				return fail("unknown actor %q (want user, operator, olm or admin)", fmt.Sprint(v))
			}
		case "target":
			s, _ := v.(string)
			switch Target(s) {
			case TargetOperatorCondition:
				st.Target = TargetOperatorCondition
			case "StatusSource", "":
			default:
				return fail("unknown target %q (want OperatorCondition, or none for the status source)", fmt.Sprint(v))
			}
		default:
			known := false
			for _, vb := range verbs {
				if string(vb) == k {
					known = true
				}
			}
			if !known {
				return fail("unknown step field %q (verbs: update, updateStatus, request, check, upgrade, create, delete)", k)
			}
			verbFound = append(verbFound, k)
		}
	}
	if st.Actor == "" {
		return fail("a step needs an actor")
	}
	switch len(verbFound) {
	case 0:
		return fail("a step needs a verb (update, updateStatus, request, check, upgrade, create or delete)")
	case 1:
	default:
		return fail("one verb per step, not %s", strings.Join(verbFound, " and "))
	}
	st.Verb = Verb(verbFound[0])
	if !allowed(st.Actor, st.Verb, st.Target) {
		return fail("%s cannot %s %s", st.Actor, st.Verb, map[bool]string{true: "the OperatorCondition", false: "the status source"}[st.Target == TargetOperatorCondition])
	}
	val := m[verbFound[0]]
	switch st.Verb {
	case VerbUpdate, VerbCreate:
		mv, ok := val.(map[string]interface{})
		if !ok {
			return fail("%s needs an object", st.Verb)
		}
		st.Value = mv
	case VerbUpdateStatus:
		if val != nil {
			mv, ok := val.(map[string]interface{})
			if !ok {
				return fail("updateStatus needs the new status as an object")
			}
			st.Value = mv
		} else if st.Target != TargetOperatorCondition {
			st.Value = nil // an empty status
		}
	case VerbCheck:
		if mv, ok := val.(map[string]interface{}); ok {
			for k, ev := range mv {
				if k != "expect" {
					return fail("unknown check field %q", k)
				}
				switch contract.Verdict(fmt.Sprint(ev)) {
				case contract.Allow, contract.Block:
					st.Expect = contract.Verdict(fmt.Sprint(ev))
				default:
					return fail("expect must be Allow or Block, not %q", fmt.Sprint(ev))
				}
			}
		} else if val != nil {
			return fail("check takes {} or {expect: Allow|Block}")
		}
	case VerbRequest:
		if mv, ok := val.(map[string]interface{}); ok {
			if tok, ok := mv["token"]; ok {
				st.Value = map[string]interface{}{"token": fmt.Sprint(tok)}
			}
		}
	case VerbDelete:
		mv, ok := val.(map[string]interface{})
		if !ok && val != nil {
			return fail("delete takes {} or {propagationPolicy: Orphan|Background|Foreground}")
		}
		for k, pv := range mv {
			if k != "propagationPolicy" {
				return fail("unknown delete field %q (want propagationPolicy)", k)
			}
			switch p := fmt.Sprint(pv); p {
			case "Orphan", "Background", "Foreground":
				st.Value = map[string]interface{}{"propagationPolicy": p}
			default:
				return fail("propagationPolicy must be Orphan, Background or Foreground, not %q", p)
			}
		}
	}
	return st, nil
}
