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
// rule anywhere (a rule may compare them), no allOf/anyOf/oneOf/not on the
// way to them, and no bound on them but a minimum of at most 1 (format int32 is a bound); the
// apiserver's other rules on them (ObjectMeta's generation >= 0, the list's
// map keys, pruning, defaulting, ratcheting by equality) do not depend on
// where the values sit. Without a schema nothing is validated.
func (r *Resource) ShiftsGenerations() bool { return r.shifts }

func shiftInvariant(s *apiextv1.JSONSchemaProps) bool {
	if s == nil {
		return true
	}
	if hasRules(s) || combined(s) {
		return false
	}
	status, ok := s.Properties["status"]
	if !ok {
		return true
	}
	if combined(&status) || !plainGeneration(status.Properties["observedGeneration"]) {
		return false
	}
	conds, ok := status.Properties["conditions"]
	if !ok {
		return true
	}
	if combined(&conds) || conds.Items == nil {
		return !combined(&conds)
	}
	if conds.Items.Schema == nil {
		return len(conds.Items.JSONSchemas) == 0
	}
	item := conds.Items.Schema
	return !combined(item) && plainGeneration(item.Properties["observedGeneration"])
}

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

// hasRules finds an x-kubernetes-validations rule anywhere in s.
func hasRules(s *apiextv1.JSONSchemaProps) bool {
	if s == nil {
		return false
	}
	if len(s.XValidations) > 0 {
		return true
	}
	for _, p := range s.Properties {
		if hasRules(&p) {
			return true
		}
	}
	if s.Items != nil {
		if hasRules(s.Items.Schema) {
			return true
		}
		for i := range s.Items.JSONSchemas {
			if hasRules(&s.Items.JSONSchemas[i]) {
				return true
			}
		}
	}
	if s.AdditionalProperties != nil && hasRules(s.AdditionalProperties.Schema) {
		return true
	}
	for _, list := range [][]apiextv1.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
		for i := range list {
			if hasRules(&list[i]) {
				return true
			}
		}
	}
	return hasRules(s.Not)
}
