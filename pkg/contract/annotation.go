// Package contract holds the status-source contract of docs/contract.md: the
// operatorframework.io/status-source annotation and its strict parser, the
// condition model, and the gate that decides whether an upgrade may proceed
// (OLM's isOperatorUpgradeable and the stricter and older variants).
//
// validate, generate and simulate all read the contract from here, so the
// three commands can never disagree about what an annotation means.
package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	// AnnotationKey is the CSV annotation that declares the status source.
	AnnotationKey = "operatorframework.io/status-source"
	// InitializationResourceKey is OLM's annotation naming the CR the
	// console offers to create after install.
	InitializationResourceKey = "operatorframework.io/initialization-resource"
	// DefaultRequestAnnotation is the annotation the seed's RequestAck flow
	// writes its token to.
	DefaultRequestAnnotation = "operatorframework.io/upgrade-request"
)

// WhenAbsent is the verdict while the status-source CR does not exist.
type WhenAbsent string

const (
	// WhenAbsentAllow is the default, as OLM allows when no OperatorCondition exists.
	WhenAbsentAllow WhenAbsent = "Allow"
	// WhenAbsentBlock blocks until the CR exists.
	WhenAbsentBlock WhenAbsent = "Block"
)

// HandshakeMode selects the lock flow of docs/contract.md section 6.
type HandshakeMode string

const (
	// HandshakeNone: freshness is the only lock.
	HandshakeNone HandshakeMode = "None"
	// HandshakeOperatorCondition: the operator mirrors Upgradeable into its
	// OperatorCondition and OLM's status copy commits the lock.
	HandshakeOperatorCondition HandshakeMode = "OperatorCondition"
	// HandshakeRequestAck: OLM writes a token, the operator answers it.
	HandshakeRequestAck HandshakeMode = "RequestAck"
)

// StatusSource is the value of the status-source annotation.
type StatusSource struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Name       string     `json:"name"`
	Namespace  string     `json:"namespace,omitempty"`
	Conditions []string   `json:"conditions,omitempty"`
	WhenAbsent WhenAbsent `json:"whenAbsent,omitempty"`
	Handshake  *Handshake `json:"handshake,omitempty"`
}

// Handshake is the request/acknowledge lock.
type Handshake struct {
	Mode    HandshakeMode     `json:"mode"`
	Request *HandshakeRequest `json:"request,omitempty"`
	Ack     *HandshakeAck     `json:"ack,omitempty"`
}

// HandshakeRequest says where OLM writes its token: exactly one field is set.
type HandshakeRequest struct {
	SpecPath   string `json:"specPath,omitempty"`
	Annotation string `json:"annotation,omitempty"`
}

// HandshakeAck says where the operator echoes the token it answered.
type HandshakeAck struct {
	StatusPath string `json:"statusPath,omitempty"`
}

// GroupVersion parses APIVersion.
func (s *StatusSource) GroupVersion() schema.GroupVersion {
	gv, _ := schema.ParseGroupVersion(s.APIVersion)
	return gv
}

// ConditionTypes returns the condition types the gate reads, with the
// default applied.
func (s *StatusSource) ConditionTypes() []string {
	if len(s.Conditions) == 0 {
		return []string{ConditionUpgradeable}
	}
	return s.Conditions
}

// Absent returns the verdict while the CR does not exist, default applied.
func (s *StatusSource) Absent() WhenAbsent {
	if s.WhenAbsent == "" {
		return WhenAbsentAllow
	}
	return s.WhenAbsent
}

// Mode returns the handshake mode, None when absent.
func (s *StatusSource) Mode() HandshakeMode {
	if s.Handshake == nil || s.Handshake.Mode == "" {
		return HandshakeNone
	}
	return s.Handshake.Mode
}

// Marshal renders the annotation value: compact JSON with fields in the
// order of the contract's table.
func (s *StatusSource) Marshal() string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// Problem is one thing wrong with an annotation value.
type Problem struct {
	// Field is the JSON path inside the annotation ("handshake.request"),
	// empty for the value as a whole.
	Field string
	// Message says what is wrong.
	Message string
}

func (p Problem) String() string {
	if p.Field == "" {
		return p.Message
	}
	return p.Field + ": " + p.Message
}

// Parse decodes an annotation value strictly: exact-case field names,
// no unknown or repeated fields, the right JSON types, required fields set
// and every value in range. A typo must not silently disable the gate, so
// anything doubtful is a Problem. The StatusSource is returned whenever the
// JSON decoded, even with problems, so later checks can still run.
func Parse(value string) (*StatusSource, []Problem) {
	var p parser
	raw, ok := p.object("", []byte(value), []string{"apiVersion", "kind", "name", "namespace", "conditions", "whenAbsent", "handshake"})
	if !ok {
		return nil, p.problems
	}
	s := &StatusSource{}
	s.APIVersion = p.str(raw, "", "apiVersion")
	s.Kind = p.str(raw, "", "kind")
	s.Name = p.str(raw, "", "name")
	s.Namespace = p.str(raw, "", "namespace")
	s.WhenAbsent = WhenAbsent(p.str(raw, "", "whenAbsent"))
	if v, ok := raw["conditions"]; ok && !isNull(v) {
		if err := json.Unmarshal(v, &s.Conditions); err != nil {
			s.Conditions = nil
			p.add("conditions", "must be a list of condition type strings")
		} else if len(s.Conditions) == 0 {
			p.add("conditions", "must not be empty; leave it out to read only Upgradeable")
		}
	}
	if v, ok := raw["handshake"]; ok && !isNull(v) {
		s.Handshake = p.handshake(v)
	}
	reported := map[string]bool{}
	for _, pr := range p.problems {
		reported[pr.Field] = true
	}
	for _, pr := range Check(s) {
		if pr.Message == "is required" && reported[pr.Field] {
			continue // "must be a string" already said it
		}
		p.problems = append(p.problems, pr)
	}
	return s, p.problems
}

// Check validates the values of a decoded StatusSource (Parse calls it; so
// does generate before it writes anything).
func Check(s *StatusSource) []Problem {
	var ps []Problem
	add := func(field, format string, args ...interface{}) {
		ps = append(ps, Problem{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	for _, f := range []struct{ name, value string }{{"apiVersion", s.APIVersion}, {"kind", s.Kind}, {"name", s.Name}} {
		if strings.TrimSpace(f.value) == "" {
			add(f.name, "is required")
		}
	}
	if strings.TrimSpace(s.APIVersion) != "" {
		gv, err := schema.ParseGroupVersion(s.APIVersion)
		switch {
		case err != nil:
			add("apiVersion", "%q is not GROUP/VERSION: %v", s.APIVersion, err)
		case gv.Group == "":
			add("apiVersion", "%q has no group; a status source is a custom resource, whose apiVersion is GROUP/VERSION", s.APIVersion)
		default:
			for _, msg := range content.IsDNS1123Subdomain(gv.Group) {
				add("apiVersion", "group %q: %s", gv.Group, msg)
			}
			for _, msg := range content.IsDNS1123Label(gv.Version) {
				add("apiVersion", "version %q: %s", gv.Version, msg)
			}
		}
	}
	if strings.TrimSpace(s.Kind) != "" && !isKind(s.Kind) {
		add("kind", "%q is not a kind (letters and digits, starting with a letter)", s.Kind)
	}
	if strings.TrimSpace(s.Name) != "" {
		for _, msg := range content.IsDNS1123Subdomain(s.Name) {
			add("name", "%q: %s", s.Name, msg)
		}
	}
	if s.Namespace != "" {
		for _, msg := range content.IsDNS1123Label(s.Namespace) {
			add("namespace", "%q: %s", s.Namespace, msg)
		}
	}
	if len(s.Conditions) > 0 {
		seen := map[string]bool{}
		hasUpgradeable := false
		for i, c := range s.Conditions {
			f := fmt.Sprintf("conditions[%d]", i)
			switch {
			case c == "":
				add(f, "empty condition type")
			case seen[c]:
				add(f, "%q is listed twice", c)
			}
			seen[c] = true
			if c == ConditionUpgradeable {
				hasUpgradeable = true
			}
		}
		if !hasUpgradeable {
			msg := fmt.Sprintf("must contain %q, the condition OLM gates upgrades on", ConditionUpgradeable)
			for _, c := range s.Conditions {
				if IsNearMiss(c) {
					msg += fmt.Sprintf(" (%q is a misspelling of it)", c)
					break
				}
			}
			add("conditions", "%s", msg)
		}
	}
	switch s.WhenAbsent {
	case "", WhenAbsentAllow, WhenAbsentBlock:
	default:
		add("whenAbsent", "%q is not one of Allow, Block", s.WhenAbsent)
	}
	if h := s.Handshake; h != nil {
		checkHandshake(h, add)
	}
	return ps
}

func checkHandshake(h *Handshake, add func(field, format string, args ...interface{})) {
	switch h.Mode {
	case "":
		add("handshake.mode", "is required: one of None, OperatorCondition, RequestAck")
	case HandshakeNone, HandshakeOperatorCondition:
		if h.Request != nil {
			add("handshake.request", "applies only to mode RequestAck, not %s", h.Mode)
		}
		if h.Ack != nil {
			add("handshake.ack", "applies only to mode RequestAck, not %s", h.Mode)
		}
	case HandshakeRequestAck:
		if h.Request == nil {
			add("handshake.request", `is required for RequestAck: {"specPath": ".spec.FIELD"} or {"annotation": "KEY"}`)
		}
	default:
		add("handshake.mode", "%q is not one of None, OperatorCondition, RequestAck", h.Mode)
	}
	if r := h.Request; r != nil {
		switch {
		case r.SpecPath == "" && r.Annotation == "":
			add("handshake.request", "needs specPath or annotation")
		case r.SpecPath != "" && r.Annotation != "":
			add("handshake.request", "has both specPath and annotation; OLM writes its token to one place")
		case r.SpecPath != "":
			if msg := checkFieldPath(r.SpecPath, "spec"); msg != "" {
				add("handshake.request.specPath", "%s", msg)
			}
		default:
			for _, msg := range content.IsQualifiedName(strings.ToLower(r.Annotation)) {
				add("handshake.request.annotation", "%q: %s", r.Annotation, msg)
			}
		}
	}
	if a := h.Ack; a != nil {
		if a.StatusPath == "" {
			add("handshake.ack.statusPath", "is required when ack is given")
		} else if msg := checkFieldPath(a.StatusPath, "status"); msg != "" {
			add("handshake.ack.statusPath", "%s", msg)
		}
	}
}

// FieldPath splits ".spec.upgradeRequest" into its field names.
func FieldPath(p string) []string {
	return strings.Split(strings.TrimPrefix(p, "."), ".")
}

func checkFieldPath(p, root string) string {
	if !strings.HasPrefix(p, "."+root+".") {
		return fmt.Sprintf("%q must start with .%s.", p, root)
	}
	for _, f := range FieldPath(p)[1:] {
		if f == "" || strings.ContainsAny(f, "[]*\"' ") {
			return fmt.Sprintf("%q is not a path of field names like .%s.field.sub", p, root)
		}
	}
	return ""
}

func isKind(s string) bool {
	for i, r := range s {
		switch {
		case r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return s != ""
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

// parser decodes JSON objects with exact, known, unrepeated keys.
type parser struct{ problems []Problem }

func (p *parser) add(field, format string, args ...interface{}) {
	p.problems = append(p.problems, Problem{Field: field, Message: fmt.Sprintf(format, args...)})
}

func join(prefix, field string) string {
	if prefix == "" {
		return field
	}
	return prefix + "." + field
}

// object decodes one JSON object into its raw members, reporting unknown
// and repeated keys. It fails only when data is not a JSON object.
func (p *parser) object(prefix string, data []byte, known []string) (map[string]json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	what := "the annotation value"
	if prefix != "" {
		what = prefix
	}
	tok, err := dec.Token()
	if err != nil {
		p.add(prefix, "%s is not JSON: %v", what, jsonErr(err, data))
		return nil, false
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		p.add(prefix, "%s must be a JSON object, not %s", what, describe(tok))
		return nil, false
	}
	out := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			p.add(prefix, "%s is not JSON: %v", what, jsonErr(err, data))
			return nil, false
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			p.add(prefix, "%s is not JSON: %v", what, jsonErr(err, data))
			return nil, false
		}
		switch {
		case !contains(known, key):
			msg := fmt.Sprintf("unknown field %q", key)
			if s := closest(key, known); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			p.add(join(prefix, key), "%s; known fields: %s", msg, strings.Join(known, ", "))
		case out[key] != nil:
			p.add(join(prefix, key), "is given twice")
		default:
			out[key] = raw
		}
	}
	if _, err := dec.Token(); err != nil {
		p.add(prefix, "%s is not JSON: %v", what, jsonErr(err, data))
		return nil, false
	}
	if prefix == "" {
		if tok, err := dec.Token(); err == nil {
			p.add("", "unexpected %s after the JSON object", describe(tok))
		} else if !errors.Is(err, io.EOF) {
			p.add("", "unexpected text after the JSON object: %v", jsonErr(err, data))
		}
	}
	return out, true
}

func (p *parser) str(raw map[string]json.RawMessage, prefix, key string) string {
	v, ok := raw[key]
	if !ok || isNull(v) {
		return ""
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		p.add(join(prefix, key), "must be a string, not %s", string(bytes.TrimSpace(v)))
		return ""
	}
	return s
}

func (p *parser) handshake(data json.RawMessage) *Handshake {
	raw, ok := p.object("handshake", data, []string{"mode", "request", "ack"})
	if !ok {
		return nil
	}
	h := &Handshake{Mode: HandshakeMode(p.str(raw, "handshake", "mode"))}
	if v, ok := raw["request"]; ok && !isNull(v) {
		if r, ok := p.object("handshake.request", v, []string{"specPath", "annotation"}); ok {
			h.Request = &HandshakeRequest{
				SpecPath:   p.str(r, "handshake.request", "specPath"),
				Annotation: p.str(r, "handshake.request", "annotation"),
			}
		}
	}
	if v, ok := raw["ack"]; ok && !isNull(v) {
		if a, ok := p.object("handshake.ack", v, []string{"statusPath"}); ok {
			h.Ack = &HandshakeAck{StatusPath: p.str(a, "handshake.ack", "statusPath")}
		}
	}
	return h
}

func jsonErr(err error, data []byte) error {
	if se, ok := err.(*json.SyntaxError); ok {
		return fmt.Errorf("%s at offset %d", se.Error(), se.Offset)
	}
	if err.Error() == "EOF" || err.Error() == "unexpected EOF" {
		if len(bytes.TrimSpace(data)) == 0 {
			return fmt.Errorf("the value is empty")
		}
		return fmt.Errorf("unexpected end of the value")
	}
	return err
}

func describe(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			return "a list"
		}
		return fmt.Sprintf("%q", string(t))
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// closest suggests a known field for a misspelt one: the same name in
// another case, or one within two edits.
func closest(s string, known []string) string {
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
