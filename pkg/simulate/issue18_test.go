package simulate

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/pkg/trace"
)

// Issue 18's wrong answers, each a test named after it.

const traceHead = `apiVersion: statuscheck.operatorframework.io/v1alpha1
kind: StatusTrace
metadata: {name: t}
`

// violationTags lists RULE[POLICY]@STEP of a summary.
func violationTags(s *Summary) []string {
	var out []string
	for _, v := range s.Violations {
		tag := v.Rule
		if v.Policy != "" {
			tag += "[" + string(v.Policy) + "]"
		}
		out = append(out, tag+"@"+strconv.Itoa(v.Step))
	}
	return out
}

// TestUnsafeApprovalAgainstAFreshTrue is item 1: an approval is unsafe
// when it rests on what is not a fresh True of the status source (where
// the gate reads the OperatorCondition, a copy that allows while the
// source is not a fresh True); a True that later turns False for the same
// generation was fresh when the gate allowed.
func TestUnsafeApprovalAgainstAFreshTrue(t *testing.T) {
	const initial = `initial:
  apiVersion: cool.operators.corp/v1beta1
  kind: CoolOperator
  metadata: {name: cool-operator, generation: 1}
  spec: {storageLayer: PostgreSQL}
`
	const (
		true1  = `- {actor: operator, updateStatus: {conditions: [{type: Upgradeable, status: "True", reason: Idle, message: "", lastTransitionTime: "2024-01-01T00:00:00Z", observedGeneration: 1}]}}` + "\n"
		false1 = `- {actor: operator, updateStatus: {conditions: [{type: Upgradeable, status: "False", reason: Busy, message: "", lastTransitionTime: "2024-01-01T00:00:00Z", observedGeneration: 1}]}}` + "\n"
		spec   = `- {actor: user, update: {spec: {storageLayer: MariaDB}}}` + "\n"
		check  = `- {actor: olm, check: {}}` + "\n"
		mirror = `- {actor: operator, target: OperatorCondition, update: {spec: {conditions: [{type: Upgradeable, status: "True", reason: Idle, message: "", lastTransitionTime: "2024-01-01T00:00:00Z"}]}}}` + "\n"
		copyOC = `- {actor: olm, target: OperatorCondition, updateStatus: null}` + "\n"
		ocMode = `statusSource: {apiVersion: cool.operators.corp/v1beta1, kind: CoolOperator, name: cool-operator, handshake: {mode: OperatorCondition}}` + "\n"
	)
	for _, tc := range []struct {
		name   string
		header string
		steps  string
		want   []string
	}{
		{
			name:  "a fresh True that turns False for the same generation",
			steps: true1 + check + false1,
			want:  nil,
		},
		{
			name:  "an outdated True: only naive allows, and that is unsafe",
			steps: true1 + spec + check,
			want:  []string{"unsafe-approval[naive]@3"},
		},
		{
			name:   "OperatorCondition: the copy fresh, the source outdated",
			header: ocMode,
			steps:  true1 + mirror + copyOC + spec + check,
			want:   []string{"unsafe-approval[olm]@5", "unsafe-approval[strict]@5", "unsafe-approval[naive]@5"},
		},
		{
			name:   "OperatorCondition: an empty copy allows, the source is a fresh True",
			header: ocMode,
			steps:  true1 + check,
			want:   nil,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum, _, err := replayString(t, "t.yaml", traceHead+tc.header+initial+"steps:\n"+tc.steps, trace.OpenOptions{Limits: trace.DefaultLimits})
			require.NoError(t, err)
			var got []string
			for _, tag := range violationTags(sum) {
				if strings.HasPrefix(tag, RuleUnsafeApproval) {
					got = append(got, tag)
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestUpgradeWhileBlockedSaysWhichKind is item 7: where the policy's last
// check allowed and the state changed before the replacement, the
// upgrade-while-blocked is the race; where it blocked, or OLM never
// checked, the upgrade went round the gate. The message and the JSON's
// kind say which.
func TestUpgradeWhileBlockedSaysWhichKind(t *testing.T) {
	const initial = `initial:
  apiVersion: cool.operators.corp/v1beta1
  kind: CoolOperator
  metadata: {name: cool-operator, generation: 1}
  spec: {storageLayer: PostgreSQL}
  status: {conditions: [{type: Upgradeable, status: "True", reason: Idle, message: "", lastTransitionTime: "2024-01-01T00:00:00Z", observedGeneration: 1}]}
`
	const (
		false1  = `- {actor: operator, updateStatus: {conditions: [{type: Upgradeable, status: "False", reason: Busy, message: "", lastTransitionTime: "2024-01-01T00:00:00Z", observedGeneration: 1}]}}` + "\n"
		check   = `- {actor: olm, check: {}}` + "\n"
		upgrade = `- {actor: olm, upgrade: {}}` + "\n"
	)
	for _, tc := range []struct {
		name, steps, kind, says string
	}{
		{name: "allowed, then False, then replaced", steps: check + false1 + upgrade, kind: KindRace, says: "a race: its check at step 1 allowed"},
		{name: "False, blocked, replaced anyway", steps: false1 + check + upgrade, kind: KindRoundTheGate, says: "its last check, at step 2, blocked too"},
		{name: "replaced without a check", steps: false1 + upgrade, kind: KindRoundTheGate, says: "it was never checked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum, _, err := replayString(t, "t.yaml", traceHead+initial+"steps:\n"+tc.steps, trace.OpenOptions{Limits: trace.DefaultLimits}, "olm")
			require.NoError(t, err)
			require.Len(t, sum.Violations, 1, "%v", violationTags(sum))
			v := sum.Violations[0]
			assert.Equal(t, RuleUpgradeWhileBlocked, v.Rule)
			assert.Equal(t, tc.kind, v.Kind)
			assert.Contains(t, v.Message, tc.says)
		})
	}
}

// TestBadValuesInTracesAreNotCoerced is item 6: a generation that is not
// an integer, beyond an int64 or negative in the starting object, a typo
// in a condition's field, an unknown header field and a key given twice
// are refused with the line (exit 2); a write that overflows generation is
// refused as the apiserver refuses it (write-rejected).
func TestBadValuesInTracesAreNotCoerced(t *testing.T) {
	const ok = `- {actor: operator, updateStatus: {conditions: [{type: Upgradeable, status: "True", reason: Idle, message: "", lastTransitionTime: "2024-01-01T00:00:00Z", observedGeneration: 1}]}}`
	mk := func(header, gen, steps string) string {
		return traceHead + header + `initial:
  apiVersion: cool.operators.corp/v1beta1
  kind: CoolOperator
  metadata: {name: cool-operator, generation: ` + gen + `}
  spec: {storageLayer: PostgreSQL}
steps:
` + steps + "\n"
	}
	for _, tc := range []struct {
		name    string
		trace   string
		wantErr string // exit 2, with this in the message
		line    int
		want    []string // else these violations
	}{
		{name: "a string generation", trace: mk("", `"abc"`, ok), wantErr: `initial.metadata.generation must be an integer, not a string ("abc")`, line: 7},
		{name: "a fraction", trace: mk("", "1.5", ok), wantErr: "initial.metadata.generation is 1.5, not an integer", line: 7},
		{name: "beyond an int64", trace: mk("", "99999999999999999999", ok), wantErr: "beyond an int64", line: 7},
		{name: "a negative generation", trace: mk("", "-3", ok), wantErr: "a generation is never negative", line: 7},
		{name: "a typo in observedGeneration", trace: mk("", "1", strings.Replace(ok, "observedGeneration", "observedGeneraton", 1)), wantErr: `unknown field "observedGeneraton" (did you mean "observedGeneration"?)`, line: 10},
		{name: "a typo in status", trace: mk("", "1", strings.Replace(ok, "status:", "stauts:", 1)), wantErr: `unknown field "stauts" (did you mean "status"?)`, line: 10},
		{name: "observedGeneration a string", trace: mk("", "1", strings.Replace(ok, "observedGeneration: 1", `observedGeneration: "1"`, 1)), wantErr: "observedGeneration must be an integer", line: 10},
		{name: "an unknown header field", trace: mk("statusSubresourse: true\n", "1", ok), wantErr: `(did you mean "statusSubresource"?)`, line: 4},
		{name: "a key given twice", trace: mk("", "1", "- {actor: operator, actor: user, updateStatus: {conditions: []}}"), wantErr: "actor is given twice", line: 10},
		{name: "generation overflows", trace: mk("", "9223372036854775807", "- {actor: user, update: {spec: {storageLayer: MariaDB}}}"), want: []string{"write-rejected@1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum, _, err := replayString(t, "t.yaml", tc.trace, trace.OpenOptions{Limits: trace.DefaultLimits}, "olm")
			if tc.wantErr != "" {
				require.Error(t, err)
				var te *trace.TraceError
				require.ErrorAs(t, err, &te)
				assert.Equal(t, tc.line, te.Line, "%v", err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, violationTags(sum))
		})
	}
}
