package typed

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/pkg/manifest"
)

type typedObj struct {
	Spec struct {
		Replicas int32    `json:"replicas"`
		Names    []string `json:"names"`
		Items    []struct {
			Served bool `json:"served"`
		} `json:"items"`
	} `json:"spec"`
}

func TestDecodePointsAtTheBadField(t *testing.T) {
	in := "spec:\n  replicas: 2\n  names: [a, b]\n  items:\n  - served: true\n  - served: maybe\n"
	docs, err := manifest.Parse("d.yaml", []byte(in), manifest.DefaultLimits)
	require.NoError(t, err)
	var out typedObj
	err = Decode(docs[0], &out)
	var me *manifest.Error
	require.True(t, errors.As(err, &me), "%v", err)
	assert.Equal(t, 6, me.Pos.Line)
	assert.Equal(t, 13, me.Pos.Column)
	assert.Contains(t, me.Msg, "spec.items.served")

	docs, err = manifest.Parse("d.yaml", []byte("spec:\n  replicas: 3\n  names: [x]\n"), manifest.DefaultLimits)
	require.NoError(t, err)
	require.NoError(t, Decode(docs[0], &out))
	assert.Equal(t, int32(3), out.Spec.Replicas)
	assert.Equal(t, []string{"x"}, out.Spec.Names)
}

// versioned has a field whose type decodes itself and refuses null, as
// operator-framework/api's OperatorVersion does.
type versioned struct {
	Spec struct {
		Version  strictVersion    `json:"version"`
		Replicas int32            `json:"replicas"`
		Limits   map[string]int32 `json:"limits"`
	} `json:"spec"`
}

type strictVersion struct{ V string }

func (v *strictVersion) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil || s == "" {
		return fmt.Errorf("version is empty")
	}
	v.V = s
	return nil
}

// TestDecodeValues: what Decode takes and refuses, and where it
// says so. A null the type's own decoder refuses is the zero value, as
// apimachinery's unstructured converter leaves it; a number the field
// cannot hold is refused at its line, saying why (the converter wrapped
// it: 4294967297 was an int32 1).
func TestDecodeValues(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    versioned
		line    int    // of the error; 0: no error
		message string // the error's message contains it
	}{
		{name: "a version", in: "spec:\n  version: 1.2.3\n", want: func() (v versioned) { v.Spec.Version.V = "1.2.3"; return }()},
		{name: "a null version is the zero value", in: "spec:\n  version:\n  replicas: 2\n", want: func() (v versioned) { v.Spec.Replicas = 2; return }()},
		{name: "a version its type refuses", in: "spec:\n  version: \"\"\n", line: 1, message: "version is empty"},
		{name: "1.0 is an integer", in: "spec:\n  replicas: 1.0\n", want: func() (v versioned) { v.Spec.Replicas = 1; return }()},
		{name: "too large for an int32", in: "spec:\n  version: 1.0.0\n  replicas: 4294967297\n", line: 3,
			message: "field spec.replicas: 4294967297 does not fit an int32"},
		{name: "too large, in exponent form", in: "spec:\n  replicas: 1e21\n", line: 2, message: "field spec.replicas: 1e+21 does not fit an int32"},
		{name: "a fraction", in: "spec:\n  replicas: 1.5\n", line: 2, message: "field spec.replicas: 1.5 is not a whole number; it must be an int32"},
		{name: "a map's value too large", in: "spec:\n  limits:\n    cpu: 1\n    memory: 9999999999\n", line: 4,
			message: "field spec.limits: the value of memory, 9999999999 does not fit an int32"},
		{name: "a string for a number", in: "spec:\n  replicas: two\n", line: 2, message: "field spec.replicas: a string where a number belongs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := manifest.Parse("d.yaml", []byte(tt.in), manifest.DefaultLimits)
			require.NoError(t, err)
			var out versioned
			err = Decode(docs[0], &out)
			if tt.line == 0 {
				require.NoError(t, err)
				assert.Equal(t, tt.want, out)
				return
			}
			var me *manifest.Error
			require.True(t, errors.As(err, &me), "%v", err)
			assert.Equal(t, "d.yaml", me.Pos.File)
			assert.Equal(t, tt.line, me.Pos.Line)
			assert.Contains(t, me.Msg, tt.message)
		})
	}
}
