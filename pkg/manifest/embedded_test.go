package manifest

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml3 "go.yaml.in/yaml/v3"
)

// almPath is alm-examples' place in a CSV.
var almPath = NewPath("metadata", "annotations").Key("alm-examples")

func TestEmbeddedJSONPos(t *testing.T) {
	// operatorSDK is alm-examples as operator-sdk writes it.
	const operatorSDK = "metadata:\n" +
		"  annotations:\n" +
		"    alm-examples: |-\n" +
		"      [\n" +
		"        {\n" +
		"          \"apiVersion\": \"cool.operators.corp/v1beta1\",\n" +
		"          \"kind\": \"CoolOperator\",\n" +
		"          \"spec\": {\n" +
		"            \"replicas\": 3,\n" +
		"            \"items\": [[1, 2], [3, {\"name\": \"x\"}]]\n" +
		"          }\n" +
		"        },\n" +
		"        {\"kind\": \"Other\", \"spec\": {\"replicas\": 4}}\n" +
		"      ]\n" +
		"    capabilities: Basic Install\n"
	tests := []struct {
		name      string
		yaml      string
		at        Path // the string's place in the document
		path      Path // the place in its JSON
		line, col int
		ok        bool
		text      string // what the file holds at the position
	}{
		{name: "a field of an entry", yaml: operatorSDK, at: almPath, path: Path{}.Index(0).Child("spec", "replicas"),
			line: 9, col: 25, ok: true, text: "3,"},
		{name: "an object", yaml: operatorSDK, at: almPath, path: Path{}.Index(0).Child("spec"),
			line: 8, col: 19, ok: true, text: "{"},
		{name: "nested arrays", yaml: operatorSDK, at: almPath, path: Path{}.Index(0).Child("spec", "items").Index(1).Index(1).Child("name"),
			line: 10, col: 44, ok: true, text: `"x"}`},
		{name: "an entry on one line", yaml: operatorSDK, at: almPath, path: Path{}.Index(1).Child("spec", "replicas"),
			line: 13, col: 48, ok: true, text: "4}}"},
		{name: "an entry", yaml: operatorSDK, at: almPath, path: Path{}.Index(1),
			line: 13, col: 9, ok: true, text: `{"kind"`},
		{name: "the whole value", yaml: operatorSDK, at: almPath, path: nil,
			line: 4, col: 7, ok: true, text: "["},
		{name: "a field that is not there", yaml: operatorSDK, at: almPath, path: Path{}.Index(0).Child("spec", "size"), ok: false},
		{name: "an index past the end", yaml: operatorSDK, at: almPath, path: Path{}.Index(2), ok: false},
		{name: "a key where a list is", yaml: operatorSDK, at: almPath, path: NewPath("spec"), ok: false},
		{name: "an index where an object is", yaml: operatorSDK, at: almPath, path: Path{}.Index(0).Index(0), ok: false},
		{name: "into a number", yaml: operatorSDK, at: almPath, path: Path{}.Index(0).Child("spec", "replicas", "x"), ok: false},

		{name: "clipped", yaml: "a: |\n  {\"spec\": {\"replicas\": 3}}\nb: 1\n", at: NewPath("a"), path: NewPath("spec", "replicas"),
			line: 2, col: 25, ok: true, text: "3}}"},
		{name: "kept, after an empty line", yaml: "a: |+\n\n  {\"spec\":\n    {\"replicas\": 3}}\n\n\nb: 1\n", at: NewPath("a"), path: NewPath("spec", "replicas"),
			line: 4, col: 18, ok: true, text: "3}}"},
		{name: "an indentation indicator", yaml: "a:\n  b: |2-\n      {\"spec\": {\"replicas\": 3}}\n", at: NewPath("a", "b"), path: NewPath("spec", "replicas"),
			line: 3, col: 29, ok: true, text: "3}}"},
		{name: "indicators the other way round, and a comment", yaml: "a:\n  b: |-2 # the example\n      {\"spec\": {\"replicas\": 3}}\n", at: NewPath("a", "b"), path: NewPath("spec", "replicas"),
			line: 3, col: 29, ok: true, text: "3}}"},
		{name: "crlf", yaml: "a:\r\n  b: |-\r\n    {\r\n      \"spec\": {\"replicas\": 3}\r\n    }\r\n", at: NewPath("a", "b"), path: NewPath("spec", "replicas"),
			line: 4, col: 28, ok: true, text: "3}"},
		{name: "a tag and an anchor before the indicator", yaml: "a: !!str &x |-\n  {\"spec\": {\"replicas\": 3}}\n", at: NewPath("a"), path: NewPath("spec", "replicas"),
			line: 2, col: 25, ok: true, text: "3}}"},
		{name: "the indicator on a line of its own", yaml: "a:\n  |-\n  {\"spec\": {\"replicas\": 3}}\n", at: NewPath("a"), path: NewPath("spec", "replicas"),
			line: 3, col: 25, ok: true, text: "3}}"},
		{name: "columns count runes", yaml: "a: |-\n  {\"é\": \"ü\", \"n\": 3}\n", at: NewPath("a"), path: NewPath("n"),
			line: 2, col: 19, ok: true, text: "3}"},
		{name: "a tab in the value", yaml: "a: |-\n  {\t\"n\": 3}\n", at: NewPath("a"), path: NewPath("n"),
			line: 2, col: 10, ok: true, text: "3}"},
		{name: "the last of repeated keys", yaml: "a: |-\n  {\"n\": 1,\n   \"n\": 2}\n", at: NewPath("a"), path: NewPath("n"),
			line: 3, col: 9, ok: true, text: "2}"},
		{name: "an escaped key", yaml: "a: |-\n  {\"\\u006e\": 3}\n", at: NewPath("a"), path: NewPath("n"),
			line: 2, col: 14, ok: true, text: "3}"},
		{name: "a document at the end of the file without a line break", yaml: "a: |-\n  {\"n\": 3}", at: NewPath("a"), path: NewPath("n"),
			line: 2, col: 9, ok: true, text: "3}"},
		{name: "a byte order mark", yaml: "\ufeffa: |-\n  {\"n\": 3}\n", at: NewPath("a"), path: NewPath("n"),
			line: 2, col: 9, ok: true, text: "3}"},

		{name: "folded", yaml: "a: >-\n  {\"spec\":\n  {\"replicas\": 3}}\n", at: NewPath("a"), path: NewPath("spec", "replicas"), ok: false},
		{name: "single-quoted", yaml: "a: '{\"spec\": {\"replicas\": 3}}'\n", at: NewPath("a"), path: NewPath("spec", "replicas"), ok: false},
		{name: "double-quoted", yaml: "a: \"{\\\"spec\\\": {\\\"replicas\\\": 3}}\"\n", at: NewPath("a"), path: NewPath("spec", "replicas"), ok: false},
		{name: "plain", yaml: "a: '[1]'\nb: x\n", at: NewPath("b"), path: nil, ok: false},
		{name: "not JSON", yaml: "a: |-\n  spec:\n    replicas: 3\n", at: NewPath("a"), path: NewPath("spec", "replicas"), ok: false},
		{name: "a line broken by NEL", yaml: "a: |-\n  {\"n\":\u0085  3}\n", at: NewPath("a"), path: NewPath("n"), ok: false},
		{name: "not a string", yaml: "a:\n  n: 3\n", at: NewPath("a"), path: NewPath("n"), ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := Parse("t.yaml", []byte(tt.yaml), DefaultLimits)
			require.NoError(t, err)
			n, found := locate(docs[0].Node, tt.at)
			require.True(t, found, "the test's string is not at %s", tt.at)
			line, col, ok := EmbeddedJSONPos([]byte(tt.yaml), n, tt.path)
			require.Equal(t, tt.ok, ok, "found at %d:%d", line, col)
			if !ok {
				return
			}
			assert.Equal(t, [2]int{tt.line, tt.col}, [2]int{line, col})
			off := NewOffsets([]byte(tt.yaml)).Offset(line, col)
			assert.Equal(t, tt.text, tt.yaml[off:min(off+len(tt.text), len(tt.yaml))])

			pos, ok := docs[0].LocateEmbedded(tt.at, tt.path)
			assert.True(t, ok)
			assert.Equal(t, Position{File: "t.yaml", Line: line, Column: col}, pos)
		})
	}
}

func TestLocateEmbeddedNeedsTheString(t *testing.T) {
	docs, err := Parse("t.yaml", []byte("a: |-\n  {\"n\": 3}\n"), DefaultLimits)
	require.NoError(t, err)
	_, ok := docs[0].LocateEmbedded(NewPath("b"), NewPath("n"))
	assert.False(t, ok, "a string that is not there")
	d := &Document{File: "t.yaml", Node: docs[0].Node, Value: docs[0].Value}
	_, ok = d.LocateEmbedded(NewPath("a"), NewPath("n"))
	assert.False(t, ok, "a document without its text")
}

func TestBlockScalarPos(t *testing.T) {
	src := "a: |\n  [1,\n   2]\n"
	docs, err := Parse("t.yaml", []byte(src), DefaultLimits)
	require.NoError(t, err)
	n := docs[0].Node.Content[1]
	for off, want := range map[int][2]int{0: {2, 3}, 2: {2, 5}, 4: {3, 3}, 6: {3, 5}} {
		line, col, ok := BlockScalarPos([]byte(src), n, off)
		assert.True(t, ok, "offset %d", off)
		assert.Equal(t, want, [2]int{line, col}, "offset %d", off)
	}
	for _, off := range []int{-1, 3, 7, 8} { // before, a line break, past the end
		_, _, ok := BlockScalarPos([]byte(src), n, off)
		assert.False(t, ok, "offset %d", off)
	}
	// A tag on the line above the header, and a value whose line reads
	// like the header: the value is on line 3, not on the header's line.
	{
		src := "a: !!str\n  |-\n  |-\n"
		docs, err := Parse("t.yaml", []byte(src), DefaultLimits)
		require.NoError(t, err)
		n := docs[0].Node.Content[1]
		require.Equal(t, "|-", n.Value)
		if line, col, ok := BlockScalarPos([]byte(src), n, 0); ok {
			assert.Equal(t, [2]int{3, 3}, [2]int{line, col})
		}
	}
	// !!binary: the file holds base64, the value what it decodes to.
	for _, src := range []string{"a: !!binary |\n  WzEsCiAyXQ==\n", "a: !!binary |\n  WzEsMl0=\n"} {
		docs, err := Parse("t.yaml", []byte(src), DefaultLimits)
		require.NoError(t, err)
		n := docs[0].Node.Content[1]
		_, _, ok := BlockScalarPos([]byte(src), n, 0)
		assert.False(t, ok, "%q", src)
	}
}

// TestBlockScalarPosNeedsTheFilesText: BlockScalarPos is given a node and
// a file apart; where the file's lines under the header are not the
// node's value as written (another file, or an edited one), it gives no
// position rather than one that points elsewhere.
func TestBlockScalarPosNeedsTheFilesText(t *testing.T) {
	const parsed = "a: |\n  [1,\n\n   2]\n"
	docs, err := Parse("t.yaml", []byte(parsed), DefaultLimits)
	require.NoError(t, err)
	n := docs[0].Node.Content[1]
	require.Equal(t, "[1,\n\n 2]\n", n.Value)
	_, _, ok := BlockScalarPos([]byte(parsed), n, 5)
	require.True(t, ok, "the file the node was parsed from")
	for _, tc := range []struct {
		name string
		src  string
	}{
		{name: "a line that holds other text", src: "a: |\n  [1,\n\n   3]\n"},
		{name: "a line indented more than the first", src: "a: |\n  [1,\n\n     2]\n"},
		{name: "text where the value has a blank line", src: "a: |\n  [1,\n  x\n   2]\n"},
		{name: "characters before the indentation", src: "a: |\n  [1,\n\n x 2]\n"},
		{name: "fewer lines than the value", src: "a: |\n  [1,\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line, col, ok := BlockScalarPos([]byte(tc.src), n, 5)
			assert.False(t, ok, "gave line %d column %d", line, col)
		})
	}
}

// jsonPaths lists the paths into v, depth first, at most max of them.
func jsonPaths(v interface{}, max int) []Path {
	var out []Path
	var walk func(v interface{}, p Path)
	walk = func(v interface{}, p Path) {
		if len(out) >= max {
			return
		}
		out = append(out, p)
		switch v := v.(type) {
		case map[string]interface{}:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(v[k], p.Key(k))
			}
		case []interface{}:
			for i, e := range v {
				walk(e, p.Index(i))
			}
		}
	}
	walk(v, nil)
	return out
}

// jsonAt is the value at p in v, as encoding/json decoded it.
func jsonAt(v interface{}, p Path) (interface{}, bool) {
	for _, e := range p {
		name, isIndex := e.Name()
		switch c := v.(type) {
		case map[string]interface{}:
			if isIndex {
				return nil, false
			}
			var ok bool
			if v, ok = c[name]; !ok {
				return nil, false
			}
		case []interface{}:
			if !isIndex || e.index >= len(c) {
				return nil, false
			}
			v = c[e.index]
		default:
			return nil, false
		}
	}
	return v, true
}

// FuzzEmbeddedJSONPos: for every string of a YAML document that holds
// JSON, and every path into that JSON (and the fuzzed one), EmbeddedJSONPos
// never panics, and a position it gives is in the file after the string's
// first line, where the text decodes, as JSON, to the value at the path.
func FuzzEmbeddedJSONPos(f *testing.F) {
	for _, s := range []string{
		"metadata:\n  annotations:\n    alm-examples: |-\n      [\n        {\n          \"kind\": \"A\",\n          \"spec\": {\"replicas\": 3, \"items\": [[1], {\"a\": null}]}\n        }\n      ]\n",
		"a: |\n  {\"spec\": {\"replicas\": 3}}\nb: 1\n", "a: |+\n\n  {\"n\":\n    [1, 2.5e3, \"x\"]}\n\n\n",
		"a:\n  b: |2-\n      {\"n\": 3}\n", "a:\r\n  b: |-\r\n    {\r\n      \"n\": true\r\n    }\r\n",
		"a: !!str &x |-\n  {\"n\": 1, \"n\": 2}\n", "a: |-\n  {\"é\": \"\\u00fc\", \"n\": 3}\n", "a: >-\n  {\"n\":\n  3}\n",
		"a: '{\"n\": 3}'\n", "a: \"{\\\"n\\\": 3}\"\n", "- |\n  [1]\n- |-\n   {\"x\": {}}\n",
	} {
		f.Add([]byte(s), "spec.replicas")
	}
	f.Fuzz(func(t *testing.T, data []byte, path string) {
		docs, _ := Parse("fuzz.yaml", data, Limits{MaxFileSize: 1 << 16, MaxDocuments: 20, MaxDepth: 64, MaxAliasNodes: 10_000})
		offsets := NewOffsets(data)
		check := func(n *yaml3.Node, want interface{}, p Path) {
			line, col, ok := EmbeddedJSONPos(data, n, p)
			if !ok {
				return
			}
			if line <= n.Line || col < 1 {
				t.Fatalf("%s at %d:%d, not below the string's first line %d", p, line, col, n.Line)
			}
			at, found := jsonAt(want, p)
			if !found {
				t.Fatalf("%s at %d:%d, but it is not in %q", p, line, col, n.Value)
			}
			var got interface{}
			if err := json.NewDecoder(bytes.NewReader(data[offsets.Offset(line, col):])).Decode(&got); err != nil {
				t.Fatalf("%s at %d:%d: the text there is not JSON: %v", p, line, col, err)
			}
			if !reflect.DeepEqual(got, at) {
				t.Fatalf("%s at %d:%d: the text there is %#v, not %#v", p, line, col, got, at)
			}
		}
		for _, d := range docs {
			var walk func(n *yaml3.Node)
			walk = func(n *yaml3.Node) {
				if n.Kind == yaml3.AliasNode {
					return
				}
				for _, c := range n.Content {
					walk(c)
				}
				var v interface{}
				if n.Kind != yaml3.ScalarNode || json.Unmarshal([]byte(n.Value), &v) != nil {
					return
				}
				for _, p := range append(jsonPaths(v, 100), ParsePath(path)) {
					check(n, v, p)
				}
			}
			walk(d.Node)
		}
	})
}
