package apiserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/statuscheck/statuscheck/internal/testutil"
)

func TestMain(m *testing.M) {
	SilenceLogs()
	os.Exit(m.Run())
}

func goodResource(t testing.TB) *Resource {
	t.Helper()
	r, err := NewResource(testutil.ReadCRD(t, "testdata/bundles/good/manifests/cool.operators.corp_cooloperators.yaml"), "v1beta1")
	require.NoError(t, err)
	return r
}

var epoch = func() time.Time { return time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC) }

func cool(gen int64, spec, status map[string]interface{}) map[string]interface{} {
	o := map[string]interface{}{"apiVersion": "cool.operators.corp/v1beta1", "kind": "CoolOperator",
		"metadata": map[string]interface{}{"name": "cool", "namespace": "ns", "generation": gen}, "spec": spec}
	if status != nil {
		o["status"] = status
	}
	return o
}

func cond(status string, og int64) map[string]interface{} {
	return map[string]interface{}{"conditions": []interface{}{map[string]interface{}{
		"type": "Upgradeable", "status": status, "reason": "R", "message": "", "lastTransitionTime": "2024-01-01T00:00:00Z", "observedGeneration": og}}}
}

func generation(t *testing.T, obj map[string]interface{}) int64 {
	t.Helper()
	return (&unstructured.Unstructured{Object: obj}).GetGeneration()
}

// TestCreate pins what rest.BeforeCreate with the CRD's strategy does.
func TestCreate(t *testing.T) {
	r := goodResource(t)
	out, rf := r.Create(cool(7, map[string]interface{}{"storageLayer": "PostgreSQL", "pruned": true}, cond("True", 1)), epoch)
	require.Nil(t, rf)
	assert.Equal(t, int64(1), generation(t, out), "PrepareForCreate sets generation 1")
	assert.NotContains(t, out, "status", "with /status, a create cannot set status")
	assert.Equal(t, map[string]interface{}{"storageLayer": "PostgreSQL"}, out["spec"], "unknown fields are pruned")

	_, rf = r.Create(cool(1, map[string]interface{}{"storageLayer": "Oracle"}, nil), epoch)
	require.NotNil(t, rf)
	assert.Contains(t, rf.Error(), `spec.storageLayer: Unsupported value: "Oracle"`)
	require.Len(t, rf.Fields, 1)
	assert.Equal(t, "spec.storageLayer", rf.Fields[0].Field)
}

func TestUpdate(t *testing.T) {
	r := goodResource(t)
	old, rf := r.Create(cool(1, map[string]interface{}{"storageLayer": "PostgreSQL"}, nil), epoch)
	require.Nil(t, rf)
	with := func(key string, v interface{}) map[string]interface{} {
		n := map[string]interface{}{}
		for k, x := range old {
			n[k] = x
		}
		n[key] = v
		return n
	}
	tests := []struct {
		name    string
		next    map[string]interface{}
		wantGen int64
		refused string
	}{
		{name: "a spec change bumps generation", next: with("spec", map[string]interface{}{"storageLayer": "MariaDB"}), wantGen: 2},
		{name: "a pruned field does not", next: with("spec", map[string]interface{}{"storageLayer": "PostgreSQL", "extra": 1}), wantGen: 1},
		{name: "status through the main resource is dropped", next: with("status", cond("False", 1)), wantGen: 1},
		{name: "an invalid value is refused", next: with("spec", map[string]interface{}{"storageLayer": 3}), refused: "spec.storageLayer: Invalid value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, deleted, rf := r.Update(old, tt.next)
			if tt.refused != "" {
				require.NotNil(t, rf)
				assert.Contains(t, rf.Error(), tt.refused)
				return
			}
			require.Nil(t, rf)
			assert.False(t, deleted)
			assert.Equal(t, tt.wantGen, generation(t, out))
			assert.NotContains(t, out, "status")
		})
	}
}

func TestUpdateStatus(t *testing.T) {
	r := goodResource(t)
	old, _ := r.Create(cool(1, map[string]interface{}{"storageLayer": "PostgreSQL"}, nil), epoch)
	out, rf := r.UpdateStatus(old, cond("True", 1))
	require.Nil(t, rf)
	assert.Equal(t, int64(1), generation(t, out), "a /status write never bumps generation")
	assert.Equal(t, cond("True", 1), out["status"])

	_, rf = r.UpdateStatus(old, map[string]interface{}{"conditions": []interface{}{map[string]interface{}{"type": "Upgradeable", "status": "Maybe"}}})
	require.NotNil(t, rf)
	for _, want := range []string{`status.conditions[0].status: Unsupported value: "Maybe"`, "status.conditions[0].reason: Required value",
		"status.conditions[0].message: Required value", "status.conditions[0].lastTransitionTime: Required value"} {
		assert.Contains(t, rf.Error(), want)
	}

	off, err := NewResource(testutil.ReadCRD(t, "testdata/traces/crds/cooloperators-no-status-subresource.yaml"), "v1beta1")
	require.NoError(t, err)
	old, _ = off.Create(cool(1, map[string]interface{}{"storageLayer": "PostgreSQL"}, nil), epoch)
	out, rf = off.UpdateStatus(old, cond("True", 1))
	require.Nil(t, rf)
	assert.Equal(t, int64(2), generation(t, out), "without /status a status write is a main-resource write and bumps")
}

// TestDelete pins store.go's deletion of a custom resource.
func TestDelete(t *testing.T) {
	r := goodResource(t)
	plain, _ := r.Create(cool(1, map[string]interface{}{"storageLayer": "PostgreSQL"}, nil), epoch)
	fin := cool(1, map[string]interface{}{"storageLayer": "PostgreSQL"}, nil)
	fin["metadata"].(map[string]interface{})["finalizers"] = []interface{}{"cool.operators.corp/cleanup"}
	withFin, rf := r.Create(fin, epoch)
	require.Nil(t, rf)

	_, deleted, rf := r.Delete(plain, DeleteOptions{}, epoch)
	require.Nil(t, rf)
	assert.True(t, deleted, "no finalizer: deleted at once")

	kept, deleted, rf := r.Delete(plain, DeleteOptions{PropagationPolicy: "Orphan"}, epoch)
	require.Nil(t, rf)
	assert.False(t, deleted, "Orphan adds the orphan finalizer")
	assert.Equal(t, int64(2), generation(t, kept))
	assert.Equal(t, []string{"orphan"}, (&unstructured.Unstructured{Object: kept}).GetFinalizers())

	kept, _, _ = r.Delete(plain, DeleteOptions{PropagationPolicy: "Foreground"}, epoch)
	assert.Equal(t, []string{"foregroundDeletion"}, (&unstructured.Unstructured{Object: kept}).GetFinalizers())

	deleting, deleted, rf := r.Delete(withFin, DeleteOptions{}, epoch)
	require.Nil(t, rf)
	require.False(t, deleted)
	assert.Equal(t, int64(2), generation(t, deleting), "deletionTimestamp set: generation moves")
	again, deleted, rf := r.Delete(deleting, DeleteOptions{}, epoch)
	require.Nil(t, rf)
	require.False(t, deleted)
	assert.Equal(t, int64(2), generation(t, again), "a second delete does not move it again")

	_, deleted, rf = r.Delete(withFin, DeleteOptions{PropagationPolicy: "Background"}, epoch)
	require.Nil(t, rf)
	assert.False(t, deleted, "Background leaves the object's own finalizers")

	// Removing the last finalizer of an object being deleted deletes it.
	next := map[string]interface{}{}
	for k, v := range deleting {
		next[k] = v
	}
	md := map[string]interface{}{}
	for k, v := range deleting["metadata"].(map[string]interface{}) {
		md[k] = v
	}
	delete(md, "finalizers")
	next["metadata"] = md
	_, deleted, rf = r.Update(deleting, next)
	require.Nil(t, rf)
	assert.True(t, deleted)

	// No new finalizer while being deleted.
	md = map[string]interface{}{}
	for k, v := range deleting["metadata"].(map[string]interface{}) {
		md[k] = v
	}
	md["finalizers"] = []interface{}{"cool.operators.corp/cleanup", "cool.operators.corp/more"}
	next["metadata"] = md
	_, _, rf = r.Update(deleting, next)
	require.NotNil(t, rf)
	assert.Contains(t, rf.Error(), "no new finalizers can be added if the object is being deleted")
}

func TestDefaultsApplyBeforeTheGenerationCompare(t *testing.T) {
	r, err := NewResource(testutil.ReadCRD(t, "testdata/traces/crds/cooloperators-defaults.yaml"), "v1beta1")
	require.NoError(t, err)
	stored, err := r.Stored(cool(3, map[string]interface{}{"storageLayer": "PostgreSQL"}, nil))
	require.NoError(t, err)
	assert.Equal(t, map[string]interface{}{"storageLayer": "PostgreSQL", "replicas": int64(1)}, stored["spec"], "defaults apply on read")
	next := map[string]interface{}{}
	for k, v := range stored {
		next[k] = v
	}
	next["spec"] = map[string]interface{}{"storageLayer": "PostgreSQL"} // the default left out: defaulting puts it back
	out, _, rf := r.Update(stored, next)
	require.Nil(t, rf)
	assert.Equal(t, int64(3), generation(t, out))
}

// BenchmarkWrites is what one write costs through the apiserver's code.
func BenchmarkWrites(b *testing.B) {
	r := goodResource(b)
	old, _ := r.Create(cool(1, map[string]interface{}{"storageLayer": "PostgreSQL"}, nil), epoch)
	st := cond("True", 1)
	b.Run("status", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			r.UpdateStatus(old, st)
		}
	})
	next := map[string]interface{}{}
	for k, v := range old {
		next[k] = v
	}
	next["spec"] = map[string]interface{}{"storageLayer": "MariaDB"}
	b.Run("update", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			r.Update(old, next)
		}
	})
}

func TestValidateCRD(t *testing.T) {
	good := testutil.ReadCRD(t, "testdata/bundles/good/manifests/cool.operators.corp_cooloperators.yaml")
	rf, err := ValidateCRD(good)
	require.NoError(t, err)
	assert.Nil(t, rf, "the good CRD is taken")

	bad := good.DeepCopy()
	props := bad.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"]
	conds := props.Properties["conditions"]
	conds.Items.Schema.Required = []string{"status"} // the map key "type" no longer required
	props.Properties["conditions"] = conds
	bad.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"] = props
	rf, err = ValidateCRD(bad)
	require.NoError(t, err)
	require.NotNil(t, rf)
	t.Log(rf.Error())
	require.NotEmpty(t, rf.Fields)
}

// TestShiftsGenerations: an answer is reused across generations only
// where nothing in the schema can tell the generations apart.
func TestShiftsGenerations(t *testing.T) {
	const og = "                    observedGeneration:\n                      type: integer\n                      format: int64\n                      minimum: 0\n"
	tests := []struct {
		name     string
		old, new string
		want     bool
	}{
		{name: "the good CRD: minimum 0", want: true},
		{name: "minimum 1", old: og, new: strings.Replace(og, "minimum: 0", "minimum: 1", 1), want: true},
		{name: "minimum 2 tells 1 from 2", old: og, new: strings.Replace(og, "minimum: 0", "minimum: 2", 1), want: false},
		{name: "a maximum", old: og, new: og + "                      maximum: 100\n", want: false},
		{name: "an enum", old: og, new: og + "                      enum: [1, 2]\n", want: false},
		{name: "a CEL rule on the conditions", old: "                x-kubernetes-list-type: map\n",
			new: "                x-kubernetes-list-type: map\n                x-kubernetes-validations:\n                - rule: self.all(c, c.status in ['True', 'False', 'Unknown'])\n", want: false},
	}
	base, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "testdata/bundles/good/manifests/cool.operators.corp_cooloperators.yaml"))
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := string(base)
			if tt.old != "" {
				require.Contains(t, text, tt.old)
				text = strings.Replace(text, tt.old, tt.new, 1)
			}
			crd := &apiextv1.CustomResourceDefinition{}
			require.NoError(t, yaml.UnmarshalStrict([]byte(text), crd))
			r, err := NewResource(crd, "v1beta1")
			require.NoError(t, err)
			assert.Equal(t, tt.want, r.ShiftsGenerations())
		})
	}
}
