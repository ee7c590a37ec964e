package guard

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/contract"
)

func loadCSV(t *testing.T) *bundle.CSV {
	t.Helper()
	b, err := bundle.Load(filepath.Join(testutil.RepoRoot(), "testdata", "bundles", "handshake", "none"), bundle.Options{})
	require.NoError(t, err)
	return b.CSV()
}

func coolSource(conds ...string) *v1alpha1.StatusSource {
	return &v1alpha1.StatusSource{APIVersion: "cool.operators.corp/v1beta1", Kind: "CoolOperator", Name: "cool-operator", Conditions: conds}
}

// TestResolve: the bad inputs are refused with the CSV's file named, all
// of them at once; good ones resolve the CR's namespace and the only
// Deployment.
func TestResolve(t *testing.T) {
	csv := loadCSV(t)
	tests := []struct {
		name       string
		src        *v1alpha1.StatusSource
		namespaced bool
		namespace  string
		deployment string
		err        []string
	}{
		{name: "namespaced, the only deployment", src: coolSource(), namespaced: true, namespace: "cool-system"},
		{name: "the deployment by name", src: coolSource(), namespaced: true, namespace: "cool-system", deployment: "cool-operator"},
		{name: "a kind the CSV does not own", src: &v1alpha1.StatusSource{APIVersion: "cool.operators.corp/v1beta1", Kind: "WarmOperator", Name: "w"}, namespaced: true, namespace: "cool-system",
			err: []string{"does not own WarmOperator in group cool.operators.corp"}},
		{name: "a cluster-scoped kind with a namespace", src: &v1alpha1.StatusSource{APIVersion: "cool.operators.corp/v1beta1", Kind: "CoolOperator", Name: "c", Namespace: "elsewhere"}, namespace: "cool-system",
			err: []string{"CoolOperator is cluster-scoped, but the status source names namespace elsewhere"}},
		{name: "an unknown deployment", src: coolSource(), namespaced: true, namespace: "cool-system", deployment: "warm-operator",
			err: []string{`has no deployment "warm-operator" in its install strategy (it has cool-operator)`}},
		{name: "no namespace", src: coolSource(), namespaced: true, err: []string{"pass --install-namespace NS"}},
		{name: "a namespace that is no DNS label", src: coolSource(), namespaced: true, namespace: "Cool_System", err: []string{`--install-namespace "Cool_System"`}},
		{name: "every problem at once", src: &v1alpha1.StatusSource{APIVersion: "x.io/v1", Kind: "X", Name: "x", Namespace: "n"}, deployment: "nope", namespace: "ns",
			err: []string{"does not own X", "cluster-scoped", `no deployment "nope"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Resolve(csv.Obj, csv.Doc.File, tt.src, "cooloperators", tt.namespaced, tt.namespace, tt.deployment)
			if len(tt.err) > 0 {
				require.Error(t, err)
				for _, e := range tt.err {
					assert.Contains(t, err.Error(), e)
				}
				for _, line := range strings.Split(err.Error(), "\n") {
					if !strings.HasPrefix(line, "--install-namespace") {
						assert.True(t, strings.HasPrefix(line, csv.Doc.File+": "), "%q names the file", line)
					}
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "cool-operator", got.Deployment)
			assert.Equal(t, "cool-system", got.Source.Namespace)
			assert.Equal(t, "cool.operators.corp/v1beta1/CoolOperator/cool-system/cool-operator", got.Ref())
			assert.Empty(t, tt.src.Namespace, "the caller's source is not changed")
		})
	}
}

// TestManifests: the policy matches only UPDATEs of the one Deployment in
// the one namespace, whenAbsent maps to the binding's
// parameterNotFoundAction and the policy's failurePolicy; the hook's
// RBAC is get on the one CR, everything is a Helm pre-upgrade and Argo
// CD PreSync hook, the RBAC before the Job.
func TestManifests(t *testing.T) {
	csv := loadCSV(t)
	for _, absent := range []v1alpha1.WhenAbsent{"", v1alpha1.WhenAbsentBlock} {
		src := coolSource()
		src.WhenAbsent = absent
		tg, err := Resolve(csv.Obj, csv.Doc.File, src, "cooloperators", true, "cool-system", "")
		require.NoError(t, err)
		p, b := AdmissionPolicy(tg)
		rules := p.Spec.MatchConstraints.ResourceRules
		require.Len(t, rules, 1)
		assert.Equal(t, []string{"cool-operator"}, rules[0].ResourceNames)
		assert.Equal(t, []admissionv1.OperationType{admissionv1.Update}, rules[0].Operations)
		assert.Equal(t, []string{"deployments"}, rules[0].Resources)
		assert.Equal(t, "cool-system", p.Spec.MatchConstraints.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"])
		assert.Equal(t, &admissionv1.ParamKind{APIVersion: "cool.operators.corp/v1beta1", Kind: "CoolOperator"}, p.Spec.ParamKind)
		assert.Equal(t, "cool-operator", b.Spec.ParamRef.Name)
		assert.Equal(t, "cool-system", b.Spec.ParamRef.Namespace)
		assert.Equal(t, p.Name, b.Spec.PolicyName)
		if absent == v1alpha1.WhenAbsentBlock {
			assert.Equal(t, admissionv1.Fail, *p.Spec.FailurePolicy)
			assert.Equal(t, admissionv1.DenyAction, *b.Spec.ParamRef.ParameterNotFoundAction)
		} else {
			assert.Equal(t, admissionv1.Fail, *p.Spec.FailurePolicy, "an error never lets an update through")
			assert.Equal(t, admissionv1.AllowAction, *b.Spec.ParamRef.ParameterNotFoundAction)
		}
	}
	tg, err := Resolve(csv.Obj, csv.Doc.File, coolSource(), "cooloperators", true, "cool-system", "")
	require.NoError(t, err)
	objs := UpgradeHook(tg, Hook{Image: "quay.io/statuscheck/statuscheck:v1"})
	require.Len(t, objs, 4)
	role := objs[1].(*rbacv1.Role)
	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{"cool.operators.corp"}, Resources: []string{"cooloperators"}, ResourceNames: []string{"cool-operator"}, Verbs: []string{"get"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, ResourceNames: []string{"cool-operator"}, Verbs: []string{"get"}},
	}, role.Rules, "get on the one CR and, to tell a first install, on the operator's Deployment")
	job := objs[3].(*batchv1.Job)
	assert.Equal(t, []string{"gate", "--source", "cool.operators.corp/v1beta1/CoolOperator/cool-system/cool-operator", "--operator-deployment", "cool-system/cool-operator"}, job.Spec.Template.Spec.Containers[0].Args)
	for _, o := range objs {
		m := o.(interface{ GetAnnotations() map[string]string }).GetAnnotations()
		assert.Equal(t, "pre-upgrade", m["helm.sh/hook"])
		assert.Equal(t, "PreSync", m["argocd.argoproj.io/hook"])
	}
	assert.Equal(t, "-5", role.Annotations["helm.sh/hook-weight"])
	assert.Equal(t, "0", job.Annotations["helm.sh/hook-weight"])
	out, err := YAML(objs...)
	require.NoError(t, err)
	assert.Equal(t, 3, strings.Count(string(out), "\n---\n"))

	// The CR in another namespace than the operator's: the Deployment's
	// get is a Role of its own in the install namespace.
	other := coolSource()
	other.Namespace = "cool-data"
	tg, err = Resolve(csv.Obj, csv.Doc.File, other, "cooloperators", true, "cool-system", "")
	require.NoError(t, err)
	objs = UpgradeHook(tg, Hook{Image: "quay.io/statuscheck/statuscheck:v1"})
	require.Len(t, objs, 6)
	assert.Equal(t, "cool-data", objs[1].(*rbacv1.Role).Namespace)
	assert.Len(t, objs[1].(*rbacv1.Role).Rules, 1)
	dep := objs[3].(*rbacv1.Role)
	assert.Equal(t, "cool-system", dep.Namespace)
	assert.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, ResourceNames: []string{"cool-operator"}, Verbs: []string{"get"}}}, dep.Rules)
	db := objs[4].(*rbacv1.RoleBinding)
	assert.Equal(t, dep.Name, db.RoleRef.Name)
	assert.Equal(t, "cool-system", db.Subjects[0].Namespace)
	_, ok := objs[5].(*batchv1.Job)
	assert.True(t, ok, "the Job last")
}

var (
	celEnv, _ = cel.NewEnv(cel.Variable("params", cel.DynType), cel.Variable("variables", cel.MapType(cel.StringType, cel.DynType)))
	programs  = map[string]cel.Program{}
)

// celEval evaluates the policy's variables and validations on a CR as
// params (with the cel-go the apiserver embeds), as admission does: true
// when every validation passes.
func celEval(t *testing.T, p *admissionv1.ValidatingAdmissionPolicy, params map[string]interface{}) (bool, string) {
	t.Helper()
	eval := func(expr string, vars map[string]interface{}) interface{} {
		prg, ok := programs[expr]
		if !ok {
			ast, iss := celEnv.Compile(expr)
			require.NoError(t, iss.Err(), expr)
			var err error
			prg, err = celEnv.Program(ast)
			require.NoError(t, err)
			programs[expr] = prg
		}
		out, _, err := prg.Eval(map[string]interface{}{"params": params, "variables": vars})
		require.NoError(t, err, expr)
		return out.Value()
	}
	vars := map[string]interface{}{}
	for _, v := range p.Spec.Variables {
		vars[v.Name] = eval(v.Expression, vars)
	}
	for _, v := range p.Spec.Validations {
		if ok := eval(v.Expression, vars).(bool); !ok {
			return false, eval(v.MessageExpression, vars).(string)
		}
	}
	return true, ""
}

// TestPolicyIsTheGate: the policy's CEL decides as the strict gate
// (Decide) does, on every combination of condition status, own and
// status-wide observedGeneration and override, for one and two condition
// types.
func TestPolicyIsTheGate(t *testing.T) {
	csv := loadCSV(t)
	for _, types := range [][]string{nil, {"Upgradeable", "Migrated"}} {
		src := coolSource(types...)
		tg, err := Resolve(csv.Obj, csv.Doc.File, src, "cooloperators", true, "cool-system", "")
		require.NoError(t, err)
		p, _ := AdmissionPolicy(tg)
		statuses := []string{"", "True", "False", "Unknown"}
		gens := []interface{}{nil, int64(2), int64(3), int64(4)}
		overrides := []interface{}{nil, "True", "False", ""}
		n := 0
		for _, st := range statuses {
			for _, own := range gens {
				for _, wide := range gens {
					for _, ov := range overrides {
						for _, second := range []string{"", "True", "False"} {
							cr := crWith(st, own, wide, ov, second, types)
							want := Decide(&unstructured.Unstructured{Object: cr}, src)
							got, msg := celEval(t, p, cr)
							n++
							if !assert.Equal(t, want.Verdict == contract.Allow, got, "%s: gate says %s, policy %q", describe(st, own, wide, ov, second), want.Reason, msg) {
								return
							}
							if !got {
								assert.Contains(t, msg, "the upgrade of Deployment cool-system/cool-operator is held")
							}
						}
					}
				}
			}
		}
		t.Logf("%v: %d combinations agree", types, n)
	}
}

func describe(st string, own, wide, ov interface{}, second string) string {
	return fmt.Sprintf("status %q own %v status-wide %v override %v second %q", st, own, wide, ov, second)
}

// crWith is a CR of generation 3.
func crWith(status string, own, wide, override interface{}, second string, types []string) map[string]interface{} {
	meta := map[string]interface{}{"name": "cool-operator", "namespace": "cool-system", "generation": int64(3)}
	if override != nil {
		meta["annotations"] = map[string]interface{}{contract.OverrideAnnotation: override}
	}
	st := map[string]interface{}{}
	if wide != nil {
		st["observedGeneration"] = wide
	}
	var conds []interface{}
	if status != "" {
		c := map[string]interface{}{"type": "Upgradeable", "status": status, "reason": "R", "message": "m"}
		if own != nil {
			c["observedGeneration"] = own
		}
		conds = append(conds, c)
	}
	if len(types) > 1 && second != "" {
		conds = append(conds, map[string]interface{}{"type": types[1], "status": second, "observedGeneration": int64(3)})
	}
	if conds != nil {
		st["conditions"] = conds
	}
	return map[string]interface{}{"apiVersion": "cool.operators.corp/v1beta1", "kind": "CoolOperator", "metadata": meta, "status": st}
}

// TestPolicyIsTheGateOnOddShapes: CR content a schema may let through
// (x-kubernetes-preserve-unknown-fields, nullable) or an operator may
// write by mistake holds in the policy and in the gate alike; in the
// policy an expression that cannot evaluate is a denial (failurePolicy
// Fail), never a pass.
func TestPolicyIsTheGateOnOddShapes(t *testing.T) {
	csv := loadCSV(t)
	src := coolSource()
	tg, err := Resolve(csv.Obj, csv.Doc.File, src, "cooloperators", true, "cool-system", "")
	require.NoError(t, err)
	p, _ := AdmissionPolicy(tg)
	require.Equal(t, admissionv1.Fail, *p.Spec.FailurePolicy)
	cond := func(kv ...interface{}) map[string]interface{} {
		c := map[string]interface{}{"type": "Upgradeable", "status": "True"}
		for i := 0; i < len(kv); i += 2 {
			c[kv[i].(string)] = kv[i+1]
		}
		return c
	}
	tests := []struct {
		name   string
		status interface{}
		allow  bool
	}{
		{name: "a fresh True", status: map[string]interface{}{"conditions": []interface{}{cond("observedGeneration", int64(3))}}, allow: true},
		{name: "a fresh True written as 3.0", status: map[string]interface{}{"conditions": []interface{}{cond("observedGeneration", float64(3))}}, allow: true},
		{name: "conditions null", status: map[string]interface{}{"observedGeneration": int64(3), "conditions": nil}},
		{name: "conditions a map", status: map[string]interface{}{"observedGeneration": int64(3), "conditions": map[string]interface{}{"Upgradeable": "True"}}},
		{name: "status a string", status: "True"},
		{name: "status null", status: nil},
		{name: "an entry null", status: map[string]interface{}{"observedGeneration": int64(3), "conditions": []interface{}{nil}}},
		{name: "observedGeneration a string", status: map[string]interface{}{"conditions": []interface{}{cond("observedGeneration", "3")}}},
		{name: "observedGeneration junk, status-wide 3", status: map[string]interface{}{"observedGeneration": int64(3), "conditions": []interface{}{cond("observedGeneration", "junk")}}},
		{name: "observedGeneration null, status-wide 3", status: map[string]interface{}{"observedGeneration": int64(3), "conditions": []interface{}{cond("observedGeneration", nil)}}},
		{name: "observedGeneration 3.5", status: map[string]interface{}{"conditions": []interface{}{cond("observedGeneration", 3.5)}}},
		{name: "status-wide observedGeneration a string", status: map[string]interface{}{"observedGeneration": "3", "conditions": []interface{}{cond()}}},
		{name: "status a boolean", status: map[string]interface{}{"conditions": []interface{}{cond("status", true, "observedGeneration", int64(3))}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := map[string]interface{}{"apiVersion": "cool.operators.corp/v1beta1", "kind": "CoolOperator",
				"metadata": map[string]interface{}{"name": "cool-operator", "namespace": "cool-system", "generation": int64(3)}, "status": tt.status}
			gate := Decide(&unstructured.Unstructured{Object: cr}, src)
			assert.Equal(t, tt.allow, gate.Verdict == contract.Allow, "gate: %s", gate.Reason)
			assert.Equal(t, tt.allow, policyAdmits(t, p, cr), "policy")
		})
	}
}

// policyAdmits evaluates the policy as the apiserver does under
// failurePolicy Fail: an expression that fails to evaluate denies.
func policyAdmits(t *testing.T, p *admissionv1.ValidatingAdmissionPolicy, params map[string]interface{}) bool {
	t.Helper()
	vars := map[string]interface{}{}
	eval := func(expr string) (interface{}, error) {
		ast, iss := celEnv.Compile(expr)
		require.NoError(t, iss.Err(), expr)
		prg, err := celEnv.Program(ast)
		require.NoError(t, err)
		out, _, err := prg.Eval(map[string]interface{}{"params": params, "variables": vars})
		if err != nil {
			return nil, err
		}
		return out.Value(), nil
	}
	for _, v := range p.Spec.Variables {
		out, err := eval(v.Expression)
		if err != nil {
			return false
		}
		vars[v.Name] = out
	}
	for _, v := range p.Spec.Validations {
		out, err := eval(v.Expression)
		if err != nil || out != true {
			return false
		}
	}
	return true
}
