package explore

import (
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/bridge"
	"github.com/statuscheck/statuscheck/pkg/simulate"
)

// With Config.Bridge the explorer adds statuscheck bridge as an actor and
// OLM reads the OperatorCondition, as OLM v0 does. The bridge runs
// pkg/bridge.Decide itself, the decision the runner makes, in two moves,
// as the runner's sync does: it reads the CR and the OperatorCondition
// (a move of the explorer's own, which writes nothing and is left out of
// the traces), and later writes what it decided then: under RequestAck
// first the request to the CR, then the OperatorCondition's Upgradeable
// entry. OLM's copy of spec.conditions into status is a move of its own
// (syncOperatorConditionStatus), and OLM's check reads that copy. Under
// RequestAck, OLM's move before any check is making the CSV that
// replaces the running one (the explorer's own move too: the bridge sees
// it in the namespace's CSVs and writes the request; OLM never does).
//
// The OperatorCondition's update conflicts when OLM copied its status in
// between (resourceVersion), and the runner then reads everything again;
// the model lets that write through instead. That only adds
// interleavings where the bridge writes from an older read, so what the
// model finds safe stays safe.

// Moves of the explorer's own: they write nothing, and traces leave them
// out.
const (
	verbBridgeReads v1alpha1.Verb = "(the bridge reads the CR and the OperatorCondition)"
	verbReplacement v1alpha1.Verb = "(OLM makes the CSV that replaces the running one)"
)

func internal(st Step) bool { return st.Verb == verbBridgeReads || st.Verb == verbReplacement }

// runningCSV and nextCSV name the CSVs of the bridge's model.
const (
	runningCSV = "operator"
	nextCSV    = "operator-next"
)

// bridgeDecision is the bridge's decision on a state.
func bridgeDecision(cfg *Config, s *State, replacing bool) bridge.Decision {
	in := bridge.Input{Source: cfg.Source, Tokens: cfg.Tokens, Running: runningCSV, Request: s.Request(), Now: simulate.Epoch}
	if s.CR.Exists {
		in.CR = &unstructured.Unstructured{Object: s.CR.Full(cfg.Source.APIVersion, cfg.Source.Kind)}
	}
	if s.OC.Exists {
		oc := &operatorsv2.OperatorCondition{}
		if runtime.DefaultUnstructuredConverter.FromUnstructured(s.OC.Full(simulate.OperatorConditionAPIVersion, simulate.OperatorConditionKind), oc) == nil {
			in.OC = oc
		}
	}
	if replacing {
		next := operatorsv1alpha1.ClusterServiceVersion{}
		next.Name, next.Spec.Replaces = nextCSV, runningCSV
		in.CSVs = []operatorsv1alpha1.ClusterServiceVersion{next}
	}
	return bridge.Decide(in)
}

// bridgeMoves are the bridge's moves: a pending write, else a read when
// the decision on the state would write something.
func bridgeMoves(cfg *Config, n *node) []Step {
	a := &n.act
	switch {
	case a.bridgeRequest:
		return []Step{{Actor: v1alpha1.ActorBridge, Verb: v1alpha1.VerbRequest}}
	case a.bridgeWrite != nil:
		return []Step{{Actor: v1alpha1.ActorBridge, Verb: v1alpha1.VerbUpdate, Target: v1alpha1.TargetOperatorCondition,
			Value: map[string]interface{}{"spec": map[string]interface{}{"conditions": a.bridgeWrite}}}}
	}
	if d := bridgeDecision(cfg, &n.state, a.replacing); d.Request != nil || d.WriteOC {
		return []Step{{Actor: v1alpha1.ActorBridge, Verb: verbBridgeReads}}
	}
	return nil
}

// bridgeReads remembers what the bridge decided, to write later.
func bridgeReads(cfg *Config, s *State, a *actors) {
	d := bridgeDecision(cfg, s, a.replacing)
	a.bridgeRequest = d.Request != nil
	a.bridgeWrite = nil
	if d.WriteOC {
		a.bridgeWrite = conditionsValue(d.Conditions)
	}
}

// conditionsValue is spec.conditions as the runner writes it.
func conditionsValue(cs []metav1.Condition) []interface{} {
	out := make([]interface{}, 0, len(cs))
	for i := range cs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&cs[i])
		if err == nil {
			out = append(out, m)
		}
	}
	return out
}

// bridgeStart is the OperatorCondition the bridge has written by the time
// the explored traces start: its decision on the starting CR, copied into
// status by OLM's own copy (simulate.SyncOperatorConditionStatus).
func bridgeStart(cfg *Config, cr map[string]interface{}) (map[string]interface{}, error) {
	oc := map[string]interface{}{
		"apiVersion": simulate.OperatorConditionAPIVersion, "kind": simulate.OperatorConditionKind,
		"metadata": map[string]interface{}{"name": runningCSV, "generation": int64(1)},
		"spec":     map[string]interface{}{},
	}
	s, err := simulate.Initial(cfg, cr, oc)
	if err != nil {
		return nil, err
	}
	d := bridgeDecision(cfg, &s, false)
	oc["spec"] = map[string]interface{}{"conditions": conditionsValue(d.Conditions)}
	status, _, err := simulate.SyncOperatorConditionStatus(oc, simulate.Epoch)
	if err != nil {
		return nil, err
	}
	oc["status"] = status
	return oc, nil
}
