// Package strict decodes JSON into typed structs the way the apiserver's
// strict field validation does (sigs.k8s.io/json: field names match
// case-sensitively, unknown and duplicate fields are refused) and turns
// what it refuses into errors a person can act on: the field's path, what
// is wrong, the fields that would have been known there and the nearest
// one. The annotation parser, the trace reader and the manifest reader
// share it, so "did you mean" reads the same everywhere.
package strict

import (
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"strings"
	"sync"

	sigsjson "sigs.k8s.io/json"
)

// Kind says what is wrong with a field.
type Kind string

// Kinds of errors.
const (
	// Unknown: the field is not one the type has.
	Unknown Kind = "unknown"
	// Duplicate: the field is given twice.
	Duplicate Kind = "duplicate"
	// Type: the value has the wrong JSON type for the field.
	Type Kind = "type"
	// Syntax: the data is not JSON.
	Syntax Kind = "syntax"
)

// Error is one refusal.
type Error struct {
	Kind Kind
	// Path is the dotted JSON path of the field ("handshake.mode"); list
	// indexes are left out, as encoding/json leaves them out.
	Path string
	// Known lists the fields the type has where the unknown field was
	// found, in declaration order.
	Known []string
	// Suggestion is the known field nearest an unknown one, "" if none
	// is near.
	Suggestion string
	// Got is the JSON kind of a mistyped value ("string", "number",
	// "object", "array", "bool"); Want is the Go type it should decode
	// into.
	Got, Want string
	// Offset is the byte offset of a syntax error.
	Offset int64
	// Err is the decoder's own error.
	Err error
}

// Field is the last element of Path.
func (e *Error) Field() string {
	if i := strings.LastIndexByte(e.Path, '.'); i >= 0 {
		return e.Path[i+1:]
	}
	return e.Path
}

// Parent is Path without its last element.
func (e *Error) Parent() string {
	if i := strings.LastIndexByte(e.Path, '.'); i >= 0 {
		return e.Path[:i]
	}
	return ""
}

func (e *Error) Error() string { return e.Err.Error() }

// Unmarshal decodes data into v (a pointer) strictly. Whatever decodes is
// stored even when errors are returned, as encoding/json does: a caller
// can go on checking the rest.
func Unmarshal(data []byte, v interface{}) []*Error {
	strictErrs, err := sigsjson.UnmarshalStrict(data, v)
	var out []*Error
	if err != nil {
		if isSyntax, off := sigsjson.SyntaxErrorOffset(err); isSyntax {
			return []*Error{{Kind: Syntax, Offset: off, Err: err}}
		}
		// sigs.k8s.io/json's type error is its own unexported copy of
		// encoding/json's: decode once more with encoding/json to learn
		// the field and the kinds.
		e := &Error{Kind: Type, Err: err}
		fresh := reflect.New(reflect.TypeOf(v).Elem()).Interface()
		var ute *json.UnmarshalTypeError
		if jerr := json.Unmarshal(data, fresh); errors.As(jerr, &ute) {
			e.Path, e.Got, e.Want = ute.Field, ute.Value, ute.Type.String()
		}
		out = append(out, e)
	}
	for _, se := range strictErrs {
		e := &Error{Err: se}
		var fe sigsjson.FieldError
		if errors.As(se, &fe) {
			e.Path = fe.FieldPath()
		}
		e.Kind = Unknown
		if strings.Contains(se.Error(), "duplicate field") {
			e.Kind = Duplicate
		}
		if e.Kind == Unknown {
			e.Known = FieldsAt(reflect.TypeOf(v), e.Parent())
			e.Suggestion = Closest(e.Field(), e.Known)
		}
		out = append(out, e)
	}
	return out
}

// FieldsAt lists the JSON field names of the struct that t (a struct, or
// pointers, slices and maps of one) has at a dotted path, in declaration
// order; nil where the path leaves the structs.
func FieldsAt(t reflect.Type, path string) []string {
	t = elem(t)
	if path != "" {
		for _, name := range strings.Split(path, ".") {
			f, ok := fieldByJSONName(t, name)
			if !ok {
				return nil
			}
			t = elem(f.Type)
		}
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if name, ok := jsonName(t.Field(i)); ok {
			out = append(out, name)
		}
	}
	return out
}

func elem(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	return t
}

func jsonName(f reflect.StructField) (string, bool) {
	if !f.IsExported() {
		return "", false
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name, true
}

func fieldByJSONName(t reflect.Type, name string) (reflect.StructField, bool) {
	if t.Kind() != reflect.Struct {
		return reflect.StructField{}, false
	}
	for i := 0; i < t.NumField(); i++ {
		if n, ok := jsonName(t.Field(i)); ok && n == name {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

// Closest suggests a known name for a misspelt one: the same name in
// another case, or the nearest within two edits ("" when none is).
func Closest(s string, known []string) string {
	best, bestD := "", 3
	cands := append([]string(nil), known...)
	sort.Strings(cands)
	for _, k := range cands {
		if strings.EqualFold(k, s) {
			return k
		}
		if d := Levenshtein(strings.ToLower(k), strings.ToLower(s)); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// Levenshtein is the edit distance between a and b.
func Levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// fields maps a struct type's JSON field names to their index and type.
var fields sync.Map // reflect.Type -> map[string]field

type field struct {
	index int
	typ   reflect.Type
}

func fieldTable(t reflect.Type) map[string]field {
	if f, ok := fields.Load(t); ok {
		return f.(map[string]field)
	}
	table := map[string]field{}
	for i := 0; i < t.NumField(); i++ {
		if name, ok := jsonName(t.Field(i)); ok {
			table[name] = field{i, t.Field(i).Type}
		}
	}
	fields.Store(t, table)
	return table
}

var objectType = reflect.TypeOf(map[string]interface{}{})

// Assign decodes a decoded JSON object into the struct into points at,
// for the simple shapes the statuscheck formats are made of (strings and
// named strings, *int64 and *bool, objects kept as
// map[string]interface{}, and structs or pointers to structs of those),
// with every key required to name a field. It is the fast path a trace of
// millions of steps takes; ok is false when anything does not fit (an
// unknown key, another type, another shape), and the caller then decodes
// with Unmarshal, which explains what is wrong. Objects are shared, not
// copied.
func Assign(m map[string]interface{}, into interface{}) (ok bool) {
	v := reflect.ValueOf(into)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return false
	}
	return assign(m, v.Elem())
}

func assign(m map[string]interface{}, v reflect.Value) bool {
	if v.Kind() != reflect.Struct {
		return false
	}
	table := fieldTable(v.Type())
	for k, x := range m {
		f, ok := table[k]
		if !ok || !set(v.Field(f.index), x) {
			return false
		}
	}
	return true
}

func set(dst reflect.Value, x interface{}) bool {
	t := dst.Type()
	switch {
	case t.Kind() == reflect.String:
		s, ok := x.(string)
		if ok {
			dst.SetString(s)
		}
		return ok
	case t == objectType:
		if x == nil {
			dst.Set(reflect.Zero(t))
			return true
		}
		m, ok := x.(map[string]interface{})
		if ok {
			dst.Set(reflect.ValueOf(m))
		}
		return ok
	case t.Kind() == reflect.Pointer:
		if x == nil {
			dst.Set(reflect.Zero(t))
			return true
		}
		p := reflect.New(t.Elem())
		switch e := t.Elem(); {
		case e.Kind() == reflect.Int64:
			n, ok := x.(int64)
			if !ok {
				return false
			}
			p.Elem().SetInt(n)
		case e.Kind() == reflect.Bool:
			b, ok := x.(bool)
			if !ok {
				return false
			}
			p.Elem().SetBool(b)
		case e == objectType:
			m, ok := x.(map[string]interface{})
			if !ok {
				return false
			}
			p.Elem().Set(reflect.ValueOf(m))
		case e.Kind() == reflect.Struct:
			m, ok := x.(map[string]interface{})
			if !ok || !assign(m, p.Elem()) {
				return false
			}
		default:
			return false
		}
		dst.Set(p)
		return true
	case t.Kind() == reflect.Struct:
		m, ok := x.(map[string]interface{})
		return ok && assign(m, dst)
	}
	return false
}
