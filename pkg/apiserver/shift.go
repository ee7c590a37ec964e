package apiserver

import (
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// ShiftsGenerations reports whether this version's answers are invariant
// under one shift of the generations: moving metadata.generation,
// status.observedGeneration and every status.conditions[].observedGeneration
// of a write's old object and of the write by the same amount (all of them
// staying between 1 and 2^62) gives the same answer, moved by that amount.
// It holds when nothing in the schema can tell such values apart: no CEL
// rule over them (on the root, status, its observedGeneration,
// conditions, their items or their observedGeneration: a rule reads its
// own subtree), no allOf/anyOf/oneOf/not on the way to them, and no bound on them but a minimum of at most 1 (format int32 is a bound); the
// apiserver's other rules on them (ObjectMeta's generation >= 0, the list's
// map keys, pruning, defaulting, ratcheting by equality) do not depend on
// where the values sit. Without a schema nothing is validated.
func (r *Resource) ShiftsGenerations() bool { return r.shifts }

func shiftInvariant(s *apiextv1.JSONSchemaProps) bool {
	if s == nil {
		return true
	}
	if ruled(s) {
		return false
	}
	status, ok := s.Properties["status"]
	if !ok {
		return true
	}
	if ruled(&status) || !plainGeneration(status.Properties["observedGeneration"]) {
		return false
	}
	conds, ok := status.Properties["conditions"]
	if !ok {
		return true
	}
	if ruled(&conds) || conds.Items == nil {
		return !ruled(&conds)
	}
	if conds.Items.Schema == nil {
		return len(conds.Items.JSONSchemas) == 0
	}
	item := conds.Items.Schema
	return !ruled(item) && plainGeneration(item.Properties["observedGeneration"])
}

// ruled: a node on the way to a generation that a combinator or a CEL
// rule looks at. A rule's self is its node's value, oldSelf the same
// place's old value (apiextensions-apiserver pkg/apiserver/schema/cel
// Validator.validate evaluates a node's rules on that node's value), so a
// rule reads only its own subtree.
func ruled(s *apiextv1.JSONSchemaProps) bool { return combined(s) || len(s.XValidations) > 0 }

func combined(s *apiextv1.JSONSchemaProps) bool {
	return len(s.AllOf) > 0 || len(s.AnyOf) > 0 || len(s.OneOf) > 0 || s.Not != nil
}

// plainGeneration: a generation field with no bound that could tell two
// values of at least 1 apart.
func plainGeneration(s apiextv1.JSONSchemaProps) bool {
	// int32 is range-checked (kube-openapi validate.IsValueValidAgainstRange).
	if s.Maximum != nil || len(s.Enum) > 0 || s.MultipleOf != nil || s.Format == "int32" || combined(&s) {
		return false
	}
	return s.Minimum == nil || *s.Minimum < 1 || (*s.Minimum == 1 && !s.ExclusiveMinimum)
}
