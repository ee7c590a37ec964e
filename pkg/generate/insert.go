package generate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	jsonpatch "github.com/evanphx/json-patch/v5"
	yaml "go.yaml.in/yaml/v3"
)

// Op is one JSON 6902 "add" operation on the CSV document: Path holds the
// pointer's tokens from the document's root ("-" appends to an array), and
// adding a member that exists replaces it (RFC 6902 section 4.1). The
// same ops are the text edit (AddAt), the proof that the edit did only
// that (verifyOps applies them with evanphx/json-patch) and what -o patch
// prints.
type Op struct {
	Path  []string
	Value interface{}
}

// Pointer is the op's JSON pointer (RFC 6901).
func (o Op) Pointer() string {
	var b strings.Builder
	for _, t := range o.Path {
		b.WriteString("/" + escapePointer(t))
	}
	return b.String()
}

// patchOp is an op as JSON 6902 writes it.
type patchOp struct {
	Op    string      `json:"op"`
	Path  string      `json:"path"`
	Value interface{} `json:"value"`
}

func (o Op) patch() patchOp { return patchOp{Op: "add", Path: o.Pointer(), Value: o.Value} }

// AddAt plans the text edit that performs op on the first
// ClusterServiceVersion of data, leaving every other byte as it is: a new
// sequence item goes after the last one with the sequence's own dash
// indentation, a new entry after the last entry of its mapping, an empty
// flow sequence ("rules: []") in block context becomes a block sequence,
// in a flow mapping (a JSON file) the new entry goes first, as
// SetAnnotation does, and in a flow sequence after the last item. A replaced member must be a scalar (an image).
func AddAt(data []byte, op Op) (Edit, error) {
	if len(op.Path) == 0 {
		return Edit{}, errors.New("an op on the document's root")
	}
	for _, tok := range op.Path {
		if !utf8.ValidString(tok) {
			return Edit{}, errors.New("the op's path is not valid UTF-8")
		}
	}
	t, root, err := csvText(data)
	if err != nil {
		return Edit{}, err
	}
	value, err := toNode(op.Value)
	if err != nil {
		return Edit{}, err
	}
	node, key := root, (*yaml.Node)(nil)
	for _, tok := range op.Path[:len(op.Path)-1] {
		switch node.Kind {
		case yaml.MappingNode:
			e := entry(node, tok)
			if e == nil {
				return Edit{}, fmt.Errorf("%s: no member %q", op.Pointer(), tok)
			}
			node, key = e.value, e.key
		case yaml.SequenceNode:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(node.Content) {
				return Edit{}, fmt.Errorf("%s: no item %q", op.Pointer(), tok)
			}
			node, key = node.Content[i], nil
		default:
			return Edit{}, fmt.Errorf("%s: %s is %s", op.Pointer(), tok, kindName(node))
		}
	}
	last := op.Path[len(op.Path)-1]
	switch {
	case node.Kind == yaml.SequenceNode && last == "-":
		return t.appendItem(node, key, value)
	case node.Kind == yaml.MappingNode:
		if e := entry(node, last); e != nil {
			return t.replaceScalar(e, op.Value, node.Style&yaml.FlowStyle != 0)
		}
		if node.Style&yaml.FlowStyle != 0 {
			return t.insertFlow(node, doubleQuoted(last)+": "+flowText(op.Value))
		}
		return t.addEntry(node, last, value)
	}
	return Edit{}, fmt.Errorf("%s: cannot add to %s", op.Pointer(), kindName(node))
}

// toNode turns a value into YAML nodes by way of its JSON, which keeps a
// struct's field order.
func toNode(v interface{}) (*yaml.Node, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	return doc.Content[0], nil
}

// flowText is a value as JSON, which is YAML's flow style too.
func flowText(v interface{}) string {
	data, _ := json.Marshal(v)
	return string(data)
}

// seqIndent guesses how far the file indents a block sequence past its
// key: 0 ("containers:\n- name") as Kubernetes' tools write, or the
// distance the first block sequence in the document has.
func seqIndent(root *yaml.Node) int {
	var walk func(n *yaml.Node) (int, bool)
	walk = func(n *yaml.Node) (int, bool) {
		if n.Kind != yaml.MappingNode || n.Style&yaml.FlowStyle != 0 {
			return 0, false
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Kind == yaml.SequenceNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 {
				// The item's node sits after "- "; columns count from 1.
				if d := v.Content[0].Column - 2 - k.Column; d >= 0 {
					return d, true
				}
			}
			if d, ok := walk(v); ok {
				return d, true
			}
		}
		return 0, false
	}
	d, _ := walk(root)
	return d
}

// dashColumn is the indentation of a block sequence's dashes.
func (t *text) dashColumn(seq *yaml.Node) int {
	line := t.pos.Offset(seq.Content[0].Line, 1)
	return t.indentOf(line)
}

func (t *text) appendItem(seq, key *yaml.Node, item *yaml.Node) (Edit, error) {
	if seq.Style&yaml.FlowStyle != 0 {
		if len(seq.Content) > 0 || key == nil || t.inFlow(key) {
			return t.insertFlowItem(seq, item)
		}
		// "rules: []" under a block key: a block sequence in its place.
		start := t.nodeOffset(seq)
		end, err := t.flowEnd(start)
		if err != nil {
			return Edit{}, err
		}
		for start > 0 && t.data[start-1] == ' ' {
			start--
		}
		lines := t.renderItem(item, key.Column-1+t.seqIndent)
		return Edit{Start: start, End: end, Text: t.nl + strings.Join(lines, t.nl)}, nil
	}
	dash := t.dashColumn(seq)
	end, err := t.nodeEnd(seq.Content[len(seq.Content)-1], dash)
	if err != nil {
		return Edit{}, err
	}
	end = t.lineEnd(end)
	return Edit{Start: end, End: end, Text: t.nl + strings.Join(t.renderItem(item, dash), t.nl)}, nil
}

// inFlow reports whether a key sits inside a flow collection: nothing but
// its own line's indentation before it would be block context.
func (t *text) inFlow(key *yaml.Node) bool {
	line := t.pos.Offset(key.Line, 1)
	return t.indentOf(line) != key.Column-1
}

// insertFlowItem appends to a flow sequence: after its last item (JSON
// patch's "-" is the end), on a line of its own with the last item's
// indentation when the last item has a line of its own.
func (t *text) insertFlowItem(seq, item *yaml.Node) (Edit, error) {
	text := flowNode(item)
	open := t.nodeOffset(seq)
	if len(seq.Content) == 0 {
		end, err := t.flowEnd(open)
		if err != nil {
			return Edit{}, err
		}
		return Edit{Start: end - 1, End: end - 1, Text: text}, nil
	}
	last := seq.Content[len(seq.Content)-1]
	at := t.skipProperties(t.nodeOffset(last), last)
	var end int
	var err error
	switch last.Kind {
	case yaml.MappingNode, yaml.SequenceNode:
		end, err = t.flowEnd(at)
	case yaml.AliasNode:
		end, err = t.nodeEnd(last, 0)
	default:
		end, err = t.scalarEnd(at, last, 0, true)
	}
	if err != nil {
		return Edit{}, err
	}
	if last.Line > seq.Line {
		return Edit{Start: end, End: end, Text: "," + t.nl + strings.Repeat(" ", t.indentOf(t.pos.Offset(last.Line, 1))) + text}, nil
	}
	return Edit{Start: end, End: end, Text: ", " + text}, nil
}

// flowNode renders a node as JSON (the nodes come from JSON).
func flowNode(n *yaml.Node) string {
	var v interface{}
	_ = n.Decode(&v)
	return flowText(v)
}

func (t *text) addEntry(m *yaml.Node, key string, value *yaml.Node) (Edit, error) {
	end, err := t.lastEnd(m)
	if err != nil {
		return Edit{}, err
	}
	end = t.lineEnd(end)
	indent := m.Content[0].Column - 1
	return Edit{Start: end, End: end, Text: t.nl + strings.Join(t.renderEntry(key, value, indent), t.nl)}, nil
}

// replaceScalar swaps a scalar's value for another string, plain when the
// old one was plain and YAML reads the new one back as the same string.
func (t *text) replaceScalar(cur *kv, value interface{}, flow bool) (Edit, error) {
	s, ok := value.(string)
	if !ok || cur.value.Kind != yaml.ScalarNode {
		return Edit{}, fmt.Errorf("replacing %s %q: only a string scalar is replaced", kindName(cur.value), cur.key.Value)
	}
	if cur.value.Style == 0 && !flow {
		if text := scalarText(s); text == s {
			start := t.skipProperties(t.nodeOffset(cur.value), cur.value)
			end, err := t.scalarEnd(start, cur.value, cur.key.Column-1, false)
			if err != nil {
				return Edit{}, err
			}
			return Edit{Start: start, End: end, Text: text}, nil
		}
	}
	return t.replaceValue(cur, s, flow)
}

// scalarText renders a scalar for block context: as go.yaml.in/yaml/v3
// writes a string (plain where that reads back the same), a JSON number,
// boolean or null as it is.
func scalarText(v interface{}) string {
	s, ok := v.(string)
	if !ok {
		return flowText(v)
	}
	out, err := yaml.Marshal(s)
	text := strings.TrimSuffix(string(out), "\n")
	if err != nil || strings.ContainsAny(text, "\n\r") {
		return doubleQuoted(s)
	}
	return text
}

// renderEntry writes key: value at indent, as lines.
func (t *text) renderEntry(key string, v *yaml.Node, indent int) []string {
	pad := strings.Repeat(" ", indent)
	head := pad + plainKey(key) + ":"
	switch {
	case v.Kind == yaml.MappingNode && len(v.Content) > 0:
		return append([]string{head}, t.renderMapping(v, indent+t.step)...)
	case v.Kind == yaml.SequenceNode && len(v.Content) > 0:
		var lines []string
		for _, item := range v.Content {
			lines = append(lines, t.renderItem(item, indent+t.seqIndent)...)
		}
		return append([]string{head}, lines...)
	}
	return []string{head + " " + inline(v)}
}

func (t *text) renderMapping(m *yaml.Node, indent int) []string {
	var lines []string
	for i := 0; i+1 < len(m.Content); i += 2 {
		lines = append(lines, t.renderEntry(m.Content[i].Value, m.Content[i+1], indent)...)
	}
	return lines
}

// renderItem writes "- item" with its dash at indent.
func (t *text) renderItem(item *yaml.Node, indent int) []string {
	pad := strings.Repeat(" ", indent)
	var body []string
	switch {
	case item.Kind == yaml.MappingNode && len(item.Content) > 0:
		body = t.renderMapping(item, indent+2)
	case item.Kind == yaml.SequenceNode && len(item.Content) > 0:
		for _, sub := range item.Content {
			body = append(body, t.renderItem(sub, indent+2)...)
		}
	default:
		return []string{pad + "- " + inline(item)}
	}
	body[0] = pad + "- " + body[0][indent+2:]
	return body
}

// inline is a scalar or an empty collection on one line.
func inline(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "{}"
	case yaml.SequenceNode:
		return "[]"
	}
	var v interface{}
	_ = n.Decode(&v)
	return scalarText(v)
}

// ApplyOps makes the ops' text edits one after another, each planned on
// the text the one before left, and proves the result is the old
// document with the ops applied (verifyOps).
func ApplyOps(file string, data []byte, ops []Op) ([]byte, error) {
	out := data
	for _, op := range ops {
		e, err := AddAt(out, op)
		if err != nil {
			return nil, fmt.Errorf("editing %s at %s: %w", file, op.Pointer(), err)
		}
		out = e.Apply(out)
	}
	if err := verifyOps(file, data, out, ops); err != nil {
		return nil, err
	}
	return out, nil
}

// verifyOps proves that new is old with the ops applied to its CSV
// document: parsed the way Kubernetes parses them, the CSV of new equals
// evanphx/json-patch's result of the ops on the CSV of old, and every
// other document is unchanged.
func verifyOps(file string, old, new []byte, ops []Op) error {
	patch := make([]patchOp, len(ops))
	for i, op := range ops {
		patch[i] = op.patch()
	}
	raw, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	p, err := jsonpatch.DecodePatch(raw)
	if err != nil {
		return err
	}
	return verifyDocs(file, old, new, func(csv map[string]interface{}) (interface{}, error) {
		doc, err := json.Marshal(csv)
		if err != nil {
			return nil, err
		}
		out, err := p.Apply(doc)
		if err != nil {
			return nil, err
		}
		var v interface{}
		return v, json.Unmarshal(out, &v)
	})
}
