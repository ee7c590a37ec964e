// Package typed decodes manifest documents (package manifest) into Go
// types as the apiserver decodes them: field names matched exactly, and
// every error at the line of the field it is about. It is apart from
// package manifest, which only parses, so that the parse can start while
// the binary's heavier packages initialise (internal/warmstart):
// apimachinery, which Decode falls back on, initialises late.
package typed

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "sigs.k8s.io/json"

	"github.com/statuscheck/statuscheck/pkg/manifest"
)

// Decode decodes the document into a typed object (a CSV, a CRD)
// through JSON with sigs.k8s.io/json, which matches field names exactly,
// as the apiserver decodes. (apimachinery's unstructured converter, which
// it used before, keeps a field cache that copies itself for every new
// field: quadratic in a short-lived process.) When that fails on a
// value's type, the object is decoded once more through encoding/json to
// learn which field is wrong, and the error points at that field's line.
// When a type's own decoder refuses a value instead (an OperatorVersion
// refuses null), the unstructured converter decides, as before: it leaves
// a null field at its zero value without asking the type.
func Decode(doc *manifest.Document, into interface{}) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &manifest.Error{Pos: doc.Pos(), Msg: fmt.Sprintf("cannot decode: %v", r)}
		}
	}()
	obj := doc.Object()
	if obj == nil {
		return &manifest.Error{Pos: doc.Pos(), Msg: "not a YAML mapping"}
	}
	data, merr := json.Marshal(obj)
	if merr != nil {
		return &manifest.Error{Pos: doc.Pos(), Msg: merr.Error()}
	}
	cerr := kjson.UnmarshalCaseSensitivePreserveInts(data, into)
	if cerr == nil {
		return nil
	}
	reset(into)
	jerr := json.Unmarshal(data, into)
	var ute *json.UnmarshalTypeError
	if errors.As(jerr, &ute) && ute.Field != "" {
		fields := strings.Split(ute.Field, ".")
		if k, v := mapEntryOfKind(doc.Node, fields, ute.Value, ute.Type); v != nil {
			// A value of a map (metadata.annotations, labels): name its key.
			msg := fmt.Sprintf("field %s: the value of %s is %s; it must be %s", ute.Field, k.Value, withArticle(ute.Value), withArticle(typeWord(ute.Type)))
			if w, ok := numberProblem(ute); ok {
				msg = fmt.Sprintf("field %s: the value of %s, %s", ute.Field, k.Value, w)
			}
			return &manifest.Error{Pos: manifest.Position{File: doc.File, Line: v.Line, Column: v.Column}, Msg: msg}
		}
		n := findTyped(doc.Node, fields, ute.Value)
		if n == nil {
			n = doc.Node
		}
		return &manifest.Error{Pos: manifest.Position{File: doc.File, Line: n.Line, Column: n.Column},
			Msg: fmt.Sprintf("field %s: %s", ute.Field, wrongValue(ute))}
	}
	reset(into)
	if runtime.DefaultUnstructuredConverter.FromUnstructured(obj, into) == nil {
		return nil
	}
	if jerr != nil {
		return &manifest.Error{Pos: doc.Pos(), Msg: jerr.Error()}
	}
	return &manifest.Error{Pos: doc.Pos(), Msg: cerr.Error()}
}

// wrongValue says what is wrong with a value encoding/json could not
// decode: a number its field cannot hold (numberProblem), or a value of
// the wrong JSON kind ("a string where a number belongs").
func wrongValue(ute *json.UnmarshalTypeError) string {
	if w, ok := numberProblem(ute); ok {
		return w
	}
	return fmt.Sprintf("%s where %s belongs", withArticle(ute.Value), withArticle(typeWord(ute.Type)))
}

// numberProblem says why a number does not decode into a numeric field:
// it is too large for it ("4294967297 does not fit an int32"), or a
// fraction where an integer belongs.
func numberProblem(ute *json.UnmarshalTypeError) (string, bool) {
	num, ok := strings.CutPrefix(ute.Value, "number ")
	if !ok || typeWord(ute.Type) != "number" {
		return "", false
	}
	kind := ute.Type.Kind()
	if f, err := strconv.ParseFloat(num, 64); err == nil && f != math.Trunc(f) && kind != reflect.Float32 && kind != reflect.Float64 {
		return fmt.Sprintf("%s is not a whole number; it must be %s", num, withArticle(kind.String())), true
	}
	return fmt.Sprintf("%s does not fit %s", num, withArticle(kind.String())), true
}

// mapEntryOfKind finds, when fields lead to a mapping that decodes into
// a Go map of scalars (annotations: map[string]string), its first entry
// whose value has the JSON kind want: that entry is the wrong one.
func mapEntryOfKind(n *yaml.Node, fields []string, want string, typ reflect.Type) (key, value *yaml.Node) {
	switch typ.Kind() {
	case reflect.Map, reflect.Struct, reflect.Slice, reflect.Array, reflect.Interface:
		return nil, nil
	}
	for _, f := range fields {
		if n = manifest.MappingValue(n, f); n == nil {
			return nil, nil
		}
	}
	if n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if isKind(n.Content[i+1], want) {
			return n.Content[i], n.Content[i+1]
		}
	}
	return nil, nil
}

// isKind says whether n has the JSON kind encoding/json's
// UnmarshalTypeError names: "string", "number", ..., or "number N" for
// the number N its field cannot hold, which only that number is.
func isKind(n *yaml.Node, want string) bool {
	num, ok := strings.CutPrefix(want, "number ")
	if !ok {
		return manifest.JSONKind(n) == want
	}
	if manifest.JSONKind(n) != "number" {
		return false
	}
	a, aerr := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
	b, berr := strconv.ParseFloat(num, 64)
	return aerr == nil && berr == nil && a == b
}

// typeWord names a Go type as JSON does: "string", "number", "bool",
// "object", "array".
func typeWord(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Map, reflect.Struct:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	}
	return t.String()
}

// withArticle puts "a" or "an" before a JSON kind: "an array", "a string".
func withArticle(w string) string {
	if w != "" && strings.ContainsRune("aeiou", rune(w[0])) {
		return "an " + w
	}
	return "a " + w
}

// findTyped follows dotted field names (encoding/json leaves list indexes
// out) through every list on the way and returns the first node whose JSON
// kind is want ("string", "number", "bool", "object", "array").
func findTyped(n *yaml.Node, fields []string, want string) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.SequenceNode {
		for _, item := range n.Content {
			if found := findTyped(item, fields, want); found != nil {
				return found
			}
		}
		return nil
	}
	if len(fields) == 0 {
		if isKind(n, want) {
			return n
		}
		return nil
	}
	v := manifest.MappingValue(n, fields[0])
	if v == nil {
		return nil
	}
	if len(fields) == 1 && manifest.JSONKind(v) == "array" && want != "array" {
		return findTyped(v, nil, want)
	}
	return findTyped(v, fields[1:], want)
}
