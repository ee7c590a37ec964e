// Package contract holds the meaning of the status-source contract of
// docs/contract.md: the strict parser and the value checks of the
// operatorframework.io/status-source annotation (its type is
// api/v1alpha1's StatusSource), the condition model, the observation the
// gate reads (ObservationFrom an unstructured object), and the gate of
// every policy and handshake (OLM's isOperatorUpgradeable, the stricter and
// older variants, and the RequestAck verdict).
//
// It does no I/O and holds no state: validate, generate, simulate, record
// and the bridge all decide with these functions, so they can never
// disagree about what an annotation means or what the gate says.
package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/strict"
)

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

// Parse decodes an annotation value strictly (internal/strict, which is
// sigs.k8s.io/json's strict decoding: exact-case field names, no unknown
// or repeated fields, the right JSON types), then checks that the
// required fields are set and every value is in range. A typo must not
// silently disable the gate, so anything doubtful is a Problem. The
// StatusSource is returned whenever the value is a JSON object, even with
// problems, so later checks can still run.
func Parse(value string) (*v1alpha1.StatusSource, []Problem) {
	data := []byte(value)
	trimmed := bytes.TrimSpace(data)
	switch {
	case len(trimmed) == 0:
		return nil, []Problem{{Message: "the annotation value is not JSON: the value is empty"}}
	case trimmed[0] != '{':
		var v interface{}
		if err := json.Unmarshal(trimmed, &v); err != nil {
			return nil, []Problem{{Message: "the annotation value is not JSON: " + syntaxMessage(err, trimmed)}}
		}
		return nil, []Problem{{Message: "the annotation value must be a JSON object, not " + Describe(v)}}
	}
	s := &v1alpha1.StatusSource{}
	var ps []Problem
	reported := map[string]bool{}
	for _, e := range strict.Unmarshal(data, s) {
		switch e.Kind {
		case strict.Syntax:
			return nil, []Problem{{Message: syntaxProblem(data, e.Err)}}
		case strict.Unknown:
			msg := fmt.Sprintf("unknown field %q", e.Field())
			if e.Suggestion != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", e.Suggestion)
			}
			ps = append(ps, Problem{Field: e.Path, Message: fmt.Sprintf("%s; known fields: %s", msg, strings.Join(e.Known, ", "))})
		case strict.Duplicate:
			ps = append(ps, Problem{Field: e.Path, Message: "is given twice"})
		case strict.Type:
			ps = append(ps, Problem{Field: e.Path, Message: typeMessage(data, e)})
			reported[e.Path] = true
			if e.Path == "conditions" {
				s.Conditions = nil // what decoded of a bad list means nothing
			}
		}
	}
	if s.Conditions != nil && len(s.Conditions) == 0 {
		ps = append(ps, Problem{Field: "conditions", Message: "must not be empty; leave it out to read only Upgradeable"})
	}
	for _, pr := range Check(s) {
		if pr.Message == "is required" && reported[pr.Field] {
			continue // "must be a string" already said it
		}
		ps = append(ps, pr)
	}
	return s, ps
}

// syntaxProblem says why a value that starts like an object is not JSON:
// cut short, or followed by more text.
func syntaxProblem(data []byte, err error) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	var first json.RawMessage
	if dec.Decode(&first) == nil {
		return "unexpected text after the JSON object"
	}
	return "the annotation value is not JSON: " + syntaxMessage(err, data)
}

func syntaxMessage(err error, data []byte) string {
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if strings.Contains(msg, "unexpected end of JSON input") {
		return "unexpected end of the value"
	}
	if ok, off := sigsjson.SyntaxErrorOffset(err); ok {
		return fmt.Sprintf("%s at offset %d", msg, off)
	}
	return msg
}

// typeMessage says what a mistyped field should have been, quoting what
// it was.
func typeMessage(data []byte, e *strict.Error) string {
	if e.Path == "conditions" {
		return "must be a list of condition type strings"
	}
	got := "a " + e.Got
	var obj map[string]interface{}
	if sigsjson.UnmarshalCaseSensitivePreserveInts(data, &obj) == nil {
		var cur interface{} = obj
		for _, f := range strings.Split(e.Path, ".") {
			m, _ := cur.(map[string]interface{})
			cur = m[f]
		}
		if raw, err := json.Marshal(cur); err == nil && cur != nil {
			got = string(raw)
		}
	}
	switch e.Want {
	case "string", "v1alpha1.WhenAbsent", "v1alpha1.HandshakeMode":
		return "must be a string, not " + got
	}
	return "must be a JSON object, not " + got
}

// Describe names the JSON kind of a decoded value for messages ("a list").
func Describe(v interface{}) string {
	switch v.(type) {
	case []interface{}:
		return "a list"
	case map[string]interface{}:
		return "an object"
	case string:
		return "a string"
	case float64, int64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// Check validates the values of a decoded StatusSource (Parse calls it; so
// does generate before it writes anything).
func Check(s *v1alpha1.StatusSource) []Problem {
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
			default:
				// metav1.Condition's type, as the apiserver validates it
				// (k8s.io/apimachinery/pkg/apis/meta/v1/validation,
				// ValidateCondition: ValidateLabelName).
				for _, e := range metav1validation.ValidateLabelName(c, field.NewPath(f)) {
					add(f, "%q is not a condition type metav1.Condition allows: %s", c, e.Detail)
				}
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
	case "", v1alpha1.WhenAbsentAllow, v1alpha1.WhenAbsentBlock:
	default:
		add("whenAbsent", "%q is not one of Allow, Block", s.WhenAbsent)
	}
	if h := s.Handshake; h != nil {
		checkHandshake(h, add)
	}
	return ps
}

func checkHandshake(h *v1alpha1.Handshake, add func(field, format string, args ...interface{})) {
	switch h.Mode {
	case "":
		add("handshake.mode", "is required: one of None, OperatorCondition, RequestAck")
	case v1alpha1.HandshakeNone, v1alpha1.HandshakeOperatorCondition:
		if h.Request != nil {
			add("handshake.request", "applies only to mode RequestAck, not %s", h.Mode)
		}
		if h.Ack != nil {
			add("handshake.ack", "applies only to mode RequestAck, not %s", h.Mode)
		}
	case v1alpha1.HandshakeRequestAck:
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
		case r.Annotation == v1alpha1.RequestRecordAnnotation || r.Annotation == v1alpha1.BridgeRequestRecordAnnotation:
			// The token would overwrite the requester's record of the
			// request in the same write: every sync would ask again.
			add("handshake.request.annotation", "%q is where the lifecycle manager or the bridge keeps its record of the request", r.Annotation)
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

func checkFieldPath(p, root string) string {
	if !strings.HasPrefix(p, "."+root+".") {
		return fmt.Sprintf("%q must start with .%s.", p, root)
	}
	for _, f := range v1alpha1.FieldPath(p)[1:] {
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
