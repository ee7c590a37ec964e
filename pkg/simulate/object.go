package simulate

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/statuscheck/statuscheck/internal/jsonobj"
	"github.com/statuscheck/statuscheck/pkg/contract"
)

// Object is a custom resource as the apiserver holds it, split the way the
// apiserver's strategy looks at it (jsonobj.Split): metadata, status, and
// everything else (the part whose changes bump metadata.generation). Its
// maps are never modified in place: a change builds new maps, so a State
// can be copied by value and a branch of the explorer cannot disturb
// another.
type Object struct {
	Exists     bool
	Generation int64
	// Meta is metadata without generation.
	Meta map[string]interface{}
	// Body is every top-level field but apiVersion, kind, metadata and
	// status: spec and whatever else the CRD has.
	Body map[string]interface{}
	// Status is .status, nil when absent.
	Status map[string]interface{}

	// Conditions and StatusOG are read from Status when it is set.
	Conditions []contract.Condition
	StatusOG   *int64
	// Duplicate names a condition type that appears twice, if one does.
	Duplicate string
}

// NewObject splits a full object (as a trace or a snapshot gives it).
func NewObject(obj map[string]interface{}) Object {
	p := jsonobj.Split(obj)
	o := Object{Exists: true, Generation: 1, Body: p.Body}
	if p.Meta != nil || obj["metadata"] != nil {
		o.Meta = make(map[string]interface{}, len(p.Meta))
		for k, v := range p.Meta {
			if k == "generation" {
				if g, ok := jsonobj.Int(v); ok {
					o.Generation = g
				}
				continue
			}
			o.Meta[k] = v
		}
	}
	if _, ok := obj["status"]; ok {
		o = o.withStatus(p.Status)
	}
	return o
}

// withStatus returns o with a new status, its conditions read.
func (o Object) withStatus(st map[string]interface{}) Object {
	o.Status = st
	o.Conditions, o.StatusOG, o.Duplicate = contract.ReadStatus(st)
	return o
}

// Observation is what the gate sees of the object (without the
// OperatorCondition's overrides).
func (o Object) Observation() contract.Observation {
	return contract.Observation{Exists: o.Exists, Generation: o.Generation, StatusObservedGeneration: o.StatusOG, Conditions: o.Conditions}
}

// Overrides are an OperatorCondition's spec.overrides.
func (o Object) Overrides() []contract.Condition {
	v, _, _ := unstructured.NestedFieldNoCopy(o.Body, "spec", "overrides")
	list, _ := v.([]interface{})
	if len(list) == 0 {
		return nil
	}
	conds, _ := contract.ReadConditions(list)
	return conds
}
