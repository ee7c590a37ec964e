package trace

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/testutil"
)

// TestRecordedManagerRequestIsOneStep: a lifecycle manager that implements
// RequestAck (OLM with olm/patches) writes its token and its record of the
// request (v1alpha1.RequestRecordAnnotation) in one write. A recording of
// it is one OLM request, not a request and a user's metadata change; its
// withdrawal, which leaves the record, is the token's removal alone.
func TestRecordedManagerRequestIsOneStep(t *testing.T) {
	src := *testutil.CoolSource
	src.Handshake = &v1alpha1.Handshake{Mode: v1alpha1.HandshakeRequestAck, Request: &v1alpha1.HandshakeRequest{SpecPath: ".spec.upgradeRequest"}}
	first := testutil.CoolObject(1, "PostgreSQL", "True", 1)
	requested := testutil.CoolObject(2, "PostgreSQL", "True", 1)
	requested["spec"].(map[string]interface{})["upgradeRequest"] = "1"
	requested["metadata"].(map[string]interface{})["annotations"] = map[string]interface{}{
		v1alpha1.RequestRecordAnnotation: `{"token":1,"csv":"cool.v2","generation":1,"uid":"u"}`,
	}
	withdrawn := testutil.CoolObject(3, "PostgreSQL", "True", 1)
	withdrawn["metadata"].(map[string]interface{})["annotations"] = map[string]interface{}{
		v1alpha1.RequestRecordAnnotation: `{"token":1}`,
	}
	var in bytes.Buffer
	for _, o := range []map[string]interface{}{first, requested, withdrawn} {
		data, err := json.Marshal(o)
		require.NoError(t, err)
		in.Write(append(data, '\n'))
	}
	tr, err := OpenReader("t.json", &in, OpenOptions{Source: &src})
	require.NoError(t, err)
	var got []string
	var values []string
	for {
		st, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		got = append(got, string(st.Actor)+" "+string(st.Verb))
		raw, err := json.Marshal(st.Value)
		require.NoError(t, err)
		values = append(values, string(raw))
	}
	assert.Equal(t, []string{"olm request", "user update"}, got, "the request is one step; the withdrawal removes the token only")
	require.Len(t, values, 2)
	assert.JSONEq(t, `{"spec":{"upgradeRequest":null}}`, values[1], "the withdrawal's step is the token's removal, with no record in it")
}
