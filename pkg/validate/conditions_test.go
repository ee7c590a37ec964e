package validate

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
