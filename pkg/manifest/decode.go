package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/runtime"
)

// DecodeInto decodes the document into a typed object (a CSV, a CRD) with
// apimachinery's unstructured converter, which matches field names exactly,
// as the apiserver does. When that fails, the object is decoded once more
// through encoding/json to learn which field is wrong, and the error points
// at that field's line.
func DecodeInto(doc *Document, into interface{}) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &Error{Pos: doc.Pos(), Msg: fmt.Sprintf("cannot decode: %v", r)}
		}
	}()
	obj := doc.Object()
	if obj == nil {
		return &Error{Pos: doc.Pos(), Msg: "not a YAML mapping"}
	}
	cerr := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, into)
	if cerr == nil {
		return nil
	}
	data, merr := json.Marshal(obj)
	if merr != nil {
		return &Error{Pos: doc.Pos(), Msg: cerr.Error()}
	}
	jerr := json.Unmarshal(data, into)
	var ute *json.UnmarshalTypeError
	if errors.As(jerr, &ute) && ute.Field != "" {
		n := findTyped(doc.Node, strings.Split(ute.Field, "."), ute.Value)
		if n == nil {
			n = doc.Node
		}
		return &Error{Pos: Position{File: doc.File, Line: n.Line, Column: n.Column},
			Msg: fmt.Sprintf("field %s: cannot use a %s as %s", ute.Field, ute.Value, ute.Type)}
	}
	if jerr != nil {
		return &Error{Pos: doc.Pos(), Msg: jerr.Error()}
	}
	return &Error{Pos: doc.Pos(), Msg: cerr.Error()}
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
		if jsonKind(n) == want || strings.HasPrefix(want, "number") && jsonKind(n) == "number" {
			return n
		}
		return nil
	}
	v := mappingValue(n, fields[0])
	if v == nil {
		return nil
	}
	if len(fields) == 1 && jsonKind(v) == "array" && want != "array" {
		return findTyped(v, nil, want)
	}
	return findTyped(v, fields[1:], want)
}

func jsonKind(n *yaml.Node) string {
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
