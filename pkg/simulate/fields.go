package simulate

import (
	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/statuscheck/statuscheck/internal/jsonobj"
	"github.com/statuscheck/statuscheck/pkg/bridge"
)

// The apiserver's field manager (managedFields), for the one field the
// model follows: the OperatorCondition's spec.conditions, which
// statuscheck bridge reads to tell whether another writer keeps the
// Upgradeable entry (bridge.OtherWriter). OLM's OperatorCondition CRD
// gives spec.conditions no x-kubernetes-list-type, so structured-merge-diff
// treats the list as atomic: one field. An update (not an apply) that
// changes a field makes its manager the field's owner and takes the field
// from every other manager (sigs.k8s.io/structured-merge-diff/v4 merge
// Updater.Update: the changed set is added to the manager's and removed
// from the others', and a manager left with nothing is dropped).

// ocAPIVersion is the version managedFields name for OLM's writes and
// the bridge's.
const ocAPIVersion = OperatorConditionAPIVersion

// manager is the field manager a step writes under: the step's who (a
// recording's field manager, or the explorer's), else its actor.
func manager(st Step) string {
	if st.Who != "" {
		return st.Who
	}
	return string(st.Actor)
}

// conditionsOf is an object's spec.conditions.
func conditionsOf(obj map[string]interface{}) interface{} {
	spec, _ := obj["spec"].(map[string]interface{})
	return spec["conditions"]
}

// takeConditions makes mgr the owner of spec.conditions in out's
// managedFields when the update from old to out changed them. out is the
// apiserver model's fresh answer, its own to change.
func takeConditions(old, out map[string]interface{}, mgr string) {
	if jsonobj.Equal(conditionsOf(old), conditionsOf(out)) {
		return
	}
	md, _ := out["metadata"].(map[string]interface{})
	if md == nil {
		return
	}
	list, _ := md["managedFields"].([]interface{})
	kept := make([]interface{}, 0, len(list)+1)
	mine := false
	for _, e := range list {
		entry, _ := e.(map[string]interface{})
		if entry == nil {
			continue
		}
		fields, _ := entry["fieldsV1"].(map[string]interface{})
		spec, _ := fields["f:spec"].(map[string]interface{})
		if entry["manager"] == mgr && entry["operation"] == "Update" {
			mine = true
			if spec == nil {
				if fields == nil {
					fields = map[string]interface{}{}
					entry["fieldsV1"] = fields
				}
				spec = map[string]interface{}{}
				fields["f:spec"] = spec
			}
			spec["f:conditions"] = map[string]interface{}{}
			kept = append(kept, entry)
			continue
		}
		if _, owns := spec["f:conditions"]; owns {
			delete(spec, "f:conditions")
			if len(spec) == 0 {
				delete(fields, "f:spec")
			}
			if len(fields) == 0 {
				continue // a manager left with nothing is dropped
			}
		}
		kept = append(kept, entry)
	}
	if !mine {
		kept = append(kept, map[string]interface{}{"manager": mgr, "operation": "Update", "apiVersion": ocAPIVersion,
			"fieldsType": "FieldsV1", "fieldsV1": map[string]interface{}{"f:spec": map[string]interface{}{"f:conditions": map[string]interface{}{}}}})
	}
	md["managedFields"] = kept
}

// otherWriter is bridge.OtherWriter on the OperatorCondition o before a
// write: the bridge's own reading of who else keeps its Upgradeable entry
// (managedFields and the digest of the entry it last wrote), remembered
// per object.
func (c *Config) otherWriter(o *Object) string {
	if c.Memo != nil {
		if w, ok := c.Memo.others[o.ID()]; ok {
			return w
		}
	}
	var oc operatorsv2.OperatorCondition
	w := ""
	if runtime.DefaultUnstructuredConverter.FromUnstructured(o.Full(OperatorConditionAPIVersion, OperatorConditionKind), &oc) == nil {
		w = bridge.OtherWriter(&oc)
	}
	if c.Memo != nil {
		c.Memo.others[o.ID()] = w
	}
	return w
}
