package jsonobj

import (
	"encoding/json"
	"reflect"
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

// FuzzEqual: Equal agrees with reflect.DeepEqual (nil equals nil) on
// every pair of decoded JSON values.
func FuzzEqual(f *testing.F) {
	f.Add(`{"a":[1,"x",null,{"b":true}]}`, `{"a":[1,"x",null,{"b":true}]}`)
	f.Add(`{"a":{}}`, `{"a":[]}`)
	f.Add(`[1.5, 2]`, `[1.5, 2.0]`)
	f.Fuzz(func(t *testing.T, x, y string) {
		var a, b interface{}
		if json.Unmarshal([]byte(x), &a) != nil || json.Unmarshal([]byte(y), &b) != nil {
			return
		}
		want := (a == nil && b == nil) || reflect.DeepEqual(a, b)
		if got := Equal(a, b); got != want {
			t.Fatalf("Equal(%s, %s) = %v, reflect.DeepEqual says %v", x, y, got, want)
		}
	})
}

func TestEqualTellsNilFromEmpty(t *testing.T) {
	tests := []struct {
		name string
		a, b interface{}
		want bool
	}{
		{name: "nil and nil", want: true},
		{name: "a nil map and an empty one", a: map[string]interface{}(nil), b: map[string]interface{}{}, want: false},
		{name: "a nil slice and an empty one", a: []interface{}(nil), b: []interface{}{}, want: false},
		{name: "int64 and float64", a: int64(1), b: float64(1), want: false},
		{name: "equal nested", a: map[string]interface{}{"a": []interface{}{int64(1), "x"}}, b: map[string]interface{}{"a": []interface{}{int64(1), "x"}}, want: true},
		{name: "a missing key", a: map[string]interface{}{"a": nil}, b: map[string]interface{}{"b": nil}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Equal(tt.a, tt.b); got != tt.want {
				t.Errorf("Equal = %v, want %v (reflect.DeepEqual: %v)", got, tt.want, reflect.DeepEqual(tt.a, tt.b))
			}
		})
	}
}
