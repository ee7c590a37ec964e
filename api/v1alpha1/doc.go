// Package v1alpha1 holds statuscheck's formats as Go types with JSON tags:
// the value of the operatorframework.io/status-source annotation
// (StatusSource) and the StatusTrace that simulate replays and record
// writes (StatusTrace, Step). docs/contract.md sections 2 and 8 describe
// them; what a value means (the gate, the handshake) is package contract's,
// and reading a trace from a file is package trace's.
//
// The types decode strictly (internal/strict: exact field names, no
// unknown or repeated fields), so a typo is an error and never a silently
// ignored field.
package v1alpha1

// GroupVersion is the apiVersion of a StatusTrace.
const GroupVersion = "statuscheck.operatorframework.io/v1alpha1"

// TraceKind is the kind of a StatusTrace.
const TraceKind = "StatusTrace"
