package jsonobj

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMergePatch(t *testing.T) {
	target := map[string]interface{}{"a": "b", "c": map[string]interface{}{"d": "e", "f": "g"}, "list": []interface{}{1, 2}}
	patch := map[string]interface{}{"a": "z", "c": map[string]interface{}{"f": nil, "h": "i"}, "list": []interface{}{3}, "new": true}
	got := MergePatch(target, patch)
	assert.Equal(t, map[string]interface{}{"a": "z", "c": map[string]interface{}{"d": "e", "h": "i"}, "list": []interface{}{3}, "new": true}, got)
	assert.Equal(t, "b", target["a"], "the target is not modified")
	assert.Equal(t, map[string]interface{}{"d": "e", "f": "g"}, target["c"])
	assert.Equal(t, patch, CreateMergePatch(target, got), "diffPatch is mergePatch's inverse")
}

func TestCopy(t *testing.T) {
	in := map[string]interface{}{"a": 1, "b": []interface{}{int32(2), float32(0.5), nil, "s", true}, "c": map[string]interface{}{"d": int64(3)}}
	out, err := Copy(in)
	require.NoError(t, err)
	assert.Equal(t, map[string]interface{}{"a": int64(1), "b": []interface{}{int64(2), float64(0.5), nil, "s", true}, "c": map[string]interface{}{"d": int64(3)}}, out)
	out["c"].(map[string]interface{})["d"] = int64(9)
	assert.Equal(t, int64(3), in["c"].(map[string]interface{})["d"], "a deep copy")
	_, err = Copy(map[string]interface{}{"x": struct{}{}})
	assert.Error(t, err)
}

func TestSplit(t *testing.T) {
	p := Split(map[string]interface{}{"apiVersion": "a.io/v1", "kind": "A", "metadata": map[string]interface{}{"name": "n", "generation": int64(2)},
		"spec": map[string]interface{}{"x": int64(1)}, "data": "d", "status": map[string]interface{}{"y": true}})
	assert.Equal(t, "a.io/v1", p.APIVersion)
	assert.Equal(t, "A", p.Kind)
	assert.Equal(t, map[string]interface{}{"name": "n", "generation": int64(2)}, p.Meta)
	assert.Equal(t, map[string]interface{}{"spec": map[string]interface{}{"x": int64(1)}, "data": "d"}, p.Body)
	assert.Equal(t, map[string]interface{}{"y": true}, p.Status)
	assert.Nil(t, Split(map[string]interface{}{"kind": "A"}).Body, "no body without fields")
}

func TestNestedPatchAndInt(t *testing.T) {
	assert.Equal(t, map[string]interface{}{"spec": map[string]interface{}{"a": "v"}}, NestedPatch([]string{"spec", "a"}, "v"))
	for in, want := range map[interface{}]int64{int64(3): 3, 4: 4, float64(5): 5, "6": 6} {
		got, ok := Int(in)
		assert.True(t, ok, "%v", in)
		assert.Equal(t, want, got)
	}
	for _, in := range []interface{}{1.5, "x", nil, true} {
		_, ok := Int(in)
		assert.False(t, ok, "%v", in)
	}
	assert.Equal(t, `{"a":"<b>"}`, Compact(map[string]interface{}{"a": "<b>"}))
	assert.True(t, Equal(nil, nil))
	assert.False(t, Equal(map[string]interface{}{}, nil))
}
