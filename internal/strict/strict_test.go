package strict

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sigsjson "sigs.k8s.io/json"
)

type inner struct {
	Mode string `json:"mode"`
}

type outer struct {
	Name   string                 `json:"name"`
	Count  *int64                 `json:"count,omitempty"`
	Flag   *bool                  `json:"flag,omitempty"`
	Object map[string]interface{} `json:"object,omitempty"`
	Inner  *inner                 `json:"inner,omitempty"`
	Plain  inner                  `json:"plain"`
}

func TestUnmarshal(t *testing.T) {
	tests := []struct {
		name, data string
		kind       Kind
		path, sugg string
		got        string
	}{
		{name: "clean", data: `{"name":"a","inner":{"mode":"x"}}`},
		{name: "an unknown field", data: `{"nmae":"a"}`, kind: Unknown, path: "nmae", sugg: "name"},
		{name: "an unknown nested field", data: `{"inner":{"mdoe":"x"}}`, kind: Unknown, path: "inner.mdoe", sugg: "mode"},
		{name: "the wrong case", data: `{"Name":"a"}`, kind: Unknown, path: "Name", sugg: "name"},
		{name: "a field given twice", data: `{"name":"a","name":"b"}`, kind: Duplicate, path: "name"},
		{name: "the wrong type", data: `{"count":"three"}`, kind: Type, path: "count", got: "string"},
		{name: "not JSON", data: `{"name":`, kind: Syntax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o outer
			errs := Unmarshal([]byte(tt.data), &o)
			if tt.kind == "" {
				assert.Empty(t, errs)
				return
			}
			require.NotEmpty(t, errs)
			e := errs[0]
			assert.Equal(t, tt.kind, e.Kind)
			assert.Equal(t, tt.path, e.Path)
			assert.Equal(t, tt.sugg, e.Suggestion)
			assert.Equal(t, tt.got, e.Got)
			if tt.kind == Unknown {
				assert.NotEmpty(t, e.Known)
			}
		})
	}
}

func TestFieldsAtAndClosest(t *testing.T) {
	assert.Equal(t, []string{"name", "count", "flag", "object", "inner", "plain"}, FieldsAt(typeOf(outer{}), ""))
	assert.Equal(t, []string{"mode"}, FieldsAt(typeOf(outer{}), "inner"))
	assert.Nil(t, FieldsAt(typeOf(outer{}), "object"), "a map has no fields")
	assert.Equal(t, "request", Closest("requests", []string{"mode", "request", "ack"}))
	assert.Equal(t, "", Closest("zzzzzz", []string{"mode", "request"}))
	assert.Equal(t, 3, Levenshtein("kitten", "sitting"))
}

// TestAssignAgreesWithUnmarshal holds the fast path to the strict decoder:
// what Assign takes decodes the same through JSON, and what it refuses is
// what the decoder refuses or a shape it leaves to the decoder.
func TestAssignAgreesWithUnmarshal(t *testing.T) {
	for _, data := range []string{
		`{"name":"a"}`, `{"name":"a","count":3,"flag":true}`, `{"object":{"x":[1,2]},"inner":{"mode":"m"}}`,
		`{"plain":{"mode":"p"}}`, `{"inner":null,"object":null}`, `{"nmae":"a"}`, `{"inner":{"mdoe":"m"}}`,
		`{"count":"3"}`, `{"count":1.5}`, `{"name":7}`,
	} {
		t.Run(data, func(t *testing.T) {
			var m map[string]interface{}
			require.NoError(t, sigsjson.UnmarshalCaseSensitivePreserveInts([]byte(data), &m))
			var fast, slow outer
			ok := Assign(m, &fast)
			errs := Unmarshal([]byte(data), &slow)
			if ok {
				assert.Empty(t, errs, "Assign took what the decoder refuses")
				assert.Equal(t, slow, fast)
			}
			if len(errs) == 0 && !ok {
				t.Logf("left to the decoder: %s", data)
			}
		})
	}
}

func typeOf(v interface{}) reflect.Type { return reflect.TypeOf(v) }
