package v1alpha1

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/statuscheck/statuscheck/internal/jsonobj"
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
	// RequestRecordAnnotation is where a lifecycle manager that implements
	// the RequestAck handshake (OLM with olm/patches, its
	// StatusSourceRequestAnnotationKey) keeps its request on the status
	// source: the token, the CSV it is for, the generation it was written
	// at and the CR's uid. It is the manager's bookkeeping of the request,
	// not a user's write.
	RequestRecordAnnotation = "operatorframework.io/status-source-request"
	// BridgeRequestRecordAnnotation is where statuscheck's bridge keeps its
	// RequestAck request on the status source (pkg/bridge's
	// RequestRecord as JSON).
	BridgeRequestRecordAnnotation = "statuscheck.operatorframework.io/upgrade-request"
	// ConditionUpgradeable is the condition type OLM gates upgrades on
	// (operatorsv1.Upgradeable in operator-framework/api).
	ConditionUpgradeable = "Upgradeable"
)

// ManagerRequestRecord is the record at RequestRecordAnnotation, as the
// lifecycle manager writes it (olm/patches 0003,
// statusSourceRequestRecord): the request's token, the replacing CSV and
// its namespace it is for (no CSV once withdrawn), the CR's generation it
// was written at and the CR's uid, and where the token was written.
type ManagerRequestRecord struct {
	Token      int64     `json:"token"`
	CSV        string    `json:"csv,omitempty"`
	Namespace  string    `json:"namespace,omitempty"`
	Generation int64     `json:"generation,omitempty"`
	UID        types.UID `json:"uid,omitempty"`
	SpecPath   string    `json:"specPath,omitempty"`
	Annotation string    `json:"annotation,omitempty"`
}

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

// GroupVersionKind is the status source's GVK.
func (s *StatusSource) GroupVersionKind() schema.GroupVersionKind {
	return s.GroupVersion().WithKind(s.Kind)
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

// Request is the RequestAck handshake's request, nil in other modes.
func (s *StatusSource) Request() *HandshakeRequest {
	if s.Mode() != HandshakeRequestAck || s.Handshake == nil {
		return nil
	}
	return s.Handshake.Request
}

// AckPath is the RequestAck handshake's ack.statusPath as field names
// (["status", "observedUpgradeRequest"]), nil when there is none.
func (s *StatusSource) AckPath() []string {
	if h := s.Handshake; s.Mode() == HandshakeRequestAck && h != nil && h.Ack != nil && h.Ack.StatusPath != "" {
		return FieldPath(h.Ack.StatusPath)
	}
	return nil
}

// FieldPath splits ".spec.upgradeRequest" into its field names.
func FieldPath(p string) []string {
	return strings.Split(strings.TrimPrefix(p, "."), ".")
}

// Marshal renders the annotation value: compact JSON with fields in the
// order of the contract's table.
func (s *StatusSource) Marshal() string {
	return jsonobj.Compact(s)
}
