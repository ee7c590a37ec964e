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

// Name returns the element's field name or map key, or, for a list index,
// "" and true.
func (e PathElem) Name() (name string, isIndex bool) {
	if e.kind == indexElem {
		return "", true
	}
	return e.name, false
}

// Index returns the element's list index, and whether it is one.
func (e PathElem) Index() (int, bool) {
	return e.index, e.kind == indexElem
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

// ParsePath reads a path as String writes it: fields separated by dots,
// "[N]" for a list index and "[key]" for a map key.
func ParsePath(s string) Path {
	var p Path
	for i := 0; i < len(s); {
		switch s[i] {
		case '.':
			i++
		case '[':
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return append(p, PathElem{kind: fieldElem, name: s[i:]})
			}
			inner := s[i+1 : i+end]
			if n, err := strconv.Atoi(inner); err == nil && n >= 0 {
				p = append(p, PathElem{kind: indexElem, index: n})
			} else {
				p = append(p, PathElem{kind: keyElem, name: inner})
			}
			i += end + 1
		default:
			end := strings.IndexAny(s[i:], ".[")
			if end < 0 {
				end = len(s) - i
			}
			p = append(p, PathElem{kind: fieldElem, name: s[i : i+end]})
			i += end
		}
	}
	return p
}
