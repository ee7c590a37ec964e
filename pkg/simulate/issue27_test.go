package simulate

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/result"
	"github.com/statuscheck/statuscheck/pkg/trace"
)

// Issue 27's items in the core, each a test named after it.

// recordedHead is a recording's header, as statuscheck record writes it,
// with the running CSV's OperatorCondition as oc.
func recordedHead(oc string) string {
	return traceHead + `statusSource: {"apiVersion":"cool.operators.corp/v1beta1","kind":"CoolOperator","name":"cool-operator","namespace":"cool"}
statusSubresource: true
recorded: true
initial: {"apiVersion":"cool.operators.corp/v1beta1","kind":"CoolOperator","metadata":{"generation":1,"name":"cool-operator","namespace":"cool","resourceVersion":"180"},"spec":{"storageLayer":"PostgreSQL"},"status":{"conditions":[{"lastTransitionTime":"2026-11-30T11:59:00Z","message":"","observedGeneration":1,"reason":"Idle","status":"True","type":"Upgradeable"}]}}
operatorCondition: ` + oc + `
steps:
- {actor: user, update: {"spec":{"storageLayer":"MariaDB"}}, generation: 2, resourceVersion: "201"}
- {actor: olm, check: {expect: Allow}, resourceVersion: "209", who: "olm (cool-operator.v0.2.0 InstallReady/AllRequirementsMet)"}
- {actor: olm, upgrade: {}, resourceVersion: "212"}
`
}

// TestItem8StatusSourceNotRead: OLM's recorded Allow where the gate on
// the CR blocks is status-source-not-read when the OperatorCondition OLM
// read holds no Upgradeable entry (or there is none), a check-expectation
// when something wrote one, and only a check-expectation in a trace that
// is not a recording (its expect is the author's).
func TestItem8StatusSourceNotRead(t *testing.T) {
	const (
		empty     = `{"apiVersion":"operators.coreos.com/v2","kind":"OperatorCondition","metadata":{"generation":1,"name":"cool-operator.v0.1.0","namespace":"cool"},"spec":{"deployments":["cool-operator"]}}`
		written   = `{"apiVersion":"operators.coreos.com/v2","kind":"OperatorCondition","metadata":{"generation":1,"name":"cool-operator.v0.1.0","namespace":"cool"},"spec":{"conditions":[{"type":"Upgradeable","status":"True","reason":"Idle","message":"","lastTransitionTime":"2026-11-30T11:59:00Z"}]}}`
		copied    = `{"apiVersion":"operators.coreos.com/v2","kind":"OperatorCondition","metadata":{"generation":1,"name":"cool-operator.v0.1.0","namespace":"cool"},"spec":{},"status":{"conditions":[{"type":"Upgradeable","status":"True","reason":"Idle","message":"","lastTransitionTime":"2026-11-30T11:59:00Z","observedGeneration":1}]}}`
		overriden = `{"apiVersion":"operators.coreos.com/v2","kind":"OperatorCondition","metadata":{"generation":1,"name":"cool-operator.v0.1.0","namespace":"cool"},"spec":{"overrides":[{"type":"Upgradeable","status":"False","reason":"Admin","message":"","lastTransitionTime":"2026-11-30T11:59:00Z"}]}}`
	)
	for _, tc := range []struct {
		name, data string
		want       string
	}{
		{"an empty OperatorCondition", recordedHead(empty), RuleStatusSourceNotRead},
		{"an entry the operator wrote", recordedHead(written), RuleCheckExpectation},
		{"an entry OLM copied", recordedHead(copied), RuleCheckExpectation},
		{"an admin's override", recordedHead(overriden), RuleCheckExpectation},
		{"not a recording: the author's expect", strings.Replace(recordedHead(empty), "recorded: true\n", "", 1), RuleCheckExpectation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum, _, err := replayString(t, "t.yaml", tc.data, trace.OpenOptions{Limits: trace.DefaultLimits}, contract.PolicyOLM)
			require.NoError(t, err)
			var at []string
			for _, v := range sum.Violations {
				if v.Rule == RuleStatusSourceNotRead || v.Rule == RuleCheckExpectation {
					at = append(at, v.Rule)
					assert.Equal(t, 2, v.Step)
					assert.Equal(t, kindOf(v.Rule).Remediation, v.Remediation)
				}
			}
			assert.Equal(t, []string{tc.want}, at, "%v", violationTags(sum))
		})
	}
}

// TestItem6HistoricalGateIsNotInTheExitCode: under every policy the
// historical gate's (naive's) violations are counted and marked but do not
// set the exit code; as the run's own policy they do.
func TestItem6HistoricalGateIsNotInTheExitCode(t *testing.T) {
	// The seed's outdated True at a check: naive approves, olm and strict block.
	data := traceHead + `initial:
  apiVersion: cool.operators.corp/v1beta1
  kind: CoolOperator
  metadata: {name: cool-operator, generation: 1}
  spec: {storageLayer: PostgreSQL}
  status: {conditions: [{type: Upgradeable, status: "True", reason: Idle, message: "", lastTransitionTime: "2024-01-01T00:00:00Z", observedGeneration: 1}]}
steps:
- {actor: user, update: {spec: {storageLayer: MariaDB}}}
- {actor: olm, check: {}}
- {actor: operator, updateStatus: {conditions: [{type: Upgradeable, status: "True", reason: Idle, message: "", lastTransitionTime: "2024-01-01T00:00:00Z", observedGeneration: 2}]}}
`
	sum, _, err := replayString(t, "t.yaml", data, trace.OpenOptions{Limits: trace.DefaultLimits})
	require.NoError(t, err)
	assert.Equal(t, []string{"unsafe-approval[naive]@2"}, violationTags(sum))
	assert.True(t, sum.Violations[0].Historical)
	assert.Equal(t, map[string]int{RuleUnsafeApproval: 1}, sum.Counts)
	assert.Equal(t, map[string]int{RuleUnsafeApproval: 1}, sum.Historical)
	assert.Equal(t, result.ExitOK, sum.ExitCode(result.Error))

	sum, _, err = replayString(t, "t.yaml", data, trace.OpenOptions{Limits: trace.DefaultLimits}, contract.PolicyNaive)
	require.NoError(t, err)
	assert.False(t, sum.Violations[0].Historical)
	assert.Empty(t, sum.Historical)
	assert.Equal(t, result.ExitFindings, sum.ExitCode(result.Error))

	assert.True(t, Historical(contract.PolicyNaive, contract.PolicyOLM))
	assert.False(t, Historical(contract.PolicyNaive, contract.PolicyNaive))
	assert.False(t, Historical(contract.PolicyStrict, contract.PolicyOLM))
}

// TestItemWhySaysWhatTheGateRead: each verdict's reason, as the timeline
// shows it.
func TestItemWhySaysWhatTheGateRead(t *testing.T) {
	const initial = `initial:
  apiVersion: cool.operators.corp/v1beta1
  kind: CoolOperator
  metadata: {name: cool-operator, generation: 2}
  spec: {storageLayer: PostgreSQL}
  status: {conditions: [{type: Upgradeable, status: "True", reason: Idle, message: "", lastTransitionTime: "2024-01-01T00:00:00Z", observedGeneration: 1}]}
steps:
- {actor: olm, check: {}}
- {actor: operator, updateStatus: {conditions: [{type: Upgradeable, status: "False", reason: Migrating, message: "", lastTransitionTime: "2024-01-01T00:00:00Z", observedGeneration: 2}]}}
- {actor: olm, check: {}}
- {actor: admin, target: OperatorCondition, update: {spec: {overrides: [{type: Upgradeable, status: "True", reason: Forced, message: "", lastTransitionTime: "2024-01-01T00:00:00Z"}]}}}
- {actor: olm, check: {}}
- {actor: user, delete: {}}
- {actor: olm, check: {}}
- {actor: admin, target: OperatorCondition, update: {spec: {overrides: []}}}
- {actor: olm, check: {}}
`
	tr, err := trace.OpenReader("t.yaml", strings.NewReader(traceHead+initial), trace.OpenOptions{Limits: trace.DefaultLimits})
	require.NoError(t, err)
	cfg, _, err := NewConfig(nil, tr, contract.Policies(), contract.PolicyOLM)
	require.NoError(t, err)
	var why [][]string
	_, err = Replay(tr, cfg, func(r Row) error {
		if r.Step.Verb == "check" {
			why = append(why, r.Why)
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, [][]string{
		{"Upgradeable=True is outdated (observedGeneration 1, generation 2)", "Upgradeable=True is outdated (observedGeneration 1, generation 2)", "Upgradeable=True (observedGeneration 1, generation 2: not read)"},
		{"Upgradeable=False (reason Migrating)", "Upgradeable=False (reason Migrating)", "Upgradeable=False (reason Migrating)"},
		{"admin override: the OperatorCondition's spec.overrides Upgradeable=True", "admin override: the OperatorCondition's spec.overrides Upgradeable=True", "admin override: the OperatorCondition's spec.overrides Upgradeable=True"},
		// The override wins over a missing status source, as it wins
		// everything in OLM's isOperatorUpgradeable.
		{"admin override: the OperatorCondition's spec.overrides Upgradeable=True", "admin override: the OperatorCondition's spec.overrides Upgradeable=True", "admin override: the OperatorCondition's spec.overrides Upgradeable=True"},
		{"status source does not exist (whenAbsent: Allow)", "status source does not exist (whenAbsent: Allow)", "status source does not exist (whenAbsent: Allow)"},
	}, why)
}
