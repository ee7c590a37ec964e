package generate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"

	"github.com/statuscheck/statuscheck/pkg/manifest"
)

// The editor changes one annotation of one document and leaves every other
// byte where it was: comments, key order, quoting, indentation, other
// annotations and line endings. It works on the text, guided by the
// positions go.yaml.in/yaml/v3 gives every node: the value of an existing
// entry is cut out and replaced, a new entry is spliced in after the last
// entry of its mapping. SetAnnotation's caller checks the result by parsing
// it again (see Verify), so a mistake here can never reach a file.

// ErrNoCSV is returned when the text holds no ClusterServiceVersion.
var ErrNoCSV = errors.New("no ClusterServiceVersion document")

// text is the file being edited, with its line structure.
type text struct {
	data []byte
	pos  *manifest.Offsets // node positions to byte offsets
	nl   string
	step int // the indentation step of the document
	// seqIndent is how far a block sequence's dashes sit past its key.
	seqIndent int
}

func newText(data []byte) (*text, error) {
	if bytes.HasPrefix(data, []byte{0xFE, 0xFF}) || bytes.HasPrefix(data, []byte{0xFF, 0xFE}) {
		return nil, errors.New("the file is UTF-16; generate edits UTF-8 files only")
	}
	t := &text{data: data, nl: "\n", pos: manifest.NewOffsets(data)}
	// New lines are written the way the file's first line ends.
	if starts := t.pos.Starts; len(starts) > 1 && bytes.HasSuffix(data[:starts[1]], []byte("\r\n")) {
		t.nl = "\r\n"
	}
	return t, nil
}

func (t *text) nodeOffset(n *yaml.Node) int { return t.pos.Offset(n.Line, n.Column) }

// lineEnd is the offset of the line break ending the line holding off (or
// the end of the data).
func (t *text) lineEnd(off int) int {
	for i := off; i < len(t.data); i++ {
		if t.data[i] == '\n' || t.data[i] == '\r' {
			return i
		}
	}
	return len(t.data)
}

// nextLine is the offset of the line after the one holding off.
func (t *text) nextLine(off int) int {
	e := t.lineEnd(off)
	if e < len(t.data) && t.data[e] == '\r' && e+1 < len(t.data) && t.data[e+1] == '\n' {
		return e + 2
	}
	if e < len(t.data) {
		return e + 1
	}
	return e
}

// indentOf counts the leading spaces of the line starting at off.
func (t *text) indentOf(off int) int {
	n := 0
	for off+n < len(t.data) && t.data[off+n] == ' ' {
		n++
	}
	return n
}

// blankOrComment reports whether the line at off holds nothing but
// whitespace or a comment.
func (t *text) blankOrComment(off int) bool {
	e := t.lineEnd(off)
	s := bytes.TrimLeft(t.data[off:e], " \t")
	return len(s) == 0 || s[0] == '#'
}

func (t *text) blank(off int) bool {
	e := t.lineEnd(off)
	return len(bytes.TrimSpace(t.data[off:e])) == 0
}

// skipProperties moves past a value's tag and anchor ("!!str &a 'x'"),
// which the node's position points at.
func (t *text) skipProperties(off int, n *yaml.Node) int {
	for off < len(t.data) && (t.data[off] == '!' || t.data[off] == '&') {
		for off < len(t.data) && t.data[off] != ' ' && t.data[off] != '\t' && t.data[off] != '\n' && t.data[off] != '\r' {
			off++
		}
		for off < len(t.data) && (t.data[off] == ' ' || t.data[off] == '\t') {
			off++
		}
		if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0 && off < len(t.data) && (t.data[off] == '\n' || t.data[off] == '\r') {
			// The value continues on the next line.
			off = t.nextLine(off)
			for off < len(t.data) && t.data[off] == ' ' {
				off++
			}
		}
	}
	return off
}

// scalarEnd finds where the scalar n, starting at off, ends. keyIndent is
// the indentation of the key it belongs to (block context) and flow is set
// inside a flow collection.
func (t *text) scalarEnd(off int, n *yaml.Node, keyIndent int, flow bool) (int, error) {
	d := t.data
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		for i := off + 1; i < len(d); i++ {
			switch d[i] {
			case '\\':
				i++
			case '"':
				return i + 1, nil
			}
		}
		return 0, errors.New("unterminated double-quoted scalar")
	case n.Style&yaml.SingleQuotedStyle != 0:
		for i := off + 1; i < len(d); i++ {
			if d[i] == '\'' {
				if i+1 < len(d) && d[i+1] == '\'' {
					i++
					continue
				}
				return i + 1, nil
			}
		}
		return 0, errors.New("unterminated single-quoted scalar")
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		// The header line, then every line that is blank or indented past
		// the key; the value ends with the last such line that is not blank.
		// With keep chomping ("|+", ">+") the trailing blank lines are
		// content too: the value ends with the last of them.
		keep := keepChomping(d[off:t.lineEnd(off)])
		end := t.lineEnd(off)
		for line := t.nextLine(off); line < len(d); line = t.nextLine(line) {
			if t.blank(line) {
				if keep {
					end = t.lineEnd(line)
				}
				continue
			}
			if t.indentOf(line) <= keyIndent {
				break
			}
			end = t.lineEnd(line)
		}
		return end, nil
	}
	// A plain scalar: to the end of the line or a comment, and in block
	// context across continuation lines indented past the key.
	end := plainLineEnd(d, off, t.lineEnd(off), flow)
	if flow {
		return end, nil
	}
	for line := t.nextLine(off); line < len(d); line = t.nextLine(line) {
		if t.blankOrComment(line) || t.indentOf(line) <= keyIndent {
			break
		}
		next := plainLineEnd(d, line+t.indentOf(line), t.lineEnd(line), false)
		if next <= line+t.indentOf(line) {
			break
		}
		end = next
	}
	return end, nil
}

// keepChomping reads a block scalar's header ("|", ">-", "|2+", ">+ #
// comment") and reports the keep indicator.
func keepChomping(header []byte) bool {
	for _, c := range header[1:] {
		switch {
		case c == '+':
			return true
		case c == '-' || (c >= '0' && c <= '9'):
		default:
			return false
		}
	}
	return false
}

func plainLineEnd(d []byte, from, to int, flow bool) int {
	end := to
	for i := from; i < to; i++ {
		if d[i] == '#' && i > from && (d[i-1] == ' ' || d[i-1] == '\t') {
			end = i
			break
		}
		if flow && (d[i] == ',' || d[i] == '}' || d[i] == ']') {
			end = i
			break
		}
	}
	for end > from && (d[end-1] == ' ' || d[end-1] == '\t') {
		end--
	}
	return end
}

// findCSV parses data and returns the root mapping of the first
// ClusterServiceVersion document.
func findCSV(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return nil, ErrNoCSV
			}
			return nil, err
		}
		if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
			continue
		}
		root := doc.Content[0]
		if root.Kind != yaml.MappingNode {
			continue
		}
		if k := entry(root, "kind"); k != nil && k.value.Kind == yaml.ScalarNode && k.value.Value == "ClusterServiceVersion" {
			return root, nil
		}
	}
}

type kv struct {
	key, value *yaml.Node
	index      int
}

// entry finds the last entry named name in a mapping (the one that wins).
func entry(m *yaml.Node, name string) *kv {
	var found *kv
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; k.Kind == yaml.ScalarNode && k.Value == name {
			found = &kv{key: k, value: m.Content[i+1], index: i}
		}
	}
	return found
}

// Edit is a planned change: replace data[Start:End] with Text.
type Edit struct {
	Start, End int
	Text       string
}

// Apply returns data with the edit made.
func (e Edit) Apply(data []byte) []byte {
	out := make([]byte, 0, len(data)+len(e.Text))
	out = append(out, data[:e.Start]...)
	out = append(out, e.Text...)
	return append(out, data[e.End:]...)
}

// SetAnnotation plans the edit that sets metadata.annotations[key] to value
// in the first ClusterServiceVersion of data.
func SetAnnotation(data []byte, key, value string) (Edit, error) {
	if !utf8.ValidString(key) || !utf8.ValidString(value) {
		return Edit{}, errors.New("the annotation is not valid UTF-8")
	}
	t, root, err := csvText(data)
	if err != nil {
		return Edit{}, err
	}
	if root.Style&yaml.FlowStyle != 0 {
		return t.setFlow(root, key, value)
	}
	md := entry(root, "metadata")
	if md == nil {
		return t.appendBlock(root, []string{"metadata:", "annotations:"}, key, value)
	}
	switch {
	case md.value.Kind == yaml.MappingNode && md.value.Style&yaml.FlowStyle != 0:
		return t.setFlowMetadata(md.value, key, value)
	case md.value.Kind == yaml.MappingNode:
	case isNull(md.value):
		return t.fillNull(md, []string{"annotations:"}, key, value)
	default:
		return Edit{}, fmt.Errorf("metadata is %s, not a mapping", kindName(md.value))
	}
	ann := entry(md.value, "annotations")
	if ann == nil {
		return t.appendBlock(md.value, []string{"annotations:"}, key, value)
	}
	switch {
	case ann.value.Kind == yaml.MappingNode && ann.value.Style&yaml.FlowStyle != 0:
		return t.setInFlowMap(ann.value, key, value)
	case ann.value.Kind == yaml.MappingNode:
	case isNull(ann.value):
		return t.fillNull(ann, nil, key, value)
	default:
		return Edit{}, fmt.Errorf("metadata.annotations is %s, not a mapping", kindName(ann.value))
	}
	if cur := entry(ann.value, key); cur != nil {
		return t.replaceValue(cur, value, false)
	}
	return t.appendBlock(ann.value, nil, key, value)
}

// csvText is the text to edit and the root mapping of its first
// ClusterServiceVersion, with the file's indentation read from it.
func csvText(data []byte) (*text, *yaml.Node, error) {
	t, err := newText(data)
	if err != nil {
		return nil, nil, err
	}
	root, err := findCSV(data)
	if err != nil {
		return nil, nil, err
	}
	t.step = indentStep(root)
	t.seqIndent = seqIndent(root)
	return t, root, nil
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func kindName(n *yaml.Node) string { return manifest.KindName(n.Kind) }

// replaceValue swaps the value of an existing entry, keeping its style
// where the style can carry the value.
func (t *text) replaceValue(cur *kv, value string, flow bool) (Edit, error) {
	v := cur.value
	if v.Kind != yaml.ScalarNode {
		return Edit{}, fmt.Errorf("the existing annotation is %s, not a string", kindName(v))
	}
	start := t.skipProperties(t.nodeOffset(v), v)
	keyIndent := cur.key.Column - 1
	end, err := t.scalarEnd(start, v, keyIndent, flow)
	if err != nil {
		return Edit{}, err
	}
	var rendered string
	switch {
	case flow || v.Style&yaml.DoubleQuotedStyle != 0:
		rendered = doubleQuoted(value)
	case v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		// Keep the block style. The content indentation is that of the old
		// content, or two past the key's. Strip chomping ("|-") keeps a
		// trailing newline out of the value.
		indent := keyIndent + 2
		if line := t.nextLine(start); line < len(t.data) && !t.blank(line) && t.indentOf(line) > keyIndent {
			indent = t.indentOf(line)
		}
		rendered = "|-" + t.nl + strings.Repeat(" ", indent) + value
		if quoted(value)[0] == '"' || strings.TrimSpace(value) != value || value == "" {
			rendered = quoted(value)
		}
	default:
		rendered = quoted(value)
	}
	return Edit{Start: start, End: end, Text: rendered}, nil
}

func singleQuoted(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// quoted renders a value single-quoted, which reads best for JSON, unless
// it holds what single quotes cannot carry: a line break (folded into a
// space) or a character YAML does not allow raw.
func quoted(s string) string {
	for _, r := range s {
		if r != '\t' && (!yamlPrintable(r) || isBreak(r)) {
			return doubleQuoted(s)
		}
	}
	return singleQuoted(s)
}

// yamlPrintable is YAML's c-printable set (YAML 1.2 section 5.1), minus the
// byte order mark, which go.yaml.in/yaml/v3 would drop.
func yamlPrintable(r rune) bool {
	switch {
	case r == 0x9 || r == 0xA || r == 0xD || r == 0x85:
		return true
	case r >= 0x20 && r <= 0x7E:
		return true
	case r >= 0xA0 && r <= 0xD7FF:
		return true
	case r >= 0xE000 && r <= 0xFFFD:
		return r != 0xFEFF
	case r >= 0x10000 && r <= 0x10FFFF:
		return true
	}
	return false
}

func isBreak(r rune) bool { return r == '\n' || r == '\r' || r == 0x85 || r == 0x2028 || r == 0x2029 }

// doubleQuoted renders a string that is both a YAML double-quoted scalar
// and a JSON string: quotes and backslashes escaped, and every line break
// or character YAML does not allow raw written as \uXXXX, which both read.
func doubleQuoted(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case !yamlPrintable(r) || isBreak(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// lastEnd is the offset where the last entry of a block mapping ends.
func (t *text) lastEnd(m *yaml.Node) (int, error) {
	if len(m.Content) < 2 {
		return 0, errors.New("empty block mapping")
	}
	k, v := m.Content[len(m.Content)-2], m.Content[len(m.Content)-1]
	return t.nodeEnd(v, k.Column-1)
}

// nodeEnd finds where a value ends in block context.
func (t *text) nodeEnd(v *yaml.Node, keyIndent int) (int, error) {
	switch v.Kind {
	case yaml.ScalarNode:
		if isNull(v) && v.Line == 0 {
			return 0, errors.New("no position for an empty value")
		}
		start := t.skipProperties(t.nodeOffset(v), v)
		if isNull(v) && v.Value == "" {
			// "key:" with nothing after it: the node sits at the key's line.
			return t.lineEnd(start), nil
		}
		return t.scalarEnd(start, v, keyIndent, false)
	case yaml.AliasNode:
		s := t.nodeOffset(v) + 1
		for s < len(t.data) && !strings.ContainsRune(" \t\r\n,]}", rune(t.data[s])) {
			s++
		}
		return s, nil
	case yaml.MappingNode, yaml.SequenceNode:
		if v.Style&yaml.FlowStyle != 0 {
			return t.flowEnd(t.nodeOffset(v))
		}
		if len(v.Content) == 0 {
			return t.lineEnd(t.nodeOffset(v)), nil
		}
		last := v.Content[len(v.Content)-1]
		indent := keyIndent
		if v.Kind == yaml.MappingNode {
			indent = v.Content[len(v.Content)-2].Column - 1
		} else {
			indent = last.Column - 1
		}
		return t.nodeEnd(last, indent)
	}
	return 0, fmt.Errorf("unexpected node kind %v", v.Kind)
}

// flowEnd scans a flow collection from its opening bracket to just past the
// matching close, stepping over quoted strings and comments.
func (t *text) flowEnd(off int) (int, error) {
	d := t.data
	depth := 0
	for i := off; i < len(d); i++ {
		switch d[i] {
		case '"':
			for i++; i < len(d) && d[i] != '"'; i++ {
				if d[i] == '\\' {
					i++
				}
			}
		case '\'':
			for i++; i < len(d); i++ {
				if d[i] == '\'' {
					if i+1 < len(d) && d[i+1] == '\'' {
						i++
						continue
					}
					break
				}
			}
		case '#':
			if i > 0 && (d[i-1] == ' ' || d[i-1] == '\t' || d[i-1] == '\n') {
				i = t.lineEnd(i) - 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1, nil
			}
		}
	}
	return 0, errors.New("unterminated flow collection")
}

// appendBlock adds key: value after the last entry of the block mapping m,
// opening the mappings named by wrap first ("annotations:").
func (t *text) appendBlock(m *yaml.Node, wrap []string, key, value string) (Edit, error) {
	end, err := t.lastEnd(m)
	if err != nil {
		return Edit{}, err
	}
	// After the whole last line: a comment trailing the last entry stays
	// with it.
	end = t.lineEnd(end)
	indent := m.Content[0].Column - 1
	step := t.step
	var b strings.Builder
	for _, w := range wrap {
		b.WriteString(t.nl + strings.Repeat(" ", indent) + w)
		indent += step
	}
	b.WriteString(t.nl + strings.Repeat(" ", indent) + plainKey(key) + ": " + quoted(value))
	return Edit{Start: end, End: end, Text: b.String()}, nil
}

// plainKey writes a key without quotes where YAML allows it, as annotation
// keys usually are.
func plainKey(k string) string {
	if k == "" {
		return singleQuoted(k)
	}
	for i, r := range k {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || (i > 0 && strings.ContainsRune("._/-", r))
		if !ok {
			return quoted(k)
		}
	}
	if _, bad := map[string]bool{"y": true, "n": true, "yes": true, "no": true, "on": true, "off": true, "true": true, "false": true, "null": true}[strings.ToLower(k)]; bad {
		return singleQuoted(k)
	}
	if scalarText(k) != k { // a number ("0000"), as go.yaml.in/yaml/v3 resolves it
		return singleQuoted(k)
	}
	return k
}

// fillNull turns "key:" (an empty value) into a mapping holding the entry.
func (t *text) fillNull(at *kv, wrap []string, key, value string) (Edit, error) {
	start := t.nodeOffset(at.value)
	if at.value.Value != "" {
		// An explicit null ("annotations: null" or "~"): replace it.
		end, err := t.scalarEnd(start, at.value, at.key.Column-1, false)
		if err != nil {
			return Edit{}, err
		}
		pre := t.data[:start]
		for len(pre) > 0 && pre[len(pre)-1] == ' ' {
			pre = pre[:len(pre)-1]
			start--
		}
		e, err := t.fillNull(&kv{key: at.key, value: &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: at.key.Line, Column: at.key.Column}}, wrap, key, value)
		if err != nil {
			return Edit{}, err
		}
		return Edit{Start: start, End: end, Text: e.Text}, nil
	}
	end := t.lineEnd(t.nodeOffset(at.key))
	// Trim a trailing comment's position: insert before the line break,
	// after whatever the key's line holds.
	indent := at.key.Column - 1 + t.step
	var b strings.Builder
	for _, w := range wrap {
		b.WriteString(t.nl + strings.Repeat(" ", indent) + w)
		indent += t.step
	}
	b.WriteString(t.nl + strings.Repeat(" ", indent) + plainKey(key) + ": " + quoted(value))
	return Edit{Start: end, End: end, Text: b.String()}, nil
}

// indentStep guesses the file's indentation step: how far the first nested
// block mapping under the root is indented past its key; 2 if none is.
func indentStep(root *yaml.Node) int {
	for i := 1; i < len(root.Content); i += 2 {
		v := root.Content[i]
		if v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 {
			if s := v.Content[0].Column - root.Content[i-1].Column; s > 0 {
				return s
			}
		}
	}
	return 2
}

// setFlow handles a CSV written as one flow mapping (a JSON file).
func (t *text) setFlow(root *yaml.Node, key, value string) (Edit, error) {
	md := entry(root, "metadata")
	if md == nil {
		return t.insertFlow(root, `"metadata": {"annotations": {`+doubleQuoted(key)+`: `+doubleQuoted(value)+`}}`)
	}
	if md.value.Kind != yaml.MappingNode {
		return Edit{}, fmt.Errorf("metadata is %s, not a mapping", kindName(md.value))
	}
	return t.setFlowMetadata(md.value, key, value)
}

func (t *text) setFlowMetadata(md *yaml.Node, key, value string) (Edit, error) {
	if md.Style&yaml.FlowStyle == 0 {
		return Edit{}, errors.New("a block mapping inside a flow mapping")
	}
	ann := entry(md, "annotations")
	if ann == nil {
		return t.insertFlow(md, `"annotations": {`+doubleQuoted(key)+`: `+doubleQuoted(value)+`}`)
	}
	if ann.value.Kind != yaml.MappingNode {
		return Edit{}, fmt.Errorf("metadata.annotations is %s, not a mapping", kindName(ann.value))
	}
	return t.setInFlowMap(ann.value, key, value)
}

func (t *text) setInFlowMap(m *yaml.Node, key, value string) (Edit, error) {
	if cur := entry(m, key); cur != nil {
		return t.replaceValue(cur, value, true)
	}
	return t.insertFlow(m, doubleQuoted(key)+": "+doubleQuoted(value))
}

// insertFlow adds an entry to a flow mapping. It goes first, right before
// the first key, so no existing line gains a comma: in a pretty-printed
// file (JSON) the entry gets a line of its own with the first key's
// indentation; an empty mapping just gets the entry.
func (t *text) insertFlow(m *yaml.Node, item string) (Edit, error) {
	open := t.nodeOffset(m)
	if len(m.Content) == 0 {
		end, err := t.flowEnd(open)
		if err != nil {
			return Edit{}, err
		}
		return Edit{Start: end - 1, End: end - 1, Text: item}, nil
	}
	first := m.Content[0]
	at := t.nodeOffset(first)
	if first.Line > m.Line {
		return Edit{Start: at, End: at, Text: item + "," + t.nl + strings.Repeat(" ", first.Column-1)}, nil
	}
	return Edit{Start: at, End: at, Text: item + ", "}, nil
}
