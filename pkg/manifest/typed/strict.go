package typed

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/statuscheck/statuscheck/internal/strict"
	"github.com/statuscheck/statuscheck/pkg/manifest"
)

// FieldError is a field a strict decode refused, where it is written.
type FieldError struct {
	Pos manifest.Position
	*strict.Error
}

// DecodeStrict decodes a document (or any node read with its value) into
// a typed struct strictly, as the apiserver's strict field validation
// does: field names match exactly and an unknown field, or a key written
// twice in one mapping, is refused (internal/strict, which is
// sigs.k8s.io/json's strict decoding; repeated YAML keys are found on the
// nodes, since the converted value keeps only the last). Each error points
// at the field's line. Whatever decodes is stored in into even when errors
// are returned.
func DecodeStrict(doc *manifest.Document, into interface{}) []FieldError {
	var out []FieldError
	for _, d := range duplicateKeys(doc.Node, nil) {
		out = append(out, FieldError{Pos: manifest.Position{File: doc.File, Line: d.node.Line, Column: d.node.Column},
			Error: &strict.Error{Kind: strict.Duplicate, Path: d.path, Err: fmt.Errorf("duplicate field %q", d.path)}})
	}
	// The fast path, which a trace of millions of steps takes for each:
	// a value of the simple shapes the formats are made of, with every key
	// one the type has (strict.Assign). Anything else goes through the
	// JSON decoder, which decodes the rest and says what is wrong.
	if m, ok := doc.Value.(map[string]interface{}); ok && len(out) == 0 {
		if strict.Assign(m, into) {
			return nil
		}
		reset(into)
	}
	data, err := json.Marshal(doc.Value)
	if err != nil {
		return append(out, FieldError{Pos: doc.Pos(), Error: &strict.Error{Kind: strict.Syntax, Err: err}})
	}
	for _, e := range strict.Unmarshal(data, into) {
		if e.Kind == strict.Duplicate {
			continue // found on the nodes, with their lines
		}
		pos := doc.Pos()
		if e.Path != "" {
			if e.Kind == strict.Unknown {
				pos, _ = doc.LocateKey(manifest.NewPath(strings.Split(e.Path, ".")...))
			} else if n := findTyped(doc.Node, strings.Split(e.Path, "."), e.Got); n != nil {
				pos = manifest.Position{File: doc.File, Line: n.Line, Column: n.Column}
			} else {
				pos, _ = doc.Locate(manifest.NewPath(strings.Split(e.Path, ".")...))
			}
		}
		out = append(out, FieldError{Pos: pos, Error: e})
	}
	return out
}

// reset zeroes what into points at.
func reset(into interface{}) {
	v := reflect.ValueOf(into).Elem()
	v.Set(reflect.Zero(v.Type()))
}

type duplicate struct {
	path string
	node *yaml.Node
}

// duplicateKeys finds the keys given twice in a mapping, at any depth:
// the later key, with its dotted path.
func duplicateKeys(n *yaml.Node, path []string) []duplicate {
	if n == nil {
		return nil
	}
	var out []duplicate
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || manifest.IsMergeKey(k) {
				continue
			}
			for j := 0; j < i; j += 2 { // mappings are small: no map to allocate
				if prev := n.Content[j]; prev.Kind == yaml.ScalarNode && prev.Value == k.Value {
					out = append(out, duplicate{path: strings.Join(append(append([]string(nil), path...), k.Value), "."), node: k})
					break
				}
			}
			if v.Kind == yaml.MappingNode || v.Kind == yaml.SequenceNode {
				out = append(out, duplicateKeys(v, append(path, k.Value))...)
			}
		}
	case yaml.SequenceNode:
		for _, item := range n.Content {
			out = append(out, duplicateKeys(item, path)...)
		}
	}
	return out
}
