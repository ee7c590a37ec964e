// Package manifest reads YAML and JSON manifests into documents that keep
// their positions: every value converted to its JSON form (as Kubernetes would
// see it) together with the yaml.Node tree it came from, so that any field
// path can be traced back to a file, line and column.
//
// Parsing is bounded: file size, document count, nesting depth and alias
// expansion all have limits (see Limits), and exceeding one is an error that
// names the file and line, never a panic or a runaway allocation.
package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// Limits bound the cost of reading one manifest file.
type Limits struct {
	// MaxFileSize is the largest file read, in bytes.
	MaxFileSize int64
	// MaxDocuments is the most YAML documents one file may hold.
	MaxDocuments int
	// MaxDepth is the deepest nesting of mappings and sequences.
	MaxDepth int
	// MaxAliasNodes is how many nodes alias expansion may produce per
	// document beyond the document's own size.
	MaxAliasNodes int
}

// DefaultLimits are generous for real manifests: the largest manifest in the
// corpus is a 1.8 MB CRD and the deepest nests 37 levels, while etcd refuses
// objects over about 1.5 MiB anyway.
var DefaultLimits = Limits{
	MaxFileSize:   16 << 20,
	MaxDocuments:  1000,
	MaxDepth:      512,
	MaxAliasNodes: 200_000,
}

// Position is a place in a file. Line and Column are 1-based; zero means
// unknown (a finding about a whole file or directory).
type Position struct {
	File   string
	Line   int
	Column int
}

// String renders file:line:column, leaving out what is unknown.
func (p Position) String() string {
	switch {
	case p.Line == 0:
		return p.File
	case p.Column == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	default:
		return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Column)
	}
}

// Error is a problem reading a manifest, with its position.
type Error struct {
	Pos Position
	Msg string
	// Limit is set when a documented limit was exceeded.
	Limit bool
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// Document is one YAML or JSON document of a file.
type Document struct {
	// File is the path the document was read from, as the caller named it.
	File string
	// Index is the 0-based position of the document in its file.
	Index int
	// Node is the document's root value (not the yaml DocumentNode).
	Node *yaml.Node
	// Value is the document converted to JSON values: map[string]interface{},
	// []interface{}, string, int64, float64, bool or nil.
	Value interface{}

	// src is the text of the file the document was parsed from (UTF-8),
	// for Digest; nil for a document Parse did not make.
	src []byte
}

// Digest identifies the document's text without reading its values: the
// SHA-256, in hex, of the file it was parsed from (as UTF-8) and of its
// index there, not of its File. Two documents with the same digest have
// the same text, so whatever is computed from their text and index alone
// holds for both (two of the same content written differently differ).
// It is "" for a document Parse did not make (At's, or one built by
// hand): the caller then has to compare the values. Parse keeps the text
// it was given and Digest reads it when called, so the guarantee holds
// while the caller leaves that text and the document's Value as Parse
// left them.
func (d *Document) Digest() string {
	if d == nil || d.src == nil {
		return ""
	}
	h := sha256.New()
	h.Write(d.src)
	fmt.Fprintf(h, "\x00%d", d.Index)
	return hex.EncodeToString(h.Sum(nil))
}

// Object returns the document as a JSON object, or nil when it is not one.
func (d *Document) Object() map[string]interface{} {
	m, _ := d.Value.(map[string]interface{})
	return m
}

// Pos returns the position of the document's root.
func (d *Document) Pos() Position {
	return Position{File: d.File, Line: d.Node.Line, Column: d.Node.Column}
}

// Locate returns the position of the node at path. When the path does not
// exist it returns the position of its deepest existing ancestor and
// exact=false, so a missing field still points somewhere useful.
func (d *Document) Locate(p Path) (pos Position, exact bool) {
	n, exact := locate(d.Node, p)
	return Position{File: d.File, Line: n.Line, Column: n.Column}, exact
}

// Found is the part of p that exists in the document: the node Locate and
// LocateKey point at when p does not exist.
func (d *Document) Found(p Path) Path {
	return p[:locateDepth(d.Node, p)]
}

// locateDepth is how many elements of p exist in n.
func locateDepth(n *yaml.Node, p Path) int {
	for depth := len(p); depth > 0; depth-- {
		if _, ok := locate(n, p[:depth]); ok {
			return depth
		}
	}
	return 0
}

// LocateKey is Locate, but for a mapping entry it returns the position of the
// key rather than of the value ("annotations:" rather than its first entry).
func (d *Document) LocateKey(p Path) (pos Position, exact bool) {
	if len(p) == 0 {
		return d.Locate(p)
	}
	parent, ok := locate(d.Node, p[:len(p)-1])
	if ok {
		if k := mappingKey(parent, p[len(p)-1]); k != nil {
			return Position{File: d.File, Line: k.Line, Column: k.Column}, true
		}
	}
	return d.Locate(p)
}

// Parse reads every document of data. A syntax error stops the reading; the
// documents before it are returned along with the error. Empty documents are
// skipped. The documents keep data for Digest: the caller must not change
// it afterwards.
func Parse(file string, data []byte, lim Limits) (docs []*Document, err error) {
	defer func() {
		// The YAML parser is not supposed to panic; if it ever does on some
		// input, that input is reported rather than taking the process down.
		if r := recover(); r != nil {
			err = &Error{Pos: Position{File: file}, Msg: fmt.Sprintf("cannot parse: %v", r)}
		}
	}()
	if lim.MaxFileSize > 0 && int64(len(data)) > lim.MaxFileSize {
		return nil, &Error{Pos: Position{File: file}, Limit: true,
			Msg: fmt.Sprintf("file is %d bytes, over the %d-byte limit", len(data), lim.MaxFileSize)}
	}
	if utf8Data, msg, ok := fromUTF16(data); ok {
		if msg != "" {
			return nil, &Error{Pos: Position{File: file, Line: 1, Column: 1}, Msg: msg}
		}
		data = utf8Data
	}
	if msg := checkEncoding(data); msg != "" {
		return nil, &Error{Pos: Position{File: file, Line: 1, Column: 1}, Msg: msg}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for index := 0; ; index++ {
		var n yaml.Node
		if derr := dec.Decode(&n); derr != nil {
			if errors.Is(derr, io.EOF) {
				return docs, nil
			}
			return docs, syntaxError(file, data, derr)
		}
		root := &n
		if root.Kind == yaml.DocumentNode {
			if len(root.Content) == 0 {
				continue
			}
			root = root.Content[0]
		}
		if root.Kind == yaml.ScalarNode && root.Tag == "!!null" && root.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0 {
			continue // an empty document between separators
		}
		if lim.MaxDocuments > 0 && len(docs) >= lim.MaxDocuments {
			return docs, &Error{Pos: Position{File: file, Line: root.Line, Column: root.Column}, Limit: true,
				Msg: fmt.Sprintf("more than %d documents in one file", lim.MaxDocuments)}
		}
		c := converter{file: file, lim: lim, src: data, root: root}
		v, cerr := c.value(root, 0)
		if cerr != nil {
			return docs, cerr
		}
		docs = append(docs, &Document{File: file, Index: index, Node: root, Value: v, src: data})
	}
}

// Convert turns one node read from a stream (a yaml.v3 Decoder on a
// reader) into its JSON value with Kubernetes' scalar rules and the limits.
func Convert(file string, n *yaml.Node, lim Limits) (v interface{}, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &Error{Pos: Position{File: file, Line: n.Line, Column: n.Column}, Msg: fmt.Sprintf("cannot convert: %v", r)}
		}
	}()
	c := converter{file: file, lim: lim}
	return c.value(n, 0)
}

// fromUTF16 turns UTF-16 text with a byte order mark, which YAML allows
// and the YAML parsers decode, into UTF-8, so that every check that reads
// the text sees the characters the parser saw. ok is false when data is not
// UTF-16; msg says why UTF-16 text cannot be read.
func fromUTF16(data []byte) (out []byte, msg string, ok bool) {
	var order binary.ByteOrder
	switch {
	case bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		order = binary.BigEndian
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}):
		order = binary.LittleEndian
	default:
		return nil, "", false
	}
	if len(data)%2 != 0 {
		return nil, "UTF-16 text with an odd number of bytes", true
	}
	units := make([]uint16, 0, len(data)/2-1)
	for i := 2; i+1 < len(data); i += 2 {
		units = append(units, order.Uint16(data[i:]))
	}
	// The byte order mark stays, as a UTF-8 one: the parser treats a mark
	// at the start of a stream differently from one after it.
	out = append(make([]byte, 0, 3+len(units)), "\ufeff"...)
	for i := 0; i < len(units); i++ {
		r := rune(units[i])
		if utf16.IsSurrogate(r) {
			if i+1 >= len(units) {
				return nil, "UTF-16 text ends inside a surrogate pair", true
			}
			r = utf16.DecodeRune(r, rune(units[i+1]))
			if r == utf8.RuneError {
				return nil, "invalid UTF-16 surrogate pair", true
			}
			i++
		}
		out = utf8.AppendRune(out, r)
	}
	return out, "", true
}

// checkEncoding rejects what the YAML parser would misreport: binary bytes
// and text that is neither UTF-8 nor UTF-16 with a byte order mark.
func checkEncoding(data []byte) string {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		line := 1 + bytes.Count(data[:i], []byte{'\n'})
		return fmt.Sprintf("binary content (a NUL byte on line %d); not a YAML or JSON manifest", line)
	}
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, size := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			off += size
		}
		line := 1 + bytes.Count(data[:off], []byte{'\n'})
		return fmt.Sprintf("invalid UTF-8 (byte 0x%02x at offset %d, line %d); manifests must be UTF-8", data[off], off, line)
	}
	return ""
}

var (
	lineRE   = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	anchorRE = regexp.MustCompile(`^unknown anchor '([^']+)' referenced`)
)

// syntaxError turns a go.yaml.in/yaml/v3 error ("yaml: line 7: ...") into an
// Error with a position. The parser names the line where the enclosing
// construct began (its context mark), which for an indentation slip in a
// large CSV can be hundreds of lines above the mistake. problemLine narrows
// it down to the first line at which the text stops parsing; the column is
// the first non-blank character of that line, or the offending character
// where the message names one.
func syntaxError(file string, data []byte, err error) *Error {
	msg := err.Error()
	pos := Position{File: file}
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		msg = m[2]
		pos.Line = problemLine(data, line, err.Error())
		pos.Column = columnOf(data, pos.Line, msg)
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
		if m := anchorRE.FindStringSubmatch(msg); m != nil {
			// "unknown anchor 'x' referenced" carries no line: find the alias.
			if i := bytes.Index(data, []byte("*"+m[1])); i >= 0 {
				pos.Line = 1 + bytes.Count(data[:i], []byte{'\n'})
				start := bytes.LastIndexByte(data[:i], '\n') + 1
				pos.Column = utf8.RuneCount(data[start:i]) + 1
			}
		}
	}
	return &Error{Pos: pos, Msg: "invalid YAML: " + msg}
}

// problemLine finds, by bisection, the smallest line count L >= from such
// that the first L lines fail to parse with the same message as the whole
// file. Block-style YAML parses cleanly up to the line before a mistake, so L
// is the line of the mistake.
func problemLine(data []byte, from int, want string) int {
	starts := LineStarts(data)
	ends := append(starts[1:], len(data)) // ends[i] is the offset just past line i+1
	if from < 1 || from > len(ends) {
		return from
	}
	fails := func(lines int) bool {
		return parseError(data[:ends[lines-1]]) == want
	}
	lo, hi := from, len(ends)
	if !fails(hi) {
		return from
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

func parseError(data []byte) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return ""
			}
			return err.Error()
		}
	}
}

func columnOf(data []byte, line int, msg string) int {
	text := lineText(data, line)
	if text == nil {
		return 0
	}
	switch {
	case bytes.Contains([]byte(msg), []byte("found a tab character")) || bytes.Contains([]byte(msg), []byte("found character that cannot start any token")):
		if i := bytes.IndexByte(text, '\t'); i >= 0 {
			return utf8.RuneCount(text[:i]) + 1
		}
	case bytes.Contains([]byte(msg), []byte("mapping values are not allowed")):
		// "a: b: c" puts the second ": " at fault; a continuation line of a
		// multi-line plain scalar ("   key: value" indented too far) its first.
		if i := bytes.Index(text, []byte(": ")); i >= 0 {
			if j := bytes.Index(text[i+2:], []byte(": ")); j >= 0 {
				return utf8.RuneCount(text[:i+2+j]) + 1
			}
			return utf8.RuneCount(text[:i]) + 1
		}
	}
	for i, c := range text {
		if c != ' ' && c != '\t' {
			return utf8.RuneCount(text[:i]) + 1
		}
	}
	return 1
}

func lineText(data []byte, line int) []byte {
	starts := LineStarts(data)
	if line < 1 || line > len(starts) {
		return nil
	}
	text := data[starts[line-1]:]
	if line < len(starts) {
		text = data[starts[line-1]:starts[line]]
	}
	return bytes.TrimRight(text, "\r\n\u0085\u2028\u2029")
}

// LineStarts gives the offset at which each line begins, counting line
// breaks as YAML does (and so as node positions count lines): CRLF, CR,
// LF, and the Unicode NEL, LS and PS.
func LineStarts(data []byte) []int {
	starts := []int{0}
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '\n':
			starts = append(starts, i+1)
		case c == '\r':
			if i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
			starts = append(starts, i+1)
		case c >= 0xC2: // NEL, LS and PS are UTF-8 sequences from 0xC2 up
			if n := lineBreakLen(data[i:]); n > 0 {
				i += n - 1
				starts = append(starts, i+1)
			}
		}
	}
	return starts
}

// Offsets turns node positions into byte offsets in the text they were
// parsed from, counting as go.yaml.in/yaml/v3 counts: lines broken as
// LineStarts breaks them, columns in runes, a UTF-8 byte order mark not
// counted. A query costs the same however long the line is (a minified
// JSON manifest is one line), so asking for every node stays linear.
type Offsets struct {
	data []byte
	// Starts holds the offset of each line's first column.
	Starts []int
	lines  []*lineIndex // built for a line when it is first asked about
}

// markEvery is how many runes apart lineIndex keeps a byte offset.
const markEvery = 64

// lineIndex describes one line: all ASCII (a column is a byte), or else the
// byte offset of every markEvery-th rune.
type lineIndex struct {
	ascii bool
	bytes int   // the line's length, line break included
	marks []int // offsets of runes 0, markEvery, 2*markEvery, ...
}

// NewOffsets indexes the lines of data.
func NewOffsets(data []byte) *Offsets {
	bom := 0
	if bytes.HasPrefix(data, []byte("\ufeff")) {
		bom = 3
	}
	starts := LineStarts(data[bom:])
	for i := range starts {
		starts[i] += bom
	}
	return &Offsets{data: data, Starts: starts}
}

// Offset gives the byte offset of a 1-based line and column, or the text's
// length when the line is not in it.
func (o *Offsets) Offset(line, col int) int {
	if line < 1 || line > len(o.Starts) {
		return len(o.data)
	}
	li := o.index(line)
	off, skip := o.Starts[line-1], col-1 // skip: runes still to pass
	switch {
	case skip <= 0:
		return off
	case li.ascii && skip <= li.bytes:
		return off + skip
	case li.ascii:
		off, skip = off+li.bytes, skip-li.bytes
	default:
		m := min(skip/markEvery, len(li.marks)-1)
		off, skip = li.marks[m], skip-m*markEvery
	}
	for ; skip > 0 && off < len(o.data); skip-- { // past the marks: rune by rune
		_, size := utf8.DecodeRune(o.data[off:])
		off += size
	}
	return off
}

func (o *Offsets) index(line int) *lineIndex {
	if o.lines == nil {
		o.lines = make([]*lineIndex, len(o.Starts))
	}
	if li := o.lines[line-1]; li != nil {
		return li
	}
	start, end := o.Starts[line-1], len(o.data)
	if line < len(o.Starts) {
		end = o.Starts[line]
	}
	li := &lineIndex{ascii: true, bytes: end - start}
	for _, b := range o.data[start:end] {
		if b >= utf8.RuneSelf {
			li.ascii = false
			break
		}
	}
	if !li.ascii {
		for off, n := start, 0; off < end; n++ {
			if n%markEvery == 0 {
				li.marks = append(li.marks, off)
			}
			_, size := utf8.DecodeRune(o.data[off:])
			off += size
		}
	}
	o.lines[line-1] = li
	return li
}

// converter turns a yaml.Node tree into JSON values with Kubernetes' scalar
// rules, enforcing the depth and alias limits.
type converter struct {
	file       string
	lim        Limits
	plainNodes int
	aliasNodes int
	inAlias    int
	// expanding holds the anchors being expanded, to catch cycles.
	expanding map[*yaml.Node]bool
	// src is the text parsed, to see what the node tree cannot show, and
	// offsets, built when first needed, its positions.
	src     []byte
	offsets *Offsets
	// root is the document being converted, and lastAt, built when first
	// needed, the last node in it at each position.
	root   *yaml.Node
	lastAt map[[2]int]*yaml.Node
}

// startsWithBang reports whether n's properties, at n's position, hold
// the non-specific tag "!", which go.yaml.in/yaml/v3 drops from the node but
// which makes go.yaml.in/yaml/v2 (and so Kubernetes) read the scalar as a
// string. yaml.v3 places a node at its first property, so the tag may come
// after an anchor ("&a ! 0"), even on a later line; a plain scalar cannot
// begin with "!" or "&", so the text tells.
//
// An empty node is the exception: yaml.v3 places it where its scanner
// stood, which may be inside a comment ("? a\n#!") or at the next node.
// So the position counts only when it is the start of a property token,
// after an indicator or at the start of a line, and, for an empty node,
// when no content follows the properties.
func (c *converter) startsWithBang(n *yaml.Node) bool {
	if c.src == nil || n.Line < 1 || n.Column < 1 {
		return false
	}
	if c.offsets == nil {
		if bytes.IndexByte(c.src, '!') < 0 {
			c.src = nil // no "!" anywhere: nothing to look for, ever
			return false
		}
		c.offsets = NewOffsets(c.src)
	}
	off := c.offsets.Offset(n.Line, n.Column)
	if off >= len(c.src) || (c.src[off] != '!' && c.src[off] != '&') {
		return false
	}
	lineStart := c.offsets.Starts[n.Line-1] // off is in the text, so the line is
	j := off - 1
	for j >= lineStart && (c.src[j] == ' ' || c.src[j] == '\t') {
		j--
	}
	if j >= lineStart && bytes.IndexByte([]byte(":-?,[{"), c.src[j]) < 0 {
		return false // not where a node's properties can start: a comment
	}
	tag, rest := properties(c.src[off:])
	if tag != "!" && tag != "!<!>" { // "!<!>" is "!" written verbatim
		return false
	}
	if n.Value == "" && n.Style == 0 && (!endsNode(rest) || c.placedAtNext(n)) {
		return false // the properties of the node that follows
	}
	return true
}

// placedAtNext reports whether a node after n in the document (in the
// order the text lists them) sits at n's position: then n is an empty node
// placed at the next one's properties ("? 0\n! :"), and they are not n's.
func (c *converter) placedAtNext(n *yaml.Node) bool {
	if c.root == nil {
		return false
	}
	if c.lastAt == nil {
		c.lastAt = map[[2]int]*yaml.Node{}
		var walk func(*yaml.Node)
		walk = func(m *yaml.Node) {
			c.lastAt[[2]int{m.Line, m.Column}] = m
			for _, ch := range m.Content {
				walk(ch)
			}
		}
		walk(c.root)
	}
	last := c.lastAt[[2]int{n.Line, n.Column}]
	return last != nil && last != n
}

// properties reads the node properties (YAML 1.2 §6.9: an anchor and a
// tag, in either order, separated by blanks, line breaks or comments) at the
// start of b. It gives the tag as written ("" when there is none) and what
// follows the properties.
func properties(b []byte) (tag string, rest []byte) {
	blank := func(i int) int { // bytes of the blank or line break at i, or 0
		if i < len(b) && (b[i] == ' ' || b[i] == '\t') {
			return 1
		}
		return lineBreakLen(b[i:])
	}
	ends := func(i int) bool {
		return blank(i) > 0 || b[i] == ',' || b[i] == '[' || b[i] == ']' || b[i] == '{' || b[i] == '}'
	}
	i := 0
	for props := 0; props < 2; props++ {
		j := i
		for afterBlank := false; j < len(b); {
			if n := blank(j); n > 0 {
				j += n
				afterBlank = true
				continue
			}
			if b[j] == '#' && afterBlank { // a comment runs to the line's end
				for j < len(b) && lineBreakLen(b[j:]) == 0 {
					j++
				}
				continue
			}
			break
		}
		if j >= len(b) || (b[j] != '&' && b[j] != '!') || (props > 0 && j == i) {
			break
		}
		start := j
		for j < len(b) && !ends(j) {
			j++
		}
		if b[start] == '!' {
			if tag != "" {
				break // a second tag: not properties yaml.v3 accepts
			}
			tag = string(b[start:j])
		}
		i = j
	}
	return tag, b[i:]
}

// endsNode reports whether b, what follows a node's properties, holds no
// content: only blanks, a comment, a line break, the end, or an indicator
// that closes the node (",", "]", "}" or a ":" before a value).
func endsNode(b []byte) bool {
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case ' ', '\t':
			continue
		case '#', ',', ']', '}':
			return true
		case ':':
			return i+1 == len(b) || bytes.IndexByte([]byte(" \t,]}"), b[i+1]) >= 0 || lineBreakLen(b[i+1:]) > 0
		}
		return lineBreakLen(b[i:]) > 0
	}
	return true
}

// lineBreakLen gives the length of the line break at the start of b, 0 when
// there is none: CR, LF, and the Unicode breaks YAML 1.1 (and so
// go.yaml.in/yaml/v3) knows too, NEL (U+0085), LS (U+2028) and PS (U+2029).
// A CRLF is two breaks to it; LineStarts joins them.
func lineBreakLen(b []byte) int {
	switch {
	case len(b) >= 1 && (b[0] == '\n' || b[0] == '\r'):
		return 1
	case len(b) >= 2 && b[0] == 0xC2 && b[1] == 0x85:
		return 2
	case len(b) >= 3 && b[0] == 0xE2 && b[1] == 0x80 && (b[2] == 0xA8 || b[2] == 0xA9):
		return 3
	}
	return 0
}

func (c *converter) errorf(n *yaml.Node, limit bool, format string, args ...interface{}) *Error {
	return &Error{Pos: Position{File: c.file, Line: n.Line, Column: n.Column}, Limit: limit, Msg: fmt.Sprintf(format, args...)}
}

func (c *converter) count(n *yaml.Node) *Error {
	if c.inAlias > 0 {
		c.aliasNodes++
		// Like yaml.v3's own guard, aliases may not multiply the document:
		// past MaxAliasNodes they may produce no more than the document has.
		if c.lim.MaxAliasNodes > 0 && c.aliasNodes > c.lim.MaxAliasNodes && c.aliasNodes > c.plainNodes {
			return c.errorf(n, true, "aliases expand to more than %d nodes (a YAML alias bomb?)", c.lim.MaxAliasNodes)
		}
		return nil
	}
	c.plainNodes++
	return nil
}

func (c *converter) value(n *yaml.Node, depth int) (interface{}, error) {
	if err := c.count(n); err != nil {
		return nil, err
	}
	if c.lim.MaxDepth > 0 && depth > c.lim.MaxDepth {
		return nil, c.errorf(n, true, "nesting deeper than %d levels", c.lim.MaxDepth)
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return c.scalar(n)
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, c.errorf(n, false, "unknown alias %q", n.Value)
		}
		if err := c.enter(n); err != nil {
			return nil, err
		}
		v, err := c.value(n.Alias, depth)
		c.leave(n)
		return v, err
	case yaml.SequenceNode:
		out := make([]interface{}, 0, len(n.Content))
		for _, item := range n.Content {
			v, err := c.value(item, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]interface{}, len(n.Content)/2)
		if err := c.mapping(n, out, depth); err != nil {
			return nil, err
		}
		return out, nil
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.value(n.Content[0], depth)
	}
	return nil, c.errorf(n, false, "unexpected YAML node")
}

// IsMergeKey reports whether mapping key k is a merge key (<<).
func IsMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && k.Tag == "!!merge"
}

// mapping fills out from n. Merge keys ("<<") follow go.yaml.in/yaml/v2:
// a merged mapping sets its keys in place, and for a list of mappings the
// first one listed wins.
func (c *converter) mapping(n *yaml.Node, out map[string]interface{}, depth int) error {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if IsMergeKey(k) {
			if err := c.merge(v, out, depth); err != nil {
				return err
			}
			continue
		}
		if err := c.count(k); err != nil {
			return err
		}
		key, err := c.key(k)
		if err != nil {
			return err
		}
		val, err := c.value(v, depth+1)
		if err != nil {
			return err
		}
		out[key] = val
	}
	return nil
}

// enter starts expanding an alias, refusing one whose anchor contains it
// (go.yaml.in/yaml/v2: "anchor 'a' value contains itself").
func (c *converter) enter(alias *yaml.Node) error {
	if c.expanding == nil {
		c.expanding = map[*yaml.Node]bool{}
	}
	if c.expanding[alias.Alias] {
		return c.errorf(alias, false, "anchor %q value contains itself", alias.Value)
	}
	c.expanding[alias.Alias] = true
	c.inAlias++
	return nil
}

func (c *converter) leave(alias *yaml.Node) {
	delete(c.expanding, alias.Alias)
	c.inAlias--
}

func (c *converter) merge(v *yaml.Node, out map[string]interface{}, depth int) error {
	if err := c.count(v); err != nil {
		return err
	}
	mergeOne := func(n *yaml.Node) error {
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			if err := c.enter(n); err != nil {
				return err
			}
			defer c.leave(n)
			n = n.Alias
		}
		if n.Kind != yaml.MappingNode {
			return c.errorf(n, false, "map merge requires map or sequence of maps as the value")
		}
		return c.mapping(n, out, depth+1)
	}
	target := v
	if target.Kind == yaml.AliasNode && target.Alias != nil && target.Alias.Kind == yaml.SequenceNode {
		if err := c.enter(target); err != nil {
			return err
		}
		defer c.leave(target)
		target = target.Alias
	}
	if target.Kind != yaml.SequenceNode {
		return mergeOne(target)
	}
	for i := len(target.Content) - 1; i >= 0; i-- {
		if err := mergeOne(target.Content[i]); err != nil {
			return err
		}
	}
	return nil
}

func (c *converter) key(k *yaml.Node) (string, error) {
	if k.Kind == yaml.AliasNode && k.Alias != nil {
		k = k.Alias
	}
	if k.Kind != yaml.ScalarNode {
		return "", c.errorf(k, false, "a mapping key must be a scalar, not %s", KindName(k.Kind))
	}
	kind, v, err := c.resolve(k)
	if err != nil {
		return "", err
	}
	if kind == kindTimestamp {
		return k.Value, nil // as for values: the text it was written as
	}
	s, ok := keyString(kind, v)
	if !ok {
		return "", c.errorf(k, false, "unsupported mapping key %q (JSON keys are strings)", k.Value)
	}
	return s, nil
}

func (c *converter) scalar(n *yaml.Node) (interface{}, error) {
	kind, v, err := c.resolve(n)
	if err != nil {
		return nil, err
	}
	switch kind {
	case kindTimestamp:
		// go.yaml.in/yaml/v2 keeps a timestamp decoded into interface{} as
		// the string it was written as, "for backward compatibility"; so
		// sigs.k8s.io/yaml, and Kubernetes, see the text.
		return n.Value, nil
	case kindFloat:
		f := v.(float64)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, c.errorf(n, false, "%q has no JSON form (NaN and infinities are not JSON numbers)", n.Value)
		}
	}
	return v, nil
}

// resolve gives a scalar's kind and value. Quoted and block scalars are
// strings; plain ones follow YAML 1.1 as Kubernetes does; explicit tags are
// honoured.
func (c *converter) resolve(n *yaml.Node) (scalarKind, interface{}, error) {
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 && n.Style&yaml.TaggedStyle == 0 {
		return kindStr, n.Value, nil
	}
	if n.Style&yaml.TaggedStyle == 0 {
		if c.startsWithBang(n) {
			return kindStr, n.Value, nil
		}
		kind, v := resolvePlain(n.Value)
		return kind, v, nil
	}
	switch n.Tag {
	case "!!str":
		return kindStr, n.Value, nil
	case "!!binary":
		// go.yaml.in/yaml/v2 (decode.go, scalar) hands on the decoded bytes
		// as a string; Go's base64 skips the line breaks of a block scalar.
		data, err := base64.StdEncoding.DecodeString(n.Value)
		if err != nil {
			return 0, nil, c.errorf(n, false, "!!binary value contains invalid base64 data")
		}
		return kindStr, string(data), nil
	case "!!null":
		return kindNull, nil, nil
	case "!!bool", "!!int", "!!float", "!!timestamp":
		kind, v := resolvePlain(n.Value)
		want := map[string]scalarKind{"!!bool": kindBool, "!!int": kindInt, "!!float": kindFloat, "!!timestamp": kindTimestamp}[n.Tag]
		if kind == kindInt && want == kindFloat {
			switch iv := v.(type) {
			case int64:
				return kindFloat, float64(iv), nil
			case float64:
				return kindFloat, iv, nil
			}
		}
		if kind != want {
			return 0, nil, c.errorf(n, false, "cannot decode %q as %s", n.Value, n.Tag)
		}
		return kind, v, nil
	}
	// Other tags (local "!foo" ones) keep the text, as go-yaml v2 does.
	return kindStr, n.Value, nil
}

// KindName names a YAML node kind for messages ("a mapping", "a sequence").
func KindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a sequence"
	case yaml.ScalarNode:
		return "a scalar"
	case yaml.AliasNode:
		return "an alias"
	}
	return "a document"
}

// locate walks p from n, returning the deepest node reached and whether the
// whole path was found.
func locate(n *yaml.Node, p Path) (*yaml.Node, bool) {
	cur := n
	for _, e := range p {
		if cur.Kind == yaml.AliasNode && cur.Alias != nil {
			cur = cur.Alias
		}
		var next *yaml.Node
		switch e.kind {
		case indexElem:
			if cur.Kind == yaml.SequenceNode && e.index >= 0 && e.index < len(cur.Content) {
				next = cur.Content[e.index]
			}
		default:
			next = MappingValue(cur, e.name)
		}
		if next == nil {
			return cur, false
		}
		cur = next
	}
	if cur.Kind == yaml.AliasNode && cur.Alias != nil {
		// Point at the alias itself: that is where the user wrote the value.
		return cur, true
	}
	return cur, true
}

func mappingKey(n *yaml.Node, e PathElem) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode || e.kind == indexElem {
		return nil
	}
	var found *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Value == e.name && !IsMergeKey(k) {
			found = k // the last one wins, as in the decoded value
		}
	}
	return found
}

// MappingValue is the value of key name in mapping node n, following
// merge keys (<<) as the conversion does; nil when there is none.
func MappingValue(n *yaml.Node, name string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	var found *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Value == name && !IsMergeKey(k) {
			found = n.Content[i+1]
		}
	}
	if found != nil {
		return found
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !IsMergeKey(n.Content[i]) {
			continue
		}
		m := n.Content[i+1]
		if m.Kind == yaml.AliasNode && m.Alias != nil {
			m = m.Alias
		}
		switch m.Kind {
		case yaml.MappingNode:
			if v := MappingValue(m, name); v != nil {
				return v
			}
		case yaml.SequenceNode:
			for _, item := range m.Content {
				if item.Kind == yaml.AliasNode && item.Alias != nil {
					item = item.Alias
				}
				if v := MappingValue(item, name); v != nil {
					return v
				}
			}
		}
	}
	return nil
}

// At is the part of the document at path p, as a document of its own (its
// node and its converted value), for decoding one piece at a time; nil
// when p does not exist.
func (d *Document) At(p Path) *Document {
	n, ok := locate(d.Node, p)
	if !ok {
		return nil
	}
	var v interface{} = d.Value
	for _, e := range p {
		switch e.kind {
		case indexElem:
			l, _ := v.([]interface{})
			if e.index < 0 || e.index >= len(l) {
				return nil
			}
			v = l[e.index]
		default:
			m, _ := v.(map[string]interface{})
			v = m[e.name]
		}
	}
	return &Document{File: d.File, Index: d.Index, Node: n, Value: v}
}

// JSONKind is the JSON kind a node decodes to, with Kubernetes' scalar
// rules: "object", "array", "string", "number", "bool" or "null" ("" for
// a scalar that does not resolve, or an alias).
func JSONKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "object"
	case yaml.SequenceNode:
		return "array"
	case yaml.ScalarNode:
		c := converter{}
		kind, _, err := c.resolve(n)
		if err != nil {
			return ""
		}
		switch kind {
		case kindBool:
			return "bool"
		case kindInt, kindFloat:
			return "number"
		case kindNull:
			return "null"
		}
		return "string"
	}
	return ""
}
