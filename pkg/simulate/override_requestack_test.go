package simulate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/pkg/trace"
)

// TestOverrideReleaseOwesNoAnswer: under RequestAck an admin's override
// True releases the upgrade as OLM's gate lets it, with no request
// answered: that is no unacknowledged-upgrade. Without the override the
// same upgrade is one.
func TestOverrideReleaseOwesNoAnswer(t *testing.T) {
	const head = traceHead + `statusSource: {apiVersion: cool.operators.corp/v1beta1, kind: CoolOperator, name: cool-operator, whenAbsent: Block, handshake: {mode: RequestAck, request: {specPath: .spec.upgradeRequest}}}
statusSubresource: true
initial:
  apiVersion: cool.operators.corp/v1beta1
  kind: CoolOperator
  metadata: {name: cool-operator, generation: 3}
  spec: {storageLayer: PostgreSQL}
  status: {conditions: [{type: Upgradeable, status: "False", reason: Migrating, message: "", lastTransitionTime: "2024-01-01T00:00:00Z", observedGeneration: 3}]}
steps:
`
	const override = "- {actor: admin, target: OperatorCondition, update: {spec: {overrides: [{type: Upgradeable, status: \"True\", reason: Forced, message: \"\", lastTransitionTime: \"2024-01-01T00:00:00Z\"}]}}}\n"
	for _, tc := range []struct {
		name  string
		steps string
		want  []string
	}{
		{name: "the override releases", steps: override + "- {actor: olm, check: {}}\n- {actor: olm, upgrade: {}}\n"},
		{name: "the override releases with the CR gone (whenAbsent: Block)", steps: override + "- {actor: user, delete: {}}\n- {actor: olm, check: {}}\n- {actor: olm, upgrade: {}}\n"},
		{name: "without it the upgrade owes an answer", steps: "- {actor: olm, upgrade: {}}\n",
			want: []string{"upgrade-while-blocked[olm]@1", "unacknowledged-upgrade@1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum, _, err := replayString(t, "t.yaml", head+tc.steps, trace.OpenOptions{Limits: trace.DefaultLimits}, "olm")
			require.NoError(t, err)
			assert.Equal(t, tc.want, violationTags(sum))
		})
	}
}
