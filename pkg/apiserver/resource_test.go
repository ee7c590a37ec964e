package apiserver

import (
	"os"
	"path/filepath"
	"slices"
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
		{name: "format int32 tells 1 from 2^31", old: og, new: strings.Replace(og, "int64", "int32", 1), want: false},
		{name: "a CEL rule on the conditions", old: "                x-kubernetes-list-type: map\n",
			new: "                x-kubernetes-list-type: map\n                x-kubernetes-validations:\n                - rule: self.all(c, c.status in ['True', 'False', 'Unknown'])\n", want: false},
		{name: "a CEL rule on spec reads no generation", old: "          spec:\n            type: object\n",
			new: "          spec:\n            type: object\n            x-kubernetes-validations:\n            - rule: self.storageLayer != ''\n", want: true},
		{name: "a CEL rule on the root reads them all", old: "        type: object\n        properties:\n          apiVersion:",
			new: "        type: object\n        x-kubernetes-validations:\n        - rule: self.spec.storageLayer != ''\n        properties:\n          apiVersion:", want: false},
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

// crdWith is a CRD of one version, v1, whose openAPIV3Schema is schema
// (YAML), with the status subresource and scale when asked.
func crdWith(t *testing.T, schema string, scale bool) *apiextv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextv1.CustomResourceDefinition{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.example.com}
spec:
  group: example.com
  names: {kind: Thing, plural: things}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
`), crd))
	s := &apiextv1.JSONSchemaProps{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(schema), s))
	crd.Spec.Versions[0].Schema = &apiextv1.CustomResourceValidation{OpenAPIV3Schema: s}
	if scale {
		crd.Spec.Versions[0].Subresources.Scale = &apiextv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"}
	}
	return crd
}

// leaves lists a Values tree's string places, "(checked)" where the leaf
// has a validator of its own.
func leaves(v *Values, path string, out *[]string) {
	if v == nil {
		return
	}
	if v.Leaf() {
		if v.Checked() {
			path += " (checked)"
		}
		*out = append(*out, path)
		return
	}
	for k, c := range v.props {
		leaves(c, path+"."+k, out)
	}
	leaves(v.additional, path+".*", out)
	leaves(v.items, path+"[]", out)
}

// TestValues: which strings' places are told apart only by their own
// checks and equality, from the schema.
func TestValues(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		scale  bool
		want   []string
	}{
		{name: "plain and checked strings, a list, a map", schema: `type: object
properties:
  metadata: {type: object}
  spec:
    type: object
    properties:
      plain: {type: string}
      size: {type: integer}
      mode: {type: string, enum: [a, b]}
      labels: {type: object, additionalProperties: {type: string}}
      names: {type: array, items: {type: string, maxLength: 3}}
  status:
    type: object
    properties:
      at: {type: string, format: date-time}
      made: {type: string, format: not-a-format}
`, want: []string{".spec.labels.*", ".spec.mode (checked)", ".spec.names[] (checked)", ".spec.plain", ".status.at (checked)", ".status.made"}},
		{name: "a default, int-or-string, an embedded object, oneOf and a tuple are left out", schema: `type: object
properties:
  spec:
    type: object
    properties:
      kept: {type: string}
      defaulted: {type: string, default: x}
      under: {type: object, default: {a: b}, properties: {a: {type: string}}}
      emptyDefault: {type: object, default: {}, properties: {a: {type: string}}}
      port: {x-kubernetes-int-or-string: true}
      template: {type: object, x-kubernetes-embedded-resource: true, properties: {a: {type: string}}}
      either: {type: string, oneOf: [{pattern: a}, {pattern: b}]}
`, want: []string{".spec.emptyDefault.a", ".spec.kept"}},
		{name: "a CEL rule leaves out its own subtree", schema: `type: object
properties:
  spec:
    type: object
    properties:
      a: {type: string}
      b: {type: string, x-kubernetes-validations: [{rule: "self != 'x'"}]}
      c:
        type: object
        x-kubernetes-validations: [{rule: "self.d != 'x'"}]
        properties: {d: {type: string}}
  status: {type: object, properties: {at: {type: string, format: date-time}}}
`, want: []string{".spec.a", ".status.at (checked)"}},
		{name: "a CEL rule on the root leaves out the version", schema: `type: object
x-kubernetes-validations: [{rule: "self.spec.a != 'x'"}]
properties:
  spec: {type: object, properties: {a: {type: string}}}
`},
		{name: "a scale subresource leaves out the version", scale: true, schema: `type: object
properties:
  spec: {type: object, properties: {replicas: {type: integer}, a: {type: string}}}
  status: {type: object, properties: {replicas: {type: integer}}}
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewResource(crdWith(t, tt.schema, tt.scale), "v1")
			require.NoError(t, err)
			var got []string
			leaves(r.Values(), "", &got)
			slices.Sort(got)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestValuesValidIsTheApiserversVerdict: a leaf's own check says what the
// whole write's validation says about that value, on the good CRD.
func TestValuesValidIsTheApiserversVerdict(t *testing.T) {
	r := goodResource(t)
	cond := r.Values().Child("status").Child("conditions").Item()
	tests := []struct {
		name, field, value string
		valid              bool
	}{
		{name: "a timestamp", field: "lastTransitionTime", value: "2026-12-01T20:00:00Z", valid: true},
		{name: "a timestamp with a fraction and an offset", field: "lastTransitionTime", value: "2026-12-01T20:00:00.5+01:00", valid: true},
		{name: "a date only", field: "lastTransitionTime", value: "2026-12-01", valid: false},
		{name: "not a time", field: "lastTransitionTime", value: "yesterday", valid: false},
		{name: "an empty time", field: "lastTransitionTime", value: "", valid: false},
		{name: "a status in the enum", field: "status", value: "Unknown", valid: true},
		{name: "a status outside it", field: "status", value: "Maybe", valid: false},
		{name: "a reason at its maximum length", field: "reason", value: strings.Repeat("r", 1024), valid: true},
		{name: "a reason past it", field: "reason", value: strings.Repeat("r", 1025), valid: false},
	}
	old := cool(1, map[string]interface{}{"storageLayer": "PostgreSQL"}, cond1())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := cond1()
			status["conditions"].([]interface{})[0].(map[string]interface{})[tt.field] = tt.value
			_, rf := r.UpdateStatus(old, status)
			leaf := cond.Child(tt.field)
			require.True(t, leaf.Leaf())
			assert.Equal(t, tt.valid, rf == nil, "the apiserver: %v", rf)
			assert.Equal(t, tt.valid, leaf.Valid(tt.value))
		})
	}
}

func cond1() map[string]interface{} { return cond("True", 1) }
