package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/result"
)

// verdictJSON is a policy's verdict in simulate's JSON.
type verdictJSON struct {
	Policy, Verdict, Reason string
}

// simulateDoc is simulate's JSON document, as a reader decodes it by its
// field names.
type simulateDoc struct {
	Primary    string
	Violations []struct {
		Rule, Policy, Severity, Message, Remediation string
		Step                                         int
		Historical                                   bool
	}
	Counts, Historical map[string]int
	Final              []verdictJSON
	Timeline           []struct {
		Step     int
		Action   string
		Verdicts []verdictJSON
	}
}

// simulateSummary runs simulate -o json and decodes the whole document.
func simulateSummary(t *testing.T, args ...string) (int, simulateDoc) {
	t.Helper()
	code, stdout, stderr := run(t, append([]string{"simulate", "-o", "json"}, args...)...)
	require.NotEqual(t, result.ExitFailure, code, stderr)
	var sum simulateDoc
	require.NoError(t, json.Unmarshal([]byte(stdout), &sum), stdout)
	return code, sum
}

// TestItem6NaiveDoesNotSetTheExitCodeUnderAll: under --policy all the exit
// code comes from olm and strict only; naive's violations are shown,
// marked as the historical gate's. --policy naive alone still fails on
// them.
func TestItem6NaiveDoesNotSetTheExitCodeUnderAll(t *testing.T) {
	const tr = "testdata/traces/snapshots.yaml" // olm and strict clean, naive approves on an outdated True
	code, stdout, stderr := run(t, "simulate", "--policy", "all", tr)
	assert.Equal(t, result.ExitOK, code, "naive alone must not fail the run:\n%s%s", stdout, stderr)
	assert.Contains(t, stdout, "error unsafe-approval [naive, historical gate: not in the exit code] at step 1:", "naive's violation is still shown, marked")
	assert.Contains(t, stdout, "note:      naive is OLM's old gate (it ignores observedGeneration)")
	assert.Contains(t, strings.Join(strings.Fields(stdout), " "), "1 violation (unsafe-approval 1), 1 of them the historical naive gate's (not in the exit code)")

	_, sum := simulateSummary(t, "--policy", "all", tr)
	require.Len(t, sum.Violations, 1)
	assert.True(t, sum.Violations[0].Historical)
	assert.Equal(t, map[string]int{"unsafe-approval": 1}, sum.Historical)
	assert.Equal(t, "olm", sum.Primary)

	code, stdout, _ = run(t, "simulate", "--policy", "naive", tr)
	assert.Equal(t, result.ExitFindings, code, "naive is the run's own gate here")
	assert.Contains(t, stdout, "error unsafe-approval [naive] at step 1:")
	assert.NotContains(t, stdout, "historical")

	// A violation of a gate that ships still fails the run under all.
	code, _, _ = run(t, "simulate", "--policy", "all", "testdata/traces/seed.yaml")
	assert.Equal(t, result.ExitFindings, code)
	// And the HTML marks the column and the violation.
	_, page, _ := run(t, "simulate", "-o", "html", "--policy", "all", tr)
	assert.Contains(t, page, "<th>naive (historical)</th>")
	assert.Contains(t, page, "[naive, historical gate: not in the exit code]")
}

// TestItem8EmptyOperatorConditionIsStatusSourceNotRead: a recording of
// real OLM committing on an outdated True with an empty OperatorCondition
// (test/olm's TestOutdatedConditionIsNotRead) is the diagnosis, with the
// bridge as its remediation, not a trace to fix.
func TestItem8EmptyOperatorConditionIsStatusSourceNotRead(t *testing.T) {
	const tr = "testdata/traces/recorded-empty-operatorcondition.yaml"
	code, sum := simulateSummary(t, "--policy", "all", tr)
	assert.Equal(t, result.ExitFindings, code)
	assert.Zero(t, sum.Counts["check-expectation"], "not a trace to fix: %+v", sum.Violations)
	var diag []int
	for i, v := range sum.Violations {
		if v.Rule == "status-source-not-read" {
			diag = append(diag, i)
		}
	}
	require.Len(t, diag, 1, "%+v", sum.Violations)
	v := sum.Violations[diag[0]]
	assert.Equal(t, 2, v.Step, "OLM's check that committed (expect: Allow)")
	assert.Equal(t, "error", v.Severity)
	assert.Contains(t, v.Message, "OperatorCondition cool-operator.v0.1.0, which holds no Upgradeable entry (nobody wrote it)")
	assert.Contains(t, v.Message, "today's OLM v0 does not read the status source")
	assert.Contains(t, v.Message, "Upgradeable=True is outdated (observedGeneration 1, generation 2)")
	assert.Contains(t, v.Remediation, "statuscheck generate -w --bridge IMAGE BUNDLE")
	assert.Contains(t, v.Remediation, `{"mode":"OperatorCondition"}`)
	for _, u := range sum.Violations {
		if u.Rule == "upgrade-while-blocked" && !u.Historical {
			assert.Contains(t, u.Message, "OLM's own gate read the OperatorCondition, which holds no Upgradeable entry (nobody wrote it)")
		}
	}
	_, stdout, _ := run(t, "simulate", tr)
	assert.Contains(t, stdout, "error status-source-not-read at step 2: OLM allowed here")
	assert.Contains(t, strings.Join(strings.Fields(stdout), " "), "to fix status-source-not-read: Make OLM v0 read what the status source says: add statuscheck bridge to the bundle (statuscheck generate -w --bridge IMAGE BUNDLE)")

	// The same recording where the operator did write its OperatorCondition
	// (an Upgradeable entry OLM read): the model disagrees with OLM, which
	// is a check-expectation still.
	data, err := os.ReadFile(filepath.Join(repoRoot, tr))
	require.NoError(t, err)
	written := strings.Replace(string(data), `"spec":{"deployments":["cool-operator"],"serviceAccounts":["cool-operator"]}}`,
		`"spec":{"deployments":["cool-operator"],"serviceAccounts":["cool-operator"],"conditions":[{"type":"Upgradeable","status":"True","reason":"Idle","message":"","lastTransitionTime":"2026-11-30T11:59:00Z"}]}}`, 1)
	require.NotEqual(t, string(data), written)
	p := filepath.Join(t.TempDir(), "written.yaml")
	require.NoError(t, os.WriteFile(p, []byte(written), 0o644))
	_, sum = simulateSummary(t, p)
	assert.Zero(t, sum.Counts["status-source-not-read"], "%+v", sum.Violations)
	assert.Equal(t, 1, sum.Counts["check-expectation"], "%+v", sum.Violations)

	// With --bridge the gate reads the OperatorCondition, as OLM does:
	// OLM's Allow is the model's, and the approval on it is unsafe.
	_, sum = simulateSummary(t, "--bridge", tr)
	assert.Zero(t, sum.Counts["status-source-not-read"])
	assert.Zero(t, sum.Counts["check-expectation"])
	assert.NotZero(t, sum.Counts["unsafe-approval"])
}

// TestItemTimelineSaysWhy: every verdict in the text, HTML and JSON
// timelines carries its reason; the JSON names each verdict's policy and
// each violation's remediation, and final names its policy.
func TestItemTimelineSaysWhy(t *testing.T) {
	_, stdout, _ := run(t, "simulate", "--policy", "all", "testdata/traces/snapshots.yaml")
	lines := strings.Split(stdout, "\n")
	var head string
	rows := 0
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "STEP "):
			require.Contains(t, l, " WHY", "the timeline has a WHY column")
			head = l
		case head != "" && l == "":
			head = "" // the end of the table
		case head != "":
			why := ""
			if at := strings.Index(head, "WHY"); len(l) > at {
				why = strings.TrimSpace(l[at:])
			}
			if strings.Contains(l, "Block") || strings.Contains(l, "Allow") {
				rows++
				assert.NotEmpty(t, why, "a verdict without its reason: %q", l)
			}
		}
	}
	assert.Equal(t, 3, rows)
	assert.Contains(t, stdout, "olm, strict: Upgradeable=True is outdated (observedGeneration 15, generation 16); naive: Upgradeable=True (observedGeneration 15, generation 16: not read)")
	assert.Contains(t, stdout, "Upgradeable=False (reason MigrationInProgress)", "a False with its reason")
	_, stdout, _ = run(t, "simulate", "testdata/traces/admin-override.yaml")
	assert.Contains(t, stdout, "admin override: the OperatorCondition's spec.overrides Upgradeable=True")
	_, stdout, _ = run(t, "simulate", "testdata/traces/fidelity/4-delete-bumps-once.yaml")
	assert.Regexp(t, `\n7 .* Block +status source does not exist \(whenAbsent: Block\)\n`, stdout, "an absent CR")

	// JSON: each evaluated step's verdicts, with policy and reason.
	_, sum := simulateSummary(t, "--policy", "all", "testdata/traces/seed.yaml")
	require.NotEmpty(t, sum.Timeline)
	for _, sv := range sum.Timeline {
		require.Len(t, sv.Verdicts, 3, "step %d", sv.Step)
		for i, d := range sv.Verdicts {
			assert.Equal(t, string(contract.Policies()[i]), d.Policy)
			assert.NotEmpty(t, d.Verdict)
			assert.NotEmpty(t, d.Reason, "step %d, %s", sv.Step, d.Policy)
		}
	}
	assert.Equal(t, 2, sum.Timeline[0].Step)
	assert.Equal(t, "check", sum.Timeline[0].Action)
	assert.Equal(t, verdictJSON{Policy: "olm", Verdict: "Block", Reason: "Upgradeable=True is outdated (observedGeneration 15, generation 16)"}, sum.Timeline[0].Verdicts[0])
	require.Len(t, sum.Final, 3)
	for i, d := range sum.Final {
		assert.Equal(t, string(contract.Policies()[i]), d.Policy)
		assert.NotEmpty(t, d.Reason)
	}
	for _, v := range sum.Violations {
		assert.NotEmpty(t, v.Remediation, v.Rule)
	}

	// HTML: each verdict cell shows its reason.
	_, page, _ := run(t, "simulate", "-o", "html", "--policy", "all", "testdata/traces/seed.yaml")
	doc, err := html.Parse(strings.NewReader(page))
	require.NoError(t, err)
	cells := 0
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "td" {
			for _, a := range n.Attr {
				if a.Key == "class" && (strings.HasPrefix(a.Val, "Allow") || strings.HasPrefix(a.Val, "Block") || a.Val == "violated") {
					cells++
					why := n.LastChild
					require.NotNil(t, why)
					assert.Equal(t, "div", why.Data, "a verdict without its reason")
					require.NotNil(t, why.FirstChild)
					assert.NotEmpty(t, why.FirstChild.Data)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	assert.Equal(t, 6, cells, "two evaluated steps, three policies")
	assert.Contains(t, page, "id=\"remediations\"")
}

// TestItemFutureObservedGenerationIsNotEqual: OLM compares with != (the
// trace's comment said <); the trace's check expects OLM's verdict, which
// blocks a condition from the future, and the replay agrees.
func TestItemFutureObservedGenerationIsNotEqual(t *testing.T) {
	const tr = "testdata/traces/future-observed-generation.yaml"
	data, err := os.ReadFile(filepath.Join(repoRoot, tr))
	require.NoError(t, err)
	assert.NotContains(t, string(data), "observedGeneration < generation")
	assert.Contains(t, string(data), `"observedGeneration != generation"`)
	assert.Contains(t, string(data), "{actor: olm, check: {expect: Block}}", "the trace holds OLM's verdict")
	_, sum := simulateSummary(t, "--policy", "all", tr)
	assert.Zero(t, sum.Counts["check-expectation"], "the olm gate blocks, as the trace expects: %+v", sum.Violations)
	var check []verdictJSON
	for _, sv := range sum.Timeline {
		if sv.Action == "check" {
			check = sv.Verdicts
		}
	}
	require.Len(t, check, 3)
	assert.Equal(t, verdictJSON{Policy: "olm", Verdict: "Block", Reason: "Upgradeable=True is outdated: from the future (observedGeneration 7, generation 4)"}, check[0], "olm: 7 != 4")
	assert.Equal(t, "Block", check[1].Verdict, "strict")
	assert.Equal(t, "Allow", check[2].Verdict, "naive, which does not read it")
}

// TestItemCompletionUnsupportedShell: a shell cobra has no script for is a
// usage error naming the ones it has, with nothing on stdout.
func TestItemCompletionUnsupportedShell(t *testing.T) {
	code, stdout, stderr := run(t, "completion", "tcsh")
	assert.Equal(t, result.ExitFailure, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, `statuscheck: completion: unsupported shell "tcsh": statuscheck has completion scripts for bash, fish, powershell or zsh`)
	assert.Contains(t, stderr, "Run 'statuscheck completion --help' for usage.")
	code, stdout, _ = run(t, "completion", "zsh")
	assert.Equal(t, result.ExitOK, code)
	assert.Contains(t, stdout, "#compdef statuscheck")
	code, stdout, _ = run(t, "completion")
	assert.Equal(t, result.ExitOK, code, "no shell: its help")
	assert.Contains(t, stdout, "completion SHELL")
}
