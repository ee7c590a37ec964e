package validate

import (
	"testing"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/simulate"
)

// TestRuleTextIsPlain: what `statuscheck rules` and every finding print
// of a rule (its summary and remediation, the simulate violations' too)
// says what the tool or OLM does, in words a user at a terminal or a CI
// author can follow: no issue or pull-request numbers, no source paths,
// no Go identifiers of statuscheck's packages, no test names, no
// numbered sections.
func TestRuleTextIsPlain(t *testing.T) {
	for _, r := range Rules() {
		for field, text := range map[string]string{"summary": r.Summary, "remediation": r.Remediation} {
			if hits := testutil.InternalText(text); hits != nil {
				t.Errorf("rule %s: its %s names internals or history %q:\n%s", r.ID, field, hits, text)
			}
		}
	}
	for _, k := range simulate.Kinds() {
		for field, text := range map[string]string{"summary": k.Summary, "remediation": k.Remediation} {
			if hits := testutil.InternalText(text); hits != nil {
				t.Errorf("simulate violation %s: its %s names internals or history %q:\n%s", k.ID, field, hits, text)
			}
		}
	}
}

// TestInternalTextPatterns: the patterns find what they are for and leave
// field paths, placeholders, kinds and API groups alone.
func TestInternalTextPatterns(t *testing.T) {
	for _, text := range []string{
		"statuscheck bridge since issue 25 yields",
		"(pkg/bridge.OtherWriter: the entry",
		"(bridge.OtherWriter)",
		"as OLM did before operator-lifecycle-manager PR 2160",
		"fixed in #31",
		"see docs/contract.md section 5",
		"operatorgroup.go: ensureTenantRBAC",
		"TestBridgeYields shows it",
		"the object the reconcile read (obj.GetGeneration())",
	} {
		if testutil.InternalText(text) == nil {
			t.Errorf("%q: not found", text)
		}
	}
	for _, text := range []string{
		"Add status.conditions as a list of metav1.Condition (kubebuilder: Conditions []metav1.Condition `json:\"conditions,omitempty\"`).",
		"Update conditions with apimachinery's meta.SetStatusCondition.",
		"(PATH: .spec.FIELD) or .status.observedUpgradeRequest",
		"the OperatorCondition's spec.conditions, metadata.generation",
		"operators.coreos.com/v2 OperatorCondition, statuscheck.operatorframework.io/bridge",
		"[`manifest-parse`](#manifest-parse), a limit of 16 MiB",
		"docs/contract.md, \"The CSV annotation\"",
	} {
		if hits := testutil.InternalText(text); hits != nil {
			t.Errorf("%q: %q found", text, hits)
		}
	}
}
