package testutil

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
)

// CoolSource is the good bundle's status source, pinned to namespace
// cool-system, as the reader tests read it.
var CoolSource = &v1alpha1.StatusSource{APIVersion: "cool.operators.corp/v1beta1", Kind: "CoolOperator", Name: "cool-operator", Namespace: "cool-system"}

// CoolObject is a CoolOperator as a snapshot shows it: generation gen,
// spec.storageLayer layer and one Upgradeable condition.
func CoolObject(gen int64, layer string, status string, og int64) map[string]interface{} {
	return map[string]interface{}{"apiVersion": "cool.operators.corp/v1beta1", "kind": "CoolOperator",
		"metadata": map[string]interface{}{"name": "cool-operator", "namespace": "cool-system", "generation": gen},
		"spec":     map[string]interface{}{"storageLayer": layer},
		"status": map[string]interface{}{"conditions": []interface{}{map[string]interface{}{"type": "Upgradeable", "status": status,
			"reason": "R", "message": "", "lastTransitionTime": "2024-01-01T00:00:00Z", "observedGeneration": og}}}}
}

// AuditEvent is one audit.k8s.io/v1 Event line at RequestResponse level
// of a request on the CoolOperator.
func AuditEvent(verb, subresource string, user string, obj map[string]interface{}) string {
	ev := map[string]interface{}{"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse", "stage": "ResponseComplete",
		"verb": verb, "user": map[string]interface{}{"username": user},
		"objectRef":      map[string]interface{}{"resource": "cooloperators", "namespace": "cool-system", "name": "cool-operator", "apiGroup": "cool.operators.corp", "apiVersion": "v1beta1", "subresource": subresource},
		"responseStatus": map[string]interface{}{"code": 200}, "responseObject": obj}
	data, _ := json.Marshal(ev)
	return string(data) + "\n"
}

// CoolTrace is the head of a native trace about the CoolOperator
// cool-operator, through "steps:": its initial object at generation 1
// with spec and, unless status is "", status (each in flow YAML).
func CoolTrace(name, spec, status string) string {
	s := "apiVersion: statuscheck.operatorframework.io/v1alpha1\nkind: StatusTrace\nmetadata: {name: " + name + "}\n" +
		"initial:\n  apiVersion: cool.operators.corp/v1beta1\n  kind: CoolOperator\n" +
		"  metadata: {name: cool-operator, generation: 1}\n  spec: " + spec + "\n"
	if status != "" {
		s += "  status: " + status + "\n"
	}
	return s + "steps:\n"
}

// CoolCRDWithRules is the protected fixture's CRD with n CEL rules on
// spec and a status property without a type: a schema that is not
// structural, which the apiserver refuses before it compiles any rule.
func CoolCRDWithRules(t testing.TB, n int) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(RepoRoot(), "testdata/bundles/protected/manifests/cool.operators.corp_cooloperators.yaml"))
	require.NoError(t, err)
	spec := "          spec:\n            type: object\n            properties:\n"
	status := "          status:\n            type: object\n            properties:\n"
	require.Equal(t, 1, strings.Count(string(data), spec))
	require.Equal(t, 1, strings.Count(string(data), status))
	var rules strings.Builder
	for i := range n {
		fmt.Fprintf(&rules, "            - rule: \"self.storageLayer != 'x%d' || self.upgradeRequest.startsWith('y%d')\"\n", i, i)
	}
	text := strings.Replace(string(data), spec, "          spec:\n            type: object\n            x-kubernetes-validations:\n"+rules.String()+"            properties:\n", 1)
	text = strings.Replace(text, status, status+"              broken: {description: no type here}\n", 1)
	return []byte(text)
}
