package validate

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/guard"
	"github.com/statuscheck/statuscheck/pkg/result"
)

// Edits of the good bundle's CRD for the rules about status.conditions.
var (
	// conditionsUndescribed takes the conditions out of the schema.
	conditionsUndescribed = edit{crdFile, conditionsSchema, ""}
	// statusKeepsUnknown keeps every field of status the schema does not
	// describe (as forklift's and spark's CRDs do).
	statusKeepsUnknown = edit{crdFile, "          status:\n            type: object\n", "          status:\n            type: object\n            x-kubernetes-preserve-unknown-fields: true\n"}
	// conditionsAtomic describes the conditions as an atomic list.
	conditionsAtomic = edit{crdFile, "                x-kubernetes-list-type: map\n                x-kubernetes-list-map-keys:\n                - type\n", "                x-kubernetes-list-type: atomic\n"}
)

// conditionsFindings lists the findings of the conditions-* rules as
// "rule(severity)", sorted.
func conditionsFindings(findings []result.Finding) []string {
	var out []string
	for _, f := range findings {
		if f.Rule == "conditions-schema-missing" || f.Rule == "conditions-list-type" {
			out = append(out, fmt.Sprintf("%s(%s)", f.Rule, f.Severity))
		}
	}
	sort.Strings(out)
	return out
}

// admissionPolicy is the admission policy generate prints for the
// bundle's status source, as validate --guards reads it.
func admissionPolicy(t *testing.T, b *bundle.Bundle) []guard.Found {
	t.Helper()
	csv := b.CSV()
	tg, err := guard.Resolve(csv.Obj, csv.Doc.File, NewContext(b, Options{}).Source, "cooloperators", true, "cool-system", "")
	require.NoError(t, err)
	p, bd := guard.AdmissionPolicy(tg)
	data, err := guard.YAML(p, bd)
	require.NoError(t, err)
	found, err := guard.Parse("policy.yaml", data)
	require.NoError(t, err)
	return found
}

// TestListTypeNotBesideSchemaMissing: where the CRD version does not
// describe status.conditions at all, conditions-schema-missing is the one
// finding about them; conditions-list-type, which that implies (and whose
// fix needs the conditions in the schema first), is not reported beside
// it. It still is where the conditions are described, but not as a map
// list keyed by type. The verdicts do not get weaker for it: OLM v0's, and
// those of the admission policy the bundle ships, stay "no", naming
// conditions-schema-missing.
func TestListTypeNotBesideSchemaMissing(t *testing.T) {
	tests := []struct {
		name  string
		edits []edit
		// findings are the conditions rules' findings, "rule(severity)".
		findings []string
		// v0Ends is how OLM v0's verdict ends; guardsSay is what the
		// admission policy's verdicts (OLM v1, without OLM) say of the CR.
		v0Ends, guardsSay string
	}{
		{name: "not described, unknown fields kept, the bridge under RequestAck",
			edits:     append([]edit{conditionsUndescribed, statusKeepsUnknown}, protectedEdits...),
			findings:  []string{"conditions-schema-missing(warning)"},
			v0Ends:    "the gate may not hold as declared: conditions-schema-missing",
			guardsSay: "the gate may not hold as declared: conditions-schema-missing;"},
		{name: "not described, unknown fields kept, no bridge",
			edits:     []edit{conditionsUndescribed, statusKeepsUnknown},
			findings:  []string{"conditions-schema-missing(warning)"},
			v0Ends:    `nothing writes it from CoolOperator "cool-operator"`,
			guardsSay: "the gate may not hold as declared: conditions-schema-missing;"},
		{name: "not described, pruned, the bridge under RequestAck",
			edits:     append([]edit{conditionsUndescribed}, protectedEdits...),
			findings:  []string{"conditions-schema-missing(error)"},
			v0Ends:    "the status source cannot work as declared: conditions-schema-missing",
			guardsSay: "the status source cannot work as declared: conditions-schema-missing;"},
		{name: "described as an atomic list, the bridge under RequestAck",
			edits:     append([]edit{conditionsAtomic}, protectedEdits...),
			findings:  []string{"conditions-list-type(warning)"},
			v0Ends:    "the gate may not hold as declared: conditions-list-type",
			guardsSay: "the gate may not hold as declared: conditions-list-type;"},
		{name: "described as an atomic list, unknown fields kept, the bridge under RequestAck",
			edits:     append([]edit{conditionsAtomic, statusKeepsUnknown}, protectedEdits...),
			findings:  []string{"conditions-list-type(warning)"},
			v0Ends:    "the gate may not hold as declared: conditions-list-type",
			guardsSay: "the gate may not hold as declared: conditions-list-type;"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			materialize(t, fixture{edits: tt.edits}, dir)
			b, err := bundle.Load(dir, bundle.Options{})
			require.NoError(t, err)
			res := Check(b, Options{Guards: admissionPolicy(t, b)})
			require.Empty(t, res.Errors)
			assert.Equal(t, tt.findings, conditionsFindings(res.Findings))

			require.Len(t, res.Protection, 3)
			for _, p := range res.Protection {
				assert.False(t, p.Held, "%s: %s", p.Manager, p.Reason)
				assert.NotEmpty(t, p.Remedy, p.Manager)
				if p.Manager == result.ManagerOLMv0 {
					assert.True(t, strings.HasSuffix(p.Reason, tt.v0Ends), "OLM v0's verdict: %s", p.Reason)
				} else {
					assert.Contains(t, p.Reason, tt.guardsSay, p.Manager)
				}
			}
		})
	}
}

// Edits of the good bundle's CRD that make the apiserver prune what the
// gate reads of a condition, or keep the gate shut otherwise.
var (
	conditionOGUndescribed = edit{crdFile, "                    observedGeneration:\n                      type: integer\n                      format: int64\n                      minimum: 0\n", ""}
	statusOGUndescribed    = edit{crdFile, "              observedGeneration:\n                type: integer\n                format: int64\n", ""}
	// conditionStatusUndescribed takes the condition's status out of the
	// schema (and out of required, which would refuse the write instead).
	conditionStatusUndescribed = []edit{
		{crdFile, "                    status:\n                      type: string\n                      enum:\n                      - \"True\"\n                      - \"False\"\n                      - Unknown\n", ""},
		{crdFile, "                  - type\n                  - status\n", "                  - type\n"},
	}
	// conditionTypeUndescribed takes the condition's type out of the
	// schema: out of required, and out of the map list's keys, which
	// would refuse the CRD.
	conditionTypeUndescribed = []edit{
		{crdFile, "                x-kubernetes-list-type: map\n                x-kubernetes-list-map-keys:\n                - type\n", ""},
		{crdFile, "                    type:\n                      type: string\n                      maxLength: 316\n", ""},
		{crdFile, "                  - type\n                  - status\n", "                  - status\n"},
	}
	noStatusSubresource = edit{crdFile, "    subresources:\n      status: {}\n", ""}
	withBridge          = []edit{bridgeDeclared, bridgeContainer}
)

// TestNeverUpgradeableSaysWhatTheSchemaPrunes: where the gate can never
// open because the CRD's schema makes the apiserver drop what the gate
// reads of the status write (the conditions, a condition's status, or its
// observedGeneration where the gate compares it), never-upgradeable's
// message says so: the CRD, its version, the field path and what to add
// to the schema. Its remediation stays the rule's, and where another cause
// keeps the gate shut (no status subresource; the bridge reading
// status.observedGeneration, which the CRD keeps), the message says
// nothing of the schema.
func TestNeverUpgradeableSaysWhatTheSchemaPrunes(t *testing.T) {
	const where = "version v1beta1 of CRD cooloperators.cool.operators.corp does not describe "
	tests := []struct {
		name  string
		edits []edit
		// has and hasNot are what never-upgradeable's message says, and
		// must not say.
		has, hasNot []string
	}{
		{name: "the condition's observedGeneration pruned, OLM reading the CR",
			edits: []edit{conditionOGUndescribed},
			has: []string{"the apiserver drops what the gate reads: " + where + "status.conditions[].observedGeneration, so every status write the operator makes loses it",
				"without its observedGeneration a condition never counts as fresh",
				"add observedGeneration (type: integer, format: int64) to the properties of the items of status.conditions, as metav1.Condition has it; `statuscheck simulate"}},
		{name: "both observedGenerations pruned, the bridge",
			edits: append([]edit{conditionOGUndescribed, statusOGUndescribed}, withBridge...),
			has:   []string{where + "status.conditions[].observedGeneration, so", "add observedGeneration (type: integer, format: int64)"}},
		{name: "the condition's status pruned, the bridge",
			edits: append(append([]edit{}, conditionStatusUndescribed...), withBridge...),
			has: []string{"the apiserver drops what the gate reads: " + where + "status.conditions[].status, so every status write the operator makes loses it",
				"without its status a condition is never True", "add status (type: string)"},
			hasNot: []string{"observedGeneration (type"}},
		{name: "the conditions pruned, the bridge",
			edits: append([]edit{conditionsUndescribed}, withBridge...),
			has: []string{"the apiserver drops what the gate reads: " + where + "status.conditions, so every status write the operator makes loses the conditions",
				"add status.conditions to the schema, a list of metav1.Condition"}},
		{name: "the condition's type and observedGeneration pruned, the bridge reading status.observedGeneration",
			edits:  append(append([]edit{conditionOGUndescribed}, conditionTypeUndescribed...), withBridge...),
			has:    []string{where + "status.conditions[].type, so", "add type (type: string)"},
			hasNot: []string{"observedGeneration, so", "observedGeneration (type"}},
		{name: "no status subresource, the bridge: not the schema",
			edits:  append([]edit{noStatusSubresource}, withBridge...),
			has:    []string{"Upgradeable=False; `statuscheck simulate --explore --bundle "},
			hasNot: []string{"the apiserver drops", "does not describe"}},
		{name: "no status subresource, the condition's observedGeneration pruned, the bridge reading status.observedGeneration: not the schema",
			edits:  append([]edit{noStatusSubresource, conditionOGUndescribed}, withBridge...),
			hasNot: []string{"the apiserver drops", "does not describe"}},
	}
	var remediation string
	for _, r := range Rules() {
		if r.ID == "never-upgradeable" {
			remediation = r.Remediation
		}
	}
	require.NotEmpty(t, remediation)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, findings := edited(t, fixture{edits: tt.edits})
			got := ofRule(findings, "never-upgradeable")
			require.Len(t, got, 1, "findings: %+v", findings)
			f := got[0]
			assert.Equal(t, result.Error, f.Severity)
			assert.Equal(t, remediation, f.Remediation, "the remediation is the rule's")
			assert.True(t, strings.HasPrefix(f.Message, "the protocol search of OLM "), f.Message)
			assert.NotContains(t, f.Message, "\n")
			// The bundle's path is a temporary folder named after the test.
			assert.Empty(t, testutil.InternalText(strings.ReplaceAll(f.Message, dir, "BUNDLE")), "plain words for a user")
			for _, s := range tt.has {
				assert.Contains(t, f.Message, s)
			}
			for _, s := range tt.hasNot {
				assert.NotContains(t, f.Message, s)
			}
		})
	}
}

// TestListTypeNamesTheKeysInWords: conditions kept as a map list keyed by
// other fields are named by those fields, in words, not as a Go slice.
func TestListTypeNamesTheKeysInWords(t *testing.T) {
	_, findings := edited(t, fixture{edits: []edit{
		{crdFile, "                x-kubernetes-list-map-keys:\n                - type\n", "                x-kubernetes-list-map-keys:\n                - status\n                - reason\n"},
	}})
	got := ofRule(findings, "conditions-list-type")
	require.Len(t, got, 1, "findings: %+v", findings)
	assert.Contains(t, got[0].Message, "is a map list keyed by status, reason, not by type")
	assert.NotContains(t, got[0].Message, "[")
}
