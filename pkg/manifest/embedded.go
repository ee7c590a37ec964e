package manifest

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// Positions inside JSON held in a YAML string: a CSV's alm-examples and
// operatorframework.io/initialization-resource are JSON texts in
// annotations, and operator-sdk writes alm-examples as a literal block
// scalar ("alm-examples: |-" and the JSON on the lines below, indented).
// A literal block keeps every character of its lines, so a place in the
// value is a place in the file: the value's line i is the file's line i
// after the header, shifted right by the block's indentation. Every other
// style changes the text (a quoted scalar has escapes and folds its line
// breaks, a folded one turns line breaks into spaces, a plain one folds
// too), so a place in the value is not found in the file that simply, and
// is not looked for.

// EmbeddedJSONPos gives the line and column, in src, of the JSON value at
// p inside the JSON text held by n, a scalar node parsed from src:
// p = [0, spec, replicas] for the replicas of alm-examples' first entry.
// ok is false when the place cannot be told exactly: n is not a literal
// block scalar (|, |-, |+, with or without an indentation indicator), its
// value is not valid JSON, p is not in it, or the lines of the block in
// src are not the value's lines as written (so a position would be a
// guess). An object's key is matched exactly, the last of repeated keys
// counting, as encoding/json decodes one.
func EmbeddedJSONPos(src []byte, n *yaml.Node, p Path) (line, col int, ok bool) {
	if n == nil || n.Kind != yaml.ScalarNode || !json.Valid([]byte(n.Value)) {
		return 0, 0, false
	}
	off, ok := jsonValueOffset([]byte(n.Value), p)
	if !ok {
		return 0, 0, false
	}
	return BlockScalarPos(src, n, off)
}

// LocateEmbedded is EmbeddedJSONPos for the string at p in the document:
// the position of the JSON value at inner inside it, or false (p is not
// there, or the place cannot be told exactly).
func (d *Document) LocateEmbedded(p, inner Path) (Position, bool) {
	line, col, ok := EmbeddedJSONPos(d.src, d.stringNode(p), inner)
	return Position{File: d.File, Line: line, Column: col}, ok
}

// LocateInString gives the position of the byte at offset off of the
// string at p, when BlockScalarPos can tell it.
func (d *Document) LocateInString(p Path, off int) (Position, bool) {
	line, col, ok := BlockScalarPos(d.src, d.stringNode(p), off)
	return Position{File: d.File, Line: line, Column: col}, ok
}

// stringNode is the node at p when it is there and the document has its
// text, else nil.
func (d *Document) stringNode(p Path) *yaml.Node {
	n, exact := locate(d.Node, p)
	if !exact || d.src == nil {
		return nil
	}
	return n
}

// BlockScalarPos gives the line and column, in src, of the character at
// byte offset off of n's value, when n is a literal block scalar whose
// lines in src are exactly its value's lines, each indented by the same
// run of spaces (see EmbeddedJSONPos); ok is false otherwise, or when off
// is not where a character of a line begins (past the value's end, in a
// line break, inside a UTF-8 sequence).
func BlockScalarPos(src []byte, n *yaml.Node, off int) (line, col int, ok bool) {
	// A tag other than !!str (!!binary: the text is base64 of the value)
	// makes the file's text another thing than the value.
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" || n.Style&yaml.LiteralStyle == 0 || n.Line < 1 || n.Column < 1 ||
		off < 0 || off >= len(n.Value) || n.Value[off] == '\n' || !utf8.RuneStart(n.Value[off]) {
		return 0, 0, false
	}
	o := NewOffsets(src)
	if !literalHeader(src, o, n) {
		return 0, 0, false
	}
	lines := strings.Split(n.Value, "\n")
	if strings.HasSuffix(n.Value, "\n") {
		lines = lines[:len(lines)-1] // the last line's break, not a line
	}
	indent := -1
	for i, v := range lines {
		text, ok := srcLine(src, o.Starts, n.Line+1+i)
		if !ok {
			return 0, 0, false
		}
		if v == "" {
			if strings.Trim(text, " ") != "" {
				return 0, 0, false
			}
			continue
		}
		pad, found := strings.CutSuffix(text, v)
		if !found || strings.Trim(pad, " ") != "" || (indent >= 0 && len(pad) != indent) {
			return 0, 0, false
		}
		indent = len(pad)
	}
	i := strings.Count(n.Value[:off], "\n")
	lineStart := strings.LastIndexByte(n.Value[:off], '\n') + 1
	return n.Line + 1 + i, indent + 1 + utf8.RuneCountInString(n.Value[lineStart:off]), true
}

// literalHeader reports whether the literal block's header, "|" with its
// indicators, is on n's line at n's position (after n's properties, a tag
// or an anchor, which yaml.v3 places it at) and ends that line, so that
// the block's first line is the next one.
func literalHeader(src []byte, o *Offsets, n *yaml.Node) bool {
	if n.Line > len(o.Starts) {
		return false
	}
	start := o.Offset(n.Line, n.Column)
	end := len(src)
	if n.Line < len(o.Starts) {
		end = o.Starts[n.Line]
	}
	if start >= end {
		return false
	}
	h := src[start:end]
	if h[0] != '|' {
		_, rest := properties(h)
		h = bytes.TrimLeft(rest, " \t")
		if len(h) == 0 || h[0] != '|' {
			return false
		}
	}
	h = h[1:]
	for i := 0; i < 2 && len(h) > 0 && (h[0] == '+' || h[0] == '-' || (h[0] >= '1' && h[0] <= '9')); i++ {
		h = h[1:]
	}
	rest := bytes.TrimLeft(h, " \t")
	if len(rest) == len(h) && len(rest) > 0 && lineBreakLen(rest) == 0 {
		return false // more than indicators before any blank
	}
	return len(rest) == 0 || rest[0] == '#' || lineBreakLen(rest) > 0
}

// srcLine gives line (1-based) of src without its line break. A line
// ending in a break other than LF or CRLF (a lone CR, NEL, LS or PS, which
// YAML breaks lines at and JSON does not take for blanks) is not given.
func srcLine(src []byte, starts []int, line int) (string, bool) {
	if line < 1 || line > len(starts) {
		return "", false
	}
	text := src[starts[line-1]:]
	if line < len(starts) {
		text = src[starts[line-1]:starts[line]]
		switch {
		case bytes.HasSuffix(text, []byte("\r\n")):
			text = text[:len(text)-2]
		case bytes.HasSuffix(text, []byte("\n")):
			text = text[:len(text)-1]
		default:
			return "", false
		}
	}
	return string(text), true
}

// jsonValueOffset gives the offset in data, a valid JSON text, at which
// the value at p begins.
func jsonValueOffset(data []byte, p Path) (int, bool) {
	off := skipBlanks(data, 0)
	for _, e := range p {
		next, ok := memberOffset(data, off, e)
		if !ok {
			return 0, false
		}
		off = next
	}
	return off, true
}

// memberOffset gives the offset in data of the member e (an index, or a
// key, the last of repeated ones) of the array or object at off.
func memberOffset(data []byte, off int, e PathElem) (int, bool) {
	dec := json.NewDecoder(bytes.NewReader(data[off:]))
	tok, err := dec.Token()
	if err != nil {
		return 0, false
	}
	var skip json.RawMessage
	switch {
	case e.kind == indexElem && tok == json.Delim('['):
		for i := 0; dec.More(); i++ {
			if i == e.index {
				return skipBlanks(data, off+int(dec.InputOffset())), true
			}
			if dec.Decode(&skip) != nil {
				return 0, false
			}
		}
	case e.kind != indexElem && tok == json.Delim('{'):
		found := -1
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return 0, false
			}
			if key == e.name {
				found = skipBlanks(data, off+int(dec.InputOffset()))
			}
			if dec.Decode(&skip) != nil {
				return 0, false
			}
		}
		return found, found >= 0
	}
	return 0, false
}

// skipBlanks skips JSON whitespace and the separators "," and ":" at off.
func skipBlanks(data []byte, off int) int {
	for off < len(data) && bytes.IndexByte([]byte(" \t\r\n,:"), data[off]) >= 0 {
		off++
	}
	return off
}
