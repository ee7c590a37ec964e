package contract

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TokenType is the JSON type of the RequestAck handshake's token where it
// is written (docs/contract.md section 6). It is decided once, from the
// CRD's schema at the field (package crd, Version.HandshakeTokens), and
// every writer of a token uses it: validate's probes, simulate's request
// steps, explore's OLM and operator, record's reading of a recording.
type TokenType string

const (
	// TokenString is a JSON string: "3". An annotation is always one, and
	// so is a field the schema types string or int-or-string or leaves
	// untyped.
	TokenString TokenType = "string"
	// TokenInteger is a JSON integer: 3, where the schema says integer.
	TokenInteger TokenType = "integer"
)

// Value is the token text as the JSON value a writer puts in a field of
// this type: an int64 for TokenInteger when the text is one (a text that
// is not stays a string, which the apiserver then refuses as it would on
// a cluster), else the text.
func (t TokenType) Value(text string) interface{} {
	if t == TokenInteger {
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			return n
		}
	}
	return text
}

// Tokens are the token's types where OLM writes it (Request: the spec
// field at request.specPath, or an annotation) and where the operator
// echoes it (Ack: ack.statusPath). The zero value is strings, which is
// what a CRD that keeps every field takes.
type Tokens struct {
	Request TokenType `json:"request,omitempty"`
	Ack     TokenType `json:"ack,omitempty"`
}

// RequestValue is token text as OLM writes it.
func (t Tokens) RequestValue(text string) interface{} { return t.Request.Value(text) }

// AckValue is token text as the operator echoes it.
func (t Tokens) AckValue(text string) interface{} { return t.Ack.Value(text) }

// TokenAt reads a handshake token at a field path of an object, as its
// text whatever its JSON type (5 and "5" read alike); false when it is
// absent or null.
func TokenAt(obj map[string]interface{}, fields []string) (string, bool) {
	v, ok, _ := unstructured.NestedFieldNoCopy(obj, fields...)
	if !ok || v == nil {
		return "", false
	}
	if s, ok := v.(string); ok {
		return s, true
	}
	return fmt.Sprint(v), true
}
