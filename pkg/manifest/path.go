package manifest

import (
	"strconv"
	"strings"
)

// elemKind tells how a path element is written: a struct field (".name"),
// a map key ("[key]") or a list index ("[3]"), as in
// k8s.io/apimachinery/pkg/util/validation/field.Path.
type elemKind uint8

const (
	fieldElem elemKind = iota
	keyElem
	indexElem
)

// PathElem is one step of a Path.
type PathElem struct {
	kind  elemKind
	name  string
	index int
}

// Path is a field path inside an object, printed like Kubernetes' field.Path
// ("spec.versions[0].schema", "metadata.annotations[a/b]"). Unlike field.Path
// it can be walked, which is what finding a position needs.
type Path []PathElem

// NewPath returns a path of fields.
func NewPath(fields ...string) Path {
	p := make(Path, 0, len(fields))
	for _, f := range fields {
		p = append(p, PathElem{kind: fieldElem, name: f})
	}
	return p
}

// Child returns p extended by the given fields.
func (p Path) Child(fields ...string) Path {
	out := make(Path, len(p), len(p)+len(fields))
	copy(out, p)
	for _, f := range fields {
		out = append(out, PathElem{kind: fieldElem, name: f})
	}
	return out
}

// Key returns p extended by a map key.
func (p Path) Key(k string) Path {
	out := make(Path, len(p), len(p)+1)
	copy(out, p)
	return append(out, PathElem{kind: keyElem, name: k})
}

// Index returns p extended by a list index.
func (p Path) Index(i int) Path {
	out := make(Path, len(p), len(p)+1)
	copy(out, p)
	return append(out, PathElem{kind: indexElem, index: i})
}

// String renders p as field.Path does.
func (p Path) String() string {
	var b strings.Builder
	for i, e := range p {
		switch e.kind {
		case fieldElem:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(e.name)
		case keyElem:
			b.WriteByte('[')
			b.WriteString(e.name)
			b.WriteByte(']')
		case indexElem:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(e.index))
			b.WriteByte(']')
		}
	}
	return b.String()
}
