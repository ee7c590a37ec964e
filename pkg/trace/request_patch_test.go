package trace

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
)

// TestBridgeRequestPatch: the bridge's request step carries its merge
// patch, which a trace writes and reads back; OLM's request carries a
// token; a step cannot carry both, and only the bridge's is a patch.
func TestBridgeRequestPatch(t *testing.T) {
	patch := map[string]interface{}{"metadata": map[string]interface{}{"annotations": map[string]interface{}{"a": "1"}},
		"spec": map[string]interface{}{"upgradeRequest": nil}}
	st := Step{Actor: v1alpha1.ActorBridge, Verb: v1alpha1.VerbRequest, Value: map[string]interface{}{"patch": patch}}
	line := StepLine(st)
	assert.Equal(t, `- {actor: bridge, request: {patch: {"metadata":{"annotations":{"a":"1"}},"spec":{"upgradeRequest":null}}}}`+"\n", line)
	tests := []struct {
		name string
		step string
		want map[string]interface{} // the step's value; nil with msg
		msg  string
	}{
		{name: "written and read back", step: strings.TrimPrefix(strings.TrimSpace(line), "- "), want: map[string]interface{}{"patch": patch}},
		{name: "OLM's token", step: `{actor: olm, request: {token: "3"}}`, want: map[string]interface{}{"token": "3"}},
		{name: "both", step: `{actor: bridge, request: {token: "3", patch: {}}}`, msg: "a request takes a token (OLM's) or a patch (the bridge's), not both"},
		{name: "OLM's patch", step: `{actor: olm, request: {patch: {"spec": {"x": 1}}}}`, msg: "only the bridge's request is a patch; OLM's writes a token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := "apiVersion: statuscheck.operatorframework.io/v1alpha1\nkind: StatusTrace\ninitial: null\nsteps:\n- " + tt.step + "\n"
			tr, err := OpenReader("t.yaml", strings.NewReader(body), OpenOptions{Format: FormatTrace})
			require.NoError(t, err)
			got, err := tr.Next()
			if tt.msg != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "t.yaml:5: "+tt.msg)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, v1alpha1.VerbRequest, got.Verb)
			assert.Equal(t, tt.want, got.Value)
		})
	}
}
