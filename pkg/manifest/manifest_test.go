package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// kubeJSON is what Kubernetes makes of a YAML document.
func kubeJSON(t testing.TB, doc string) (string, error) {
	out, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		return "", err
	}
	var v interface{}
	if err := json.Unmarshal(out, &v); err != nil {
		return "", err
	}
	norm, _ := json.Marshal(v)
	return string(norm), nil
}

func ourJSON(t testing.TB, doc string) (string, error) {
	docs, err := Parse("t.yaml", []byte(doc), DefaultLimits)
	if err != nil {
		return "", err
	}
	if len(docs) == 0 {
		return "null", nil
	}
	out, err := json.Marshal(docs[0].Value)
	if err != nil {
		return "", err
	}
	var v interface{}
	_ = json.Unmarshal(out, &v)
	norm, _ := json.Marshal(v)
	return string(norm), nil
}

func TestScalarsResolveAsKubernetesDoes(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string
	}{
		{name: "yaml 1.1 booleans", yaml: "a: yes\nb: No\nc: on\nd: OFF\ne: y\nf: n\ng: true", want: `{"a":true,"b":false,"c":true,"d":false,"e":true,"f":false,"g":true}`},
		{name: "quoted booleans stay strings", yaml: "a: 'yes'\nb: \"on\"", want: `{"a":"yes","b":"on"}`},
		{name: "integers in every base", yaml: "a: 0x1F\nb: 0777\nc: 1_000\nd: 0b101\ne: -0b11\nf: +12", want: `{"a":31,"b":511,"c":1000,"d":5,"e":-3,"f":12}`},
		{name: "floats", yaml: "a: 1.5\nb: .5\nc: 1e3\nd: 6.02e+23", want: `{"a":1.5,"b":0.5,"c":1000,"d":6.02e+23}`},
		{name: "nulls", yaml: "a: ~\nb: null\nc:\nd: Null", want: `{"a":null,"b":null,"c":null,"d":null}`},
		{name: "timestamps stay the text they were written as", yaml: "a: 2021-03-04\nb: 2021-03-04T10:00:00Z\nc: 2019-10-12 10:00:00", want: `{"a":"2021-03-04","b":"2021-03-04T10:00:00Z","c":"2019-10-12 10:00:00"}`},
		{name: "a key y is the boolean true, as in kubectl", yaml: "y: 1\nn: 2\nx: 3", want: `{"true":1,"false":2,"x":3}`},
		{name: "keys that are not strings", yaml: "1: a\ntrue: b\non: c\n1.5: d", want: `{"1":"a","1.5":"d","true":"c"}`},
		{name: "merge keys", yaml: "base: &b {p: 1, q: 2}\nderived:\n  <<: *b\n  q: 3", want: `{"base":{"p":1,"q":2},"derived":{"p":1,"q":3}}`},
		{name: "merge of a list, first wins", yaml: "a: &a {x: 1}\nb: &b {x: 2, z: 3}\nc:\n  <<: [*a, *b]", want: `{"a":{"x":1},"b":{"x":2,"z":3},"c":{"x":1,"z":3}}`},
		{name: "aliases", yaml: "a: &x [1, 2]\nb: *x", want: `{"a":[1,2],"b":[1,2]}`},
		{name: "block scalars", yaml: "a: |\n  line1\n  line2\nb: >-\n  folded\n  text", want: `{"a":"line1\nline2\n","b":"folded text"}`},
		{name: "explicit tags", yaml: "a: !!str 123\nb: !!float 1\nc: !custom value", want: `{"a":"123","b":1,"c":"value"}`},
		{name: "duplicate keys: the last wins", yaml: "a: 1\na: 2", want: `{"a":2}`},
		{name: "json", yaml: `{"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}}`, want: `{"apiVersion":"v1","data":{"k":"v"},"kind":"ConfigMap"}`},
		{name: "version-like strings", yaml: "a: 1.0.0\nb: v1\nc: 1.10", want: `{"a":"1.0.0","b":"v1","c":1.1}`},
		{name: "the non-specific tag makes a string", yaml: "a: ! 0\nb: ! true\nc: !<!> 1", want: `{"a":"0","b":"true","c":"1"}`},
		{name: "the non-specific tag after an anchor", yaml: "a: &x ! 0\nb: *x\nc: ! &y 1\nd: &z\n  ! 2\ne: &w # c\n  ! 3\nf: &v\u0085 !\u2028 4\ng: &u\u0085# c\n  ! 5", want: `{"a":"0","b":"0","c":"1","d":"2","e":"3","f":"4","g":"5"}`},
		{name: "an anchor without a tag", yaml: "a: &x 0\nb: [&y 1, *y]", want: `{"a":0,"b":[1,1]}`},
		{name: "big unsigned integers", yaml: "a: 18446744073709551615", want: `{"a":18446744073709552000}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ourJSON(t, tt.yaml)
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, got)
			kube, err := kubeJSON(t, tt.yaml)
			require.NoError(t, err)
			assert.JSONEq(t, kube, got, "differs from sigs.k8s.io/yaml")
		})
	}
}

// TestAgreesWithSigsYAML runs the corners fuzzing and reading
// go.yaml.in/yaml/v2 turned up through both readers: the same JSON, and an
// error from one exactly when the other gives one.
func TestAgreesWithSigsYAML(t *testing.T) {
	for _, in := range []string{
		"a: !custom 0\n", "a: !custom true\n", "a: !x ~\n", "a: !<tag:yaml.org,2002:int> 0\n", "a: !<!> 0\n",
		"a: !!bool yes\n", "a: !!int \"1\"\n", "a: !!str 0\n", "a: !!null ''\n", "a: !!float 1\n", "a: !!int 0x1f\n",
		"a: ! [1]\n", "a: [! 1, !x 2]\n", "a: {! 1: 2}\n", "! 1: 2\n", "a: !e!x 1\n", "%TAG !e! tag:example.com:\n---\na: !e!x 1\n",
		"%TAG ! tag:yaml.org,2002:\n---\na: !int 1\n", "a: !!timestamp 2001-01-01\n", "a: !!merge <<\n", "a: !!map {}\n",
		"a: 0o17\n", "a: 0O17\n", "a: 1__0\n", "a: 0x_1\n", "a: .Inf\n", "a: -.inf\n", "a: 1e\n", "a: 1.\n", "a: +.5\n", "a: 0.\n", "a: 1e+\n",
		"a: 9223372036854775808\n", "a: -9223372036854775809\n", "a: 0b\n", "a: 0x\n", "a: 08\n", "a: 0_7\n", "a: 1:20\n", "a: 190:20:30\n", "a: =\n",
		"1e3: a\n", "0.1: a\n", "-0.0: a\n", ".inf: a\n", "-.inf: a\n", ".nan: a\n", "1_000: a\n", "9223372036854775808: a\n", "~: a\n", "null: a\n",
		"1.0000001: a\n", "123456789.123: a\n", "1e20: a\n", "1e-7: a\n", "0x7fffffffffffffff: a\n", "-0x10: a\n", "2001-01-01T00:00:00Z: a\n", "yes: a\n", "\"\": a\n",
		"? [a]\n: 1\n", "? {a: b}\n: 1\n", "*a: 1\n", "&a b: *a\n", "a: &a b\n*a : c\n", "a: !!binary aGk=\n", "a: !!binary |\n  aGVs\n  bG8=\n", "!!binary aGk=: 1\n", "a: !!binary \"aGk=\"\n", "a: !!binary x\n",
		"a: 'x\n\n  y'\n", "a: \"\\x41\\u00e9\\N\\_\"\n", "a: >+\n  x\n\n", "a: |2-\n   x\n",
		"a:\n- b\n-\n- ~\n", "[1, 2]\n", "- a: 1\n  b: 2\n", "a: b: c\n", "a: [b, c]: d\n",
		"a: !\n", "a: ! \n", "a: [!, 1]\n", "a: {!: 1}\n", "! : 1\n", "a: &x !\nb: *x\n", "a: ! ''\n", "a: !\n  0\n",
		"? ! 0\n: 1\n", "- ! 0\n- &a ! 1\n- *a\n", "a: ! !x 0\n", "a: &a &b 0\n", "a: !x! 0\n", "a: !!\n", "a: !<> 0\n",
		"a: ! |\n  0\n", "a: ! >\n  0\n", "a: !\t0\n", "a: !\r\n  0\r\n", "{a: ! 0}", "[! 0, ! 1]", "a: ! -1\n", "a: ! .5\n", "a: ! null\n",
		"? !\n# !", "? !\n#!", "? a\n#!", "- ? !\n  #!\n", "a: # !\n", "? !\n  # !\n", "\uFEFFa: ! 0\n", "\uFEFF! 0", "a:\n! b: c\n",
		"a:\n! : c\n", "{a: , ! b: c}", "? !\n: \n", "[a, ! ]", "{! : 1, &x ! : 2}", "a: ! # c\nb: 1\n", "- &a ! \n- *a\n", "a: &x ! &y 0\n",
		"? 0\n! :", "? a\n&x ! : 1\n", "- ? 0\n  ! : 1\n", "{? a, ! : 1}", "? 0\n! :\n! b: c\n",
	} {
		t.Run(in, func(t *testing.T) {
			ours, oerr := ourJSON(t, in)
			kube, kerr := kubeJSON(t, in)
			assert.Equal(t, kerr == nil, oerr == nil, "errors: ours %v, sigs.k8s.io/yaml %v", oerr, kerr)
			assert.Equal(t, kube, ours)
		})
	}
	// Plain scalars, each as a value and as a key.
	for _, v := range []string{"1_0.5", "_1", "1_", "0x_", "-_1", "+_1", "0b_1", ".5_", "1e1_0", "0_x1", "-0x1F", "0X1F", "0B1", "-.5", "+1.e5", "1.e5", "1e5", "1E5", "-0b", "0b2", "0o8", "0o", "-0o7", "+0x1", "0x-1", "1__", "._5", "0.0.0", "1,000", "1:2", "-1:20", "1:60", "1:2:3.5", "1_2:30", ".NaN", ".NAN", ".Nan", "+.inf", ".INF", "+.Inf", "-.Inf", "~", "NULL", "nULL", "Yes", "yES", "On", "oN", "Y", "N", "TRUE", "tRUE", "FALSE", "0xFFFFFFFFFFFFFFFF", "0x10000000000000000", "-0x8000000000000000", "-0x8000000000000001", "0b1111111111111111111111111111111111111111111111111111111111111111", "99999999999999999999", "-99999999999999999999", "1e309", "-1e309", "4.9e-325", "2001-01-01t00:00:00z", "2001-1-1", "2001-01-01 00:00:00 +1", "2001-01-01T00:00:00.5-07:00", "2001-01-01   00:00:00", "20010101", "0001-01-01", "2001-13-01", "2001-02-30"} {
		in := "a: " + v + "\n" + v + ": b\n"
		ours, oerr := ourJSON(t, in)
		kube, kerr := kubeJSON(t, in)
		assert.Equal(t, kerr == nil, oerr == nil, "%q: errors: ours %v, sigs.k8s.io/yaml %v", v, oerr, kerr)
		assert.Equal(t, kube, ours, "%q", v)
	}
}

func TestParseDocuments(t *testing.T) {
	in := "---\n# leading comment\na: 1\n---\n---\nb: 2\n...\n---\nc: 3\n"
	docs, err := Parse("f.yaml", []byte(in), DefaultLimits)
	require.NoError(t, err)
	require.Len(t, docs, 3)
	assert.Equal(t, 0, docs[0].Index)
	assert.Equal(t, 3, docs[0].Node.Line)
	assert.Equal(t, map[string]interface{}{"b": int64(2)}, docs[1].Value)
	assert.Equal(t, 9, docs[2].Node.Line)
}

func TestLocate(t *testing.T) {
	in := `apiVersion: v1
kind: X
metadata:
  name: x
  annotations:
    a/b: "value"
spec:
  versions:
  - name: v1
    served: true
  - name: v2
    sub: &s
      status: {}
  other:
    <<: *s
`
	docs, err := Parse("f.yaml", []byte(in), DefaultLimits)
	require.NoError(t, err)
	d := docs[0]
	tests := []struct {
		name      string
		path      Path
		line, col int
		exact     bool
	}{
		{name: "a field", path: NewPath("kind"), line: 2, col: 7, exact: true},
		{name: "an annotation key", path: NewPath("metadata", "annotations").Key("a/b"), line: 6, col: 10, exact: true},
		{name: "an index", path: NewPath("spec", "versions").Index(1).Child("name"), line: 11, col: 11, exact: true},
		{name: "a missing field points at its parent", path: NewPath("spec", "versions").Index(0).Child("subresources"), line: 9, col: 5, exact: false},
		{name: "an index out of range", path: NewPath("spec", "versions").Index(7), line: 9, col: 3, exact: false},
		{name: "through a merge key", path: NewPath("spec", "other", "status"), line: 13, col: 15, exact: true},
		{name: "the root", path: nil, line: 1, col: 1, exact: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pos, exact := d.Locate(tt.path)
			assert.Equal(t, tt.line, pos.Line, "line")
			assert.Equal(t, tt.col, pos.Column, "column")
			assert.Equal(t, tt.exact, exact)
			assert.Equal(t, "f.yaml", pos.File)
		})
	}
	pos, ok := d.LocateKey(NewPath("metadata", "annotations"))
	assert.True(t, ok)
	assert.Equal(t, Position{File: "f.yaml", Line: 5, Column: 3}, pos)
	assert.Equal(t, "spec.versions[0].served", NewPath("spec", "versions").Index(0).Child("served").String())
	assert.Equal(t, "metadata.annotations[a/b]", NewPath("metadata", "annotations").Key("a/b").String())
}

func TestSyntaxErrorsPointAtTheMistake(t *testing.T) {
	tests := []struct {
		name      string
		yaml      string
		line, col int
		msg       string
	}{
		{name: "a key indented one space too far", yaml: "apiVersion: v1\nkind: X\nmetadata:\n  name: x\n  labels:\n    a: b\n   c: d\n", line: 7, col: 4, msg: "did not find expected key"},
		{name: "a value that is itself a mapping", yaml: "a: b\nc: d: e\n", line: 2, col: 5, msg: "mapping values are not allowed"},
		{name: "a tab for indentation", yaml: "a:\n\tb: 1\n", line: 2, col: 1, msg: "found character that cannot start any token"},
		{name: "a sequence where a mapping goes on", yaml: "- a\nb: c\n", line: 2, col: 1, msg: "did not find expected '-' indicator"},
		{name: "an undefined alias", yaml: "a: &x 1\nb: *y\n", line: 2, col: 4, msg: "unknown anchor 'y' referenced"},
		{name: "a deep mistake in a long file", yaml: "spec:\n" + strings.Repeat("  k: v\n", 300) + " bad: x\n", line: 302, col: 2, msg: "did not find expected key"},
		{name: "a missing colon in a later document", yaml: "a: 1\n---\nb: 2\nc\n", line: 4, col: 1, msg: "could not find expected ':'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("bad.yaml", []byte(tt.yaml), DefaultLimits)
			var me *Error
			require.True(t, errors.As(err, &me), "want *Error, got %v", err)
			assert.Equal(t, tt.line, me.Pos.Line, "line: %v", err)
			assert.Equal(t, tt.col, me.Pos.Column, "column: %v", err)
			assert.Contains(t, me.Msg, tt.msg)
			assert.False(t, me.Limit)
			assert.True(t, strings.HasPrefix(err.Error(), "bad.yaml:"), err.Error())
		})
	}
}

func TestLimits(t *testing.T) {
	small := Limits{MaxFileSize: 1 << 10, MaxDocuments: 3, MaxDepth: 20, MaxAliasNodes: 1000}
	bomb := "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
	tests := []struct {
		name  string
		data  string
		lim   Limits
		msg   string
		limit bool
	}{
		{name: "file size", data: strings.Repeat("a: b\n", 300), lim: small, msg: "over the 1024-byte limit", limit: true},
		{name: "document count", data: "a: 1\n---\na: 2\n---\na: 3\n---\na: 4\n", lim: small, msg: "more than 3 documents", limit: true},
		{name: "nesting depth", data: strings.Repeat("[", 30) + strings.Repeat("]", 30), lim: small, msg: "nesting deeper than 20 levels", limit: true},
		{name: "alias expansion", data: bomb, lim: small, msg: "aliases expand to more than 1000 nodes", limit: true},
		{name: "billion laughs under the default limits", data: "a: &a [l,l,l,l,l,l,l,l,l]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\ni: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n", lim: DefaultLimits, msg: "aliases expand to more than 200000 nodes", limit: true},
		{name: "depth past the parser's own limit", data: strings.Repeat("[", 20000), lim: DefaultLimits, msg: "exceeded max depth"},
		{name: "an anchor merged into itself", data: "a: &a\n  <<: *a\n", lim: DefaultLimits, msg: "anchor \"a\" value contains itself"},
		{name: "an anchor that contains its alias", data: "a: &a [x, *a]\n", lim: DefaultLimits, msg: "anchor \"a\" value contains itself"},
		{name: "binary bytes", data: "\x00\x01\x02binary", lim: DefaultLimits, msg: "binary content"},
		{name: "latin-1 text", data: "a: caf\xe9\n", lim: DefaultLimits, msg: "invalid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tt.data), tt.lim)
			var me *Error
			require.True(t, errors.As(err, &me), "want *Error, got %v", err)
			assert.Contains(t, me.Msg, tt.msg)
			assert.Equal(t, tt.limit, me.Limit)
			assert.Equal(t, "x.yaml", me.Pos.File)
		})
	}
}

func TestEncodings(t *testing.T) {
	want := map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap"}
	tests := []struct {
		name     string
		data     []byte
		kindLine int
	}{
		{name: "utf-8 with a byte order mark", data: []byte("\xef\xbb\xbfapiVersion: v1\nkind: ConfigMap\n"), kindLine: 2},
		{name: "crlf line endings", data: []byte("apiVersion: v1\r\nkind: ConfigMap\r\n"), kindLine: 2},
		{name: "utf-16le with a byte order mark", data: utf16le("apiVersion: v1\nkind: ConfigMap\n"), kindLine: 2},
		{name: "utf-16be with a byte order mark", data: utf16be("apiVersion: v1\n\nkind: ConfigMap\n"), kindLine: 3},
		{name: "json", data: []byte("{\"apiVersion\":\"v1\",\n \"kind\":\"ConfigMap\"}"), kindLine: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := Parse("e.yaml", tt.data, DefaultLimits)
			require.NoError(t, err)
			require.Len(t, docs, 1)
			assert.Equal(t, want, docs[0].Value)
			pos, _ := docs[0].Locate(NewPath("kind"))
			assert.Equal(t, tt.kindLine, pos.Line)
		})
	}
}

func TestUTF16(t *testing.T) {
	// Read as sigs.k8s.io/yaml reads it: the text checks (the "!" tag
	// here) see the decoded characters, not the UTF-16 bytes.
	for _, in := range []string{
		"a: ! 0\nb: \U0001F600 x\nc: &y ! 1\n",
		"\ufeff\n\u3030", // a second byte order mark, which is not the stream's
	} {
		kube, err := kubeJSON(t, string(utf16le(in)))
		require.NoError(t, err)
		for _, data := range [][]byte{utf16le(in), utf16be(in)} {
			docs, err := Parse("u.yaml", data, DefaultLimits)
			require.NoError(t, err)
			got := []byte("null")
			if len(docs) > 0 {
				got, _ = json.Marshal(docs[0].Value)
			}
			assert.JSONEq(t, kube, string(got), "%q", in)
		}
	}
	for _, tc := range []struct {
		name string
		data []byte
		msg  string
	}{
		{name: "odd length", data: append(utf16le("a: 1"), 'x'), msg: "odd number of bytes"},
		{name: "cut surrogate pair", data: utf16le("a: \U0001F600")[:10], msg: "surrogate pair"},
		{name: "NUL in UTF-16", data: utf16le("a: \x00"), msg: "binary content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("u.yaml", tc.data, DefaultLimits)
			var me *Error
			require.True(t, errors.As(err, &me), "%v", err)
			assert.Contains(t, me.Msg, tc.msg)
			assert.Contains(t, me.Error(), "u.yaml")
		})
	}
}

func utf16be(s string) []byte {
	out := []byte{0xFE, 0xFF}
	for _, u := range utf16.Encode([]rune(s)) {
		out = append(out, byte(u>>8), byte(u))
	}
	return out
}

func utf16le(s string) []byte {
	out := []byte{0xFF, 0xFE}
	for _, u := range utf16.Encode([]rune(s)) {
		out = append(out, byte(u), byte(u>>8))
	}
	return out
}

// mixedTypeKeys reports whether some mapping under n holds two keys that are
// different YAML values but the same JSON key: 0 and "0", 1 and 1.0, true and
// "true", two .nan. go.yaml.in/yaml/v2 keeps both in one
// map[interface{}]interface{}, and sigs.k8s.io/yaml's convertToJSONableObject
// (yaml.go, v1.6.0) then ranges over that map to build the JSON object, so
// which value survives follows Go's random map order. Parse keeps the last
// one written; there is no fixed answer on the Kubernetes side to compare
// against. (Keys that are the same value, 0 and 0x0 or a repeated key, are
// one map entry in yaml.v2: the last one wins there too, and the fuzz target
// still compares those.)
//
// src is the text n was parsed from: the "!" tag is read from it.
func mixedTypeKeys(src []byte, n *yaml3.Node) bool {
	type keyVal struct {
		kind scalarKind
		v    interface{}
	}
	if u, _, ok := fromUTF16(src); ok {
		src = u
	}
	c := converter{lim: DefaultLimits, src: src, root: n}
	visited := map[*yaml3.Node]bool{}
	// keysOf adds the keys of mapping m, and of what it merges, to seen.
	var keysOf func(m *yaml3.Node, seen map[string]keyVal, depth int) bool
	keysOf = func(m *yaml3.Node, seen map[string]keyVal, depth int) bool {
		if m.Kind == yaml3.AliasNode && m.Alias != nil {
			m = m.Alias
		}
		if depth > 64 {
			return false
		}
		if m.Kind == yaml3.SequenceNode { // <<: [*a, *b]
			for _, e := range m.Content {
				if keysOf(e, seen, depth+1) {
					return true
				}
			}
			return false
		}
		if m.Kind != yaml3.MappingNode {
			return false
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			k := m.Content[i]
			if IsMergeKey(k) {
				if keysOf(m.Content[i+1], seen, depth+1) {
					return true
				}
				continue
			}
			if k.Kind == yaml3.AliasNode && k.Alias != nil {
				k = k.Alias
			}
			if k.Kind != yaml3.ScalarNode {
				continue
			}
			js, err := c.key(k)
			if err != nil {
				continue
			}
			kind, v, err := c.resolve(k)
			if err != nil {
				continue
			}
			if kind == kindTimestamp { // yaml.v2 keeps it as its text
				kind, v = kindStr, k.Value
			}
			kv := keyVal{kind, v}
			if old, ok := seen[js]; ok && old != kv {
				return true
			}
			seen[js] = kv
		}
		return false
	}
	var walk func(n *yaml3.Node) bool
	walk = func(n *yaml3.Node) bool {
		if n == nil || visited[n] {
			return false
		}
		visited[n] = true
		if n.Kind == yaml3.MappingNode && keysOf(n, map[string]keyVal{}, 0) {
			return true
		}
		if n.Kind == yaml3.AliasNode {
			return walk(n.Alias)
		}
		for _, ch := range n.Content {
			if walk(ch) {
				return true
			}
		}
		return false
	}
	return walk(n)
}

func TestMixedTypeKeys(t *testing.T) {
	for _, tc := range []struct {
		name  string
		yaml  string
		mixed bool
	}{
		{name: "int and quoted string", yaml: "0: 0\n\"0\": \n", mixed: true},
		{name: "int and float", yaml: "1: a\n1.0: b\n", mixed: true},
		{name: "bool and string", yaml: "a:\n  true: 1\n  'true': 2\n", mixed: true},
		{name: "through a merge", yaml: "a: &a {0: x}\nb:\n  <<: *a\n  '0': y\n", mixed: true},
		{name: "int and a string by the ! tag", yaml: "! 0: a\n0: b\n", mixed: true},
		{name: "same int twice", yaml: "0: a\n0x0: b\n", mixed: false},
		{name: "repeated key", yaml: "a: 1\na: 2\n", mixed: false},
		{name: "timestamp and its text", yaml: "2001-01-01: a\n'2001-01-01': b\n", mixed: false},
		{name: "different maps", yaml: "a: {0: x}\nb: {'0': y}\n", mixed: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := Parse("t.yaml", []byte(tc.yaml), DefaultLimits)
			require.NoError(t, err)
			assert.Equal(t, tc.mixed, mixedTypeKeys([]byte(tc.yaml), docs[0].Node))
		})
	}
	// Parse keeps the last key written, whatever its type.
	got, err := ourJSON(t, "0: 0\n\"0\": \n")
	require.NoError(t, err)
	assert.Equal(t, `{"0":null}`, got)
}

// FuzzParse checks that Parse never panics, that everything it returns is
// JSON, and that where both it and sigs.k8s.io/yaml read a single document,
// they read the same thing.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"a: b\n", "a: [1, 2, {b: c}]\n", "- &x a\n- *x\n", "a: yes\nb: 0x10\n", "{\"a\": 1}",
		"a: &a {x: 1}\nb:\n  <<: *a\n", "a: 2021-01-01\n", "---\na: 1\n---\nb: 2\n", "a:\n\tb: 1\n",
		"a: !!binary aGVsbG8=\n", "? complex\n: key\n", "a: 'it''s'\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		wd := time.AfterFunc(30*time.Second, func() { panic(fmt.Sprintf("WATCHDOG %q", data)) })
		defer wd.Stop()
		lim := Limits{MaxFileSize: 1 << 16, MaxDocuments: 50, MaxDepth: 64, MaxAliasNodes: 10_000}
		docs, err := Parse("fuzz.yaml", data, lim)
		if err != nil {
			var me *Error
			if !errors.As(err, &me) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		for _, d := range docs {
			if _, err := json.Marshal(d.Value); err != nil {
				t.Fatalf("document %d is not JSON: %v", d.Index, err)
			}
			_, _ = d.Locate(NewPath("metadata", "name"))
		}
		if len(docs) != 1 || strings.Contains(string(data), "---") || strings.Contains(string(data), "!!") {
			return
		}
		if mixedTypeKeys(data, docs[0].Node) {
			return // sigs.k8s.io/yaml's answer is random here; see mixedTypeKeys
		}
		ours, _ := json.Marshal(docs[0].Value)
		kube, kerr := kubeJSON(t, string(data))
		if kerr != nil {
			return
		}
		var a, b interface{}
		_ = json.Unmarshal(ours, &a)
		_ = json.Unmarshal([]byte(kube), &b)
		ab, _ := json.Marshal(a)
		bb, _ := json.Marshal(b)
		if string(ab) != string(bb) {
			t.Fatalf("differs from sigs.k8s.io/yaml:\n ours: %s\n kube: %s", ab, bb)
		}
	})
}

func TestOffsets(t *testing.T) {
	tests := []struct {
		name      string
		data      string
		line, col int
		want      int
	}{
		{name: "first column", data: "a: 1\nb: 2\n", line: 2, col: 1, want: 5},
		{name: "columns count runes", data: "é: x\n", line: 1, col: 4, want: 4},
		{name: "a byte order mark is not a column", data: "\ufeffa: 1\n", line: 1, col: 1, want: 3},
		{name: "crlf", data: "a: 1\r\nb: 2\r\n", line: 2, col: 4, want: 9},
		{name: "nel breaks a line", data: "a\u0085b: 1", line: 2, col: 1, want: 3},
		{name: "a line past the end", data: "a: 1", line: 3, col: 1, want: 4},
		{name: "line zero", data: "a: 1", line: 0, col: 1, want: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, NewOffsets([]byte(tt.data)).Offset(tt.line, tt.col))
		})
	}
}

// TestOffsetsAgreeWithAWalk checks the indexed Offset against walking the
// runes from the line's start, for every line and column of texts with long
// non-ASCII lines, and for columns past a line's end.
func TestOffsetsAgreeWithAWalk(t *testing.T) {
	walk := func(data []byte, starts []int, line, col int) int {
		if line < 1 || line > len(starts) {
			return len(data)
		}
		off := starts[line-1]
		for c := 1; c < col && off < len(data); c++ {
			_, size := utf8.DecodeRune(data[off:])
			off += size
		}
		return off
	}
	for _, text := range []string{
		strings.Repeat("é", 200) + "\n" + strings.Repeat("a", 150) + "\nx",
		"\ufeff" + strings.Repeat("ab€", 100) + "\r\n\u0085" + strings.Repeat("\U0001F600", 70),
		"a\xffb\xfe" + strings.Repeat("é", 65) + "\n",
		"",
	} {
		o := NewOffsets([]byte(text))
		for line := 0; line <= len(o.Starts)+1; line++ {
			for col := 0; col <= len(text)+2; col++ {
				want := walk([]byte(text), o.Starts, line, col)
				if got := o.Offset(line, col); got != want {
					t.Fatalf("%q line %d col %d: %d, want %d", text, line, col, got, want)
				}
			}
		}
	}
}

// BenchmarkParseOneLongLine parses a minified JSON manifest, one line, with a
// "!" in it (so the tag scanner looks up every plain scalar's offset). Time
// per number stays flat as the line grows.
func BenchmarkParseOneLongLine(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		data := []byte(`{"a": "é!", "b": [` + strings.Repeat("1,", n) + `1]}`)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := Parse("one-line.json", data, DefaultLimits); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/number")
		})
	}
}

func TestParsePath(t *testing.T) {
	for _, s := range []string{"spec.versions[0].schema.openAPIV3Schema", "metadata.annotations[operatorframework.io/status-source].kind", "a[1][2]", "x"} {
		assert.Equal(t, s, ParsePath(s).String())
	}
	assert.Equal(t, NewPath("spec", "versions").Index(3).Child("name"), ParsePath("spec.versions[3].name"))
	assert.Equal(t, NewPath("metadata", "annotations").Key("a/b"), ParsePath("metadata.annotations[a/b]"))
}

// TestDigest: documents of the same text have the same digest, and any
// difference of text, index or part gives another (or none).
func TestDigest(t *testing.T) {
	parse := func(text string) []*Document {
		t.Helper()
		docs, err := Parse("a.yaml", []byte(text), DefaultLimits)
		require.NoError(t, err)
		return docs
	}
	two := "kind: A\n---\nkind: A\n"
	a, b := parse(two), parse(two)
	other := parse("kind: A\n---\nkind: A \n")
	renamed, err := Parse("elsewhere/b.yaml", []byte(two), DefaultLimits)
	require.NoError(t, err)

	for _, tc := range []struct {
		name      string
		x, y      *Document
		wantEqual bool
	}{
		{name: "the same text parsed twice", x: a[0], y: b[0], wantEqual: true},
		{name: "the same text in another file", x: a[1], y: renamed[1], wantEqual: true},
		{name: "the same content at another index", x: a[0], y: a[1], wantEqual: false},
		{name: "a space more in the file", x: a[0], y: other[0], wantEqual: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NotEmpty(t, tc.x.Digest())
			require.Len(t, tc.x.Digest(), 64)
			assert.Equal(t, tc.wantEqual, tc.x.Digest() == tc.y.Digest())
		})
	}
	assert.Empty(t, a[0].At(NewPath("kind")).Digest(), "a part of a document has no digest of its own")
	assert.Empty(t, (&Document{File: "x", Value: map[string]interface{}{}}).Digest(), "a document built by hand")
	var none *Document
	assert.Empty(t, none.Digest())
}
