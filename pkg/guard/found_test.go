package guard

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// TestParse: a policy counts with its binding, a hook Job with its gate's
// --source; a binding without its policy is skipped; a file that does
// not parse is an error naming it.
func TestParse(t *testing.T) {
	csv := loadCSV(t)
	tg, err := Resolve(csv.Obj, csv.Doc.File, coolSource(), "cooloperators", true, "cool-system", "")
	require.NoError(t, err)
	p, b := AdmissionPolicy(tg)
	objs := append([]runtime.Object{p, b}, UpgradeHook(tg, Hook{Image: "img"})...)
	data, err := YAML(objs...)
	require.NoError(t, err)
	found, err := Parse("g.yaml", data)
	require.NoError(t, err)
	require.Len(t, found, 2)
	assert.Equal(t, Found{What: FoundHook, File: "g.yaml", Group: "cool.operators.corp", Kind: "CoolOperator", Name: "cool-operator", Tools: []string{"Helm", "Argo CD"}}, found[0])
	assert.Equal(t, Found{What: FoundPolicy, File: "g.yaml", Group: "cool.operators.corp", Kind: "CoolOperator", Name: "cool-operator", Deployments: []string{"cool-operator"}}, found[1])
	assert.True(t, found[1].For(tg.Source, []string{"cool-operator"}))
	assert.False(t, found[1].For(tg.Source, []string{"warm-operator"}))

	lone, err := YAML(b)
	require.NoError(t, err)
	found, err = Parse("b.yaml", lone)
	require.NoError(t, err)
	assert.Empty(t, found)

	_, err = Parse("bad.yaml", []byte("kind: [\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bad.yaml")
}

// TestParseCountsOnlyWhatHolds: a binding that only warns or audits, and
// a hook that runs after the upgrade, hold nothing and are not counted.
func TestParseCountsOnlyWhatHolds(t *testing.T) {
	csv := loadCSV(t)
	tg, err := Resolve(csv.Obj, csv.Doc.File, coolSource(), "cooloperators", true, "cool-system", "")
	require.NoError(t, err)
	tests := []struct {
		name   string
		adjust func(b *admissionv1.ValidatingAdmissionPolicyBinding, j *batchv1.Job)
		ignore bool // the policy's failurePolicy is Ignore
		want   []string
		tools  []string // the hook's Tools, when it is counted
	}{
		{name: "as generate prints them", adjust: func(*admissionv1.ValidatingAdmissionPolicyBinding, *batchv1.Job) {}, want: []string{FoundHook, FoundPolicy}, tools: []string{"Helm", "Argo CD"}},
		{name: "the binding warns", adjust: func(b *admissionv1.ValidatingAdmissionPolicyBinding, _ *batchv1.Job) {
			b.Spec.ValidationActions = []admissionv1.ValidationAction{admissionv1.Warn}
		}, want: []string{FoundHook}},
		{name: "the binding warns and denies", adjust: func(b *admissionv1.ValidatingAdmissionPolicyBinding, _ *batchv1.Job) {
			b.Spec.ValidationActions = []admissionv1.ValidationAction{admissionv1.Warn, admissionv1.Deny}
		}, want: []string{FoundHook, FoundPolicy}},
		{name: "post-upgrade and PostSync hooks", adjust: func(_ *admissionv1.ValidatingAdmissionPolicyBinding, j *batchv1.Job) {
			j.Annotations[helmHook], j.Annotations[argoHook] = "post-upgrade", "PostSync"
		}, want: []string{FoundPolicy}},
		{name: "the policy ignores its failures", adjust: func(_ *admissionv1.ValidatingAdmissionPolicyBinding, _ *batchv1.Job) {},
			ignore: true, want: []string{FoundHook}},
		{name: "Helm's pre-upgrade, Argo CD's PostSync (Argo CD's own wins)", adjust: func(_ *admissionv1.ValidatingAdmissionPolicyBinding, j *batchv1.Job) {
			j.Annotations[helmHook], j.Annotations[argoHook] = "pre-upgrade", "PostSync"
		}, want: []string{FoundPolicy}},
		{name: "Helm's post-upgrade, Argo CD's PreSync (Helm runs it after)", adjust: func(_ *admissionv1.ValidatingAdmissionPolicyBinding, j *batchv1.Job) {
			j.Annotations[helmHook], j.Annotations[argoHook] = "post-upgrade", "PreSync"
		}, want: []string{FoundPolicy}},
		{name: "Argo CD's PreSync alone (Helm applies it with the upgrade)", adjust: func(_ *admissionv1.ValidatingAdmissionPolicyBinding, j *batchv1.Job) {
			delete(j.Annotations, helmHook)
		}, want: []string{FoundHook, FoundPolicy}, tools: []string{"Argo CD"}},
		{name: "Helm's pre-upgrade alone (Argo CD maps it to PreSync)", adjust: func(_ *admissionv1.ValidatingAdmissionPolicyBinding, j *batchv1.Job) {
			delete(j.Annotations, argoHook)
		}, want: []string{FoundHook, FoundPolicy}, tools: []string{"Helm", "Argo CD"}},
		{name: "Helm's Pre-Upgrade (Helm lowercases it, Argo CD does not map it)", adjust: func(_ *admissionv1.ValidatingAdmissionPolicyBinding, j *batchv1.Job) {
			j.Annotations[helmHook] = "Pre-Upgrade"
			delete(j.Annotations, argoHook)
		}, want: []string{FoundHook, FoundPolicy}, tools: []string{"Helm"}},
		{name: "Helm's empty value (Helm skips the Job), Argo CD's PreSync", adjust: func(_ *admissionv1.ValidatingAdmissionPolicyBinding, j *batchv1.Job) {
			j.Annotations[helmHook] = ""
		}, want: []string{FoundPolicy}},
		{name: "Helm's pre-upgrade with a value Helm does not know (Helm skips the Job)", adjust: func(_ *admissionv1.ValidatingAdmissionPolicyBinding, j *batchv1.Job) {
			j.Annotations[helmHook] = "pre-upgrade,pre-sync"
		}, want: []string{FoundPolicy}},
		{name: "Helm's pre-upgrade, Argo CD's PostDelete (Argo CD's own)", adjust: func(_ *admissionv1.ValidatingAdmissionPolicyBinding, j *batchv1.Job) {
			j.Annotations[argoHook] = "PostDelete"
		}, want: []string{FoundPolicy}},
		{name: "Helm's pre-upgrade, an Argo CD value it does not know (Helm's mapped)", adjust: func(_ *admissionv1.ValidatingAdmissionPolicyBinding, j *batchv1.Job) {
			j.Annotations[argoHook] = "Later"
		}, want: []string{FoundHook, FoundPolicy}, tools: []string{"Helm", "Argo CD"}},
		{name: "Helm's pre-install,pre-upgrade", adjust: func(_ *admissionv1.ValidatingAdmissionPolicyBinding, j *batchv1.Job) {
			j.Annotations[helmHook] = "pre-install, pre-upgrade"
			delete(j.Annotations, argoHook)
		}, want: []string{FoundHook, FoundPolicy}, tools: []string{"Helm", "Argo CD"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, b := AdmissionPolicy(tg)
			objs := append([]runtime.Object{p, b}, UpgradeHook(tg, Hook{Image: "img"})...)
			var job *batchv1.Job
			for _, o := range objs {
				if j, ok := o.(*batchv1.Job); ok {
					job = j
				}
			}
			require.NotNil(t, job)
			tt.adjust(b, job)
			if tt.ignore {
				p.Spec.FailurePolicy = ptr.To(admissionv1.Ignore)
			}
			data, err := YAML(objs...)
			require.NoError(t, err)
			found, err := Parse("g.yaml", data)
			require.NoError(t, err)
			var got, tools []string
			for _, f := range found {
				got = append(got, f.What)
				if f.What == FoundHook {
					tools = f.Tools
				}
			}
			assert.Equal(t, tt.want, got)
			if tt.tools != nil {
				assert.Equal(t, tt.tools, tools)
			}
		})
	}
}

// FuzzParse: no input panics Parse.
func FuzzParse(f *testing.F) {
	f.Add([]byte("apiVersion: batch/v1\nkind: Job\nmetadata:\n  annotations:\n    helm.sh/hook: pre-upgrade\nspec:\n  template:\n    spec:\n      containers:\n      - args: [gate, --source, a/v1/K/n]\n"))
	f.Add([]byte("apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nspec:\n  policyName: p\n  paramRef: {name: x}\n---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: p}\nspec:\n  paramKind: {apiVersion: v1, kind: K}\n  matchConstraints: {}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = Parse("f.yaml", data)
	})
}
