package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	scorecard "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	apierrors "github.com/operator-framework/api/pkg/validation/errors"
	sarif "github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/result"
	"github.com/statuscheck/statuscheck/pkg/simulate"
	"github.com/statuscheck/statuscheck/pkg/trace"
	"github.com/statuscheck/statuscheck/pkg/validate"
)

// report is two bundles: one with an error and a warning, one that could
// not be read.
func report() *result.Report {
	return &result.Report{Bundles: []result.Bundle{
		{Path: "a", Name: "a.v1", Findings: []result.Finding{
			{Rule: "status-subresource-disabled", Severity: result.Error, File: "a/manifests/crd.yaml", Line: 14, Column: 5, Field: "spec.versions[0]", Message: "no status subresource", Remediation: "turn it on"},
			{Rule: "conditions-list-type", Severity: result.Warning, File: "a/manifests/crd.yaml", Line: 30, Column: 7, Message: "two conditions of one type", Remediation: "make it a map list"},
			{Rule: "status-source-missing", Severity: result.Info, File: "catalog.json[a.v1].olm.bundle.object[2]", Line: 3, Column: 1, Message: "no status source", Remediation: "generate"},
		}},
		{Path: "b", Findings: []result.Finding{}, Errors: []string{"loading bundle b: no such file or directory"}},
	}}
}

func TestText(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, Text(&b, report()))
	out := b.String()
	assert.Contains(t, out, "a/manifests/crd.yaml:14:5: error status-subresource-disabled: no status subresource\n")
	assert.Contains(t, out, "a/manifests/crd.yaml:30:7: warning conditions-list-type: two conditions of one type\n")
	assert.Contains(t, out, "2 bundles checked: 1 error, 1 warning, 1 info")
	assert.Equal(t, errWriterErr, Text(failingWriter{}, report()), "a write error is returned, not lost")
}

func TestJSON(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, JSON(&b, report()))
	var got struct {
		Bundles []result.Bundle `json:"bundles"`
		Summary struct {
			Bundles, Errors, Warnings, Info int
		} `json:"summary"`
	}
	require.NoError(t, json.Unmarshal(b.Bytes(), &got))
	require.Len(t, got.Bundles, 2)
	assert.Equal(t, report().Bundles[0].Findings, got.Bundles[0].Findings, "findings survive the round trip")
	assert.Equal(t, []string{"loading bundle b: no such file or directory"}, got.Bundles[1].Errors)
}

// TestSARIFIsValid checks the SARIF log against SARIF 2.1.0's own schema
// (go-sarif's Validate) and what code scanning reads of it.
func TestSARIFIsValid(t *testing.T) {
	root, err := filepath.Abs(".")
	require.NoError(t, err)
	rep := report()
	rep.Bundles[0].Findings[0].File = filepath.Join(root, "a", "manifests", "crd.yaml")
	var b bytes.Buffer
	require.NoError(t, SARIF(&b, rep, validate.Rules(), root, "v1.2.3"))
	log, err := sarif.FromBytes(b.Bytes())
	require.NoError(t, err)
	require.NoError(t, log.Validate(), "the log is SARIF 2.1.0")
	require.Len(t, log.Runs, 1)
	run := log.Runs[0]
	assert.Equal(t, "v1.2.3", *run.Tool.Driver.Version)
	assert.Len(t, run.Tool.Driver.Rules, len(validate.Rules()))
	require.Len(t, run.Results, 3)
	first := run.Results[0]
	assert.Equal(t, "status-subresource-disabled", *first.RuleID)
	assert.Equal(t, "status-subresource-disabled", *run.Tool.Driver.Rules[first.RuleIndex].ID, "ruleIndex points at the rule")
	assert.Equal(t, "error", first.Level)
	loc := first.Locations[0].PhysicalLocation
	assert.Equal(t, "a/manifests/crd.yaml", *loc.ArtifactLocation.URI, "relative to the repository")
	assert.Equal(t, "%SRCROOT%", *loc.ArtifactLocation.URIBaseID)
	assert.Equal(t, 14, *loc.Region.StartLine)
	assert.Equal(t, 5, *loc.Region.StartColumn)
	catalog := run.Results[2]
	assert.Equal(t, "note", catalog.Level)
	assert.Nil(t, catalog.Locations[0].PhysicalLocation.Region, "a line inside a catalog's embedded object is not a line of the file")
	assert.True(t, strings.HasPrefix(*catalog.Message.Text, "[a.v1].olm.bundle.object[2]: "), *catalog.Message.Text)
	require.Len(t, run.Invocations, 1)
	assert.False(t, *run.Invocations[0].ExecutionSuccessful, "a bundle could not be read")
	require.Len(t, run.Invocations[0].ToolExecutionNotifications, 1)
}

func TestJUnit(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, JUnit(&b, report(), validate.Rules(), result.Warning))
	var got struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
				Error   *struct{} `xml:"error"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(b.Bytes(), &got))
	require.Len(t, got.Suites, 2)
	assert.Equal(t, 2, got.Failures, "the error and the warning fail at --fail-on warning")
	assert.Equal(t, 1, got.Errors, "the unreadable bundle is an error")
	assert.Equal(t, got.Tests, len(got.Suites[0].Cases)+len(got.Suites[1].Cases))
}

func TestManifestResultAndScorecard(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, ManifestResult(&b, report().Bundles[0]))
	var mr apierrors.ManifestResult
	dec := json.NewDecoder(&b)
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&mr), "operator-sdk decodes it strictly")
	assert.Equal(t, "a.v1", mr.Name)
	require.Len(t, mr.Errors, 1)
	require.Len(t, mr.Warnings, 1, "info has no place in a ManifestResult")
	assert.Equal(t, apierrors.ErrorType("statuscheck/status-subresource-disabled"), mr.Errors[0].Type)

	b.Reset()
	require.NoError(t, Scorecard(&b, report(), result.Error))
	var st scorecard.TestStatus
	require.NoError(t, json.Unmarshal(b.Bytes(), &st))
	require.Len(t, st.Results, 2)
	assert.Equal(t, scorecard.FailState, st.Results[0].State)
	assert.Equal(t, scorecard.ErrorState, st.Results[1].State)
	assert.Equal(t, []string{"turn it on"}, st.Results[0].Suggestions)
}

func TestRules(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, RulesMarkdown(&b, validate.Rules()))
	for _, r := range validate.Rules() {
		assert.Contains(t, b.String(), "`"+r.ID+"`")
	}
	for _, k := range simulate.Kinds() {
		assert.Contains(t, b.String(), k.ID, "the violations are listed too")
	}
	b.Reset()
	require.NoError(t, RulesJSON(&b, validate.Rules()))
	var infos []RuleInfo
	require.NoError(t, json.Unmarshal(b.Bytes(), &infos))
	assert.GreaterOrEqual(t, len(infos), len(validate.Rules()))
}

// short is a short trace with a violation, for the simulation writers.
func short() (*trace.Trace, *simulate.Config) {
	src := &v1alpha1.StatusSource{APIVersion: "cool.operators.corp/v1beta1", Kind: "CoolOperator", Name: "cool-operator"}
	initial := map[string]interface{}{"apiVersion": src.APIVersion, "kind": src.Kind,
		"metadata": map[string]interface{}{"name": src.Name, "generation": int64(1)},
		"status": map[string]interface{}{"conditions": []interface{}{map[string]interface{}{
			"type": "Upgradeable", "status": "False", "reason": "Migrating", "message": "<b>", "lastTransitionTime": "2024-01-01T00:00:00Z", "observedGeneration": int64(1)}}}}
	tr := trace.FromSteps("<b>t</b>", src, initial, []trace.Step{{Actor: v1alpha1.ActorOLM, Verb: v1alpha1.VerbUpgrade, File: "t.yaml", Line: 9}})
	return tr, &simulate.Config{Source: src, StatusSubresource: true, Policies: []contract.Policy{contract.PolicyOLM}, Primary: contract.PolicyOLM}
}

func TestTimeline(t *testing.T) {
	var b bytes.Buffer
	tr, cfg := short()
	tl := NewTimeline(&b, simulate.NewSummary(tr, cfg), nil)
	sum, err := simulate.Replay(tr, cfg, tl.Row)
	require.NoError(t, err)
	require.NoError(t, tl.Close(sum))
	out := b.String()
	assert.Contains(t, out, "STEP  LINE  ACTOR    ACTION")
	assert.Regexp(t, `1\s+9\s+olm\s+upgrade\s+1\s+False og=1\s+Block\s+upgrade-while-blocked\(olm\)`, out)
	assert.Contains(t, out, "t.yaml:9: error upgrade-while-blocked [olm] at step 1:")
	assert.Contains(t, out, "1 step, 1 violation (upgrade-while-blocked 1); gate at the end: olm Block")
}

func TestSimulationJSONAndHTML(t *testing.T) {
	rows := &HTMLRows{}
	tr, cfg := short()
	spool, err := os.CreateTemp(t.TempDir(), "spool")
	require.NoError(t, err)
	defer spool.Close()
	steps := NewJSONSteps(spool, cfg.Policies)
	sum, err := simulate.Replay(tr, cfg, func(r simulate.Row) error {
		if err := steps.Row(r); err != nil {
			return err
		}
		return rows.Add(r)
	})
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, SimulationJSON(&b, sum, steps))
	var back simulate.Summary
	require.NoError(t, json.Unmarshal(b.Bytes(), &back), b.String())
	require.Len(t, back.Violations, 1)
	assert.Equal(t, simulate.RuleUpgradeWhileBlocked, back.Violations[0].Rule)
	assert.NotEmpty(t, back.Violations[0].Remediation)
	require.Len(t, back.Timeline, 1, "the one step, where the gate was evaluated")
	assert.Equal(t, []simulate.PolicyDecision{{Policy: contract.PolicyOLM, Decision: contract.Decision{Verdict: contract.Block, Reason: "Upgradeable=False (reason Migrating)"}}}, back.Timeline[0].Verdicts)
	require.Len(t, back.Final, 1)
	assert.Equal(t, contract.PolicyOLM, back.Final[0].Policy)

	b.Reset()
	require.NoError(t, SimulationHTML(&b, sum, rows))
	page := b.String()
	doc, err := html.Parse(&b)
	require.NoError(t, err)
	text := textOf(doc)
	assert.Contains(t, text, "upgrade-while-blocked")
	assert.Contains(t, page, "&lt;b&gt;t&lt;/b&gt;", "the name is escaped")
	assert.NotContains(t, page, "<b>t</b>")
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

var errWriterErr = errors.New("disk full")

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errWriterErr }

// TestTimelineSpooled: with a spool nothing reaches the writer before
// Close, and the columns are as wide as their widest cell.
func TestTimelineSpooled(t *testing.T) {
	var b bytes.Buffer
	tr, cfg := short()
	spool, err := os.CreateTemp(t.TempDir(), "spool")
	require.NoError(t, err)
	defer spool.Close()
	tl := NewTimeline(&b, simulate.NewSummary(tr, cfg), spool)
	sum, err := simulate.Replay(tr, cfg, tl.Row)
	require.NoError(t, err)
	assert.Zero(t, b.Len(), "nothing before Close")
	require.NoError(t, tl.Close(sum))
	out := b.String()
	assert.Contains(t, out, "STEP LINE ACTOR ACTION  GEN UPGRADEABLE olm    VIOLATIONS                 WHY\n")
	assert.Contains(t, out, "1    9    olm   upgrade 1   False og=1  Block  upgrade-while-blocked(olm) Upgradeable=False (reason Migrating)\n")
}

func timelineRow(i int) simulate.Row {
	return simulate.Row{Step: simulate.Step{Actor: v1alpha1.ActorOperator, Verb: v1alpha1.VerbUpdateStatus, Line: i + 10},
		Outcome: simulate.Outcome{Step: i + 1, Verdicts: []contract.Decision{{Verdict: contract.Allow}}},
		Exists:  true, Generation: int64(i/3 + 1), Condition: "True og=1"}
}

// BenchmarkTimeline writes rows live (the stream) and through a spool
// file (a trace file: held, then aligned), side by side.
func BenchmarkTimeline(b *testing.B) {
	tr, cfg := short()
	for _, mode := range []string{"stream", "spool"} {
		b.Run(mode, func(b *testing.B) {
			var spool io.ReadWriteSeeker
			if mode == "spool" {
				f, err := os.CreateTemp(b.TempDir(), "spool")
				require.NoError(b, err)
				defer f.Close()
				spool = f
			}
			sum := simulate.NewSummary(tr, cfg)
			tl := NewTimeline(io.Discard, sum, spool)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := tl.Row(timelineRow(i)); err != nil {
					b.Fatal(err)
				}
			}
			if err := tl.Close(sum); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// TestVerdictNoFailsEveryPipelineFormat: OLM v0's verdict can be "no" on
// warnings alone (they put the gate in doubt), and the exit code is then
// 1; JUnit, SARIF, scorecard and operator-sdk's ManifestResult, which a
// pipeline reads instead of the exit code (statuscheck exits 0 for the
// last two), must fail the bundle too, under the verdict's rule.
func TestVerdictNoFailsEveryPipelineFormat(t *testing.T) {
	doubt := func() *result.Report {
		return &result.Report{Bundles: []result.Bundle{{Path: "a", Name: "a.v1", File: "a/manifests/csv.yaml",
			Findings: []result.Finding{
				{Rule: "conditions-list-type", Severity: result.Warning, File: "a/manifests/crd.yaml", Line: 30, Column: 7, Message: "two conditions of one type", Remediation: "make it a map list"},
			},
			Protection: []result.Protection{{Manager: result.ManagerOLMv0, Reason: "the gate may not hold as declared: conditions-list-type", Remedy: "fix the warnings"}},
		}}}
	}
	require.Equal(t, result.ExitFindings, doubt().ExitCode(result.Error), "the exit code the formats must agree with")

	var b bytes.Buffer
	require.NoError(t, JUnit(&b, doubt(), validate.Rules(), result.Error))
	var suites struct {
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(b.Bytes(), &suites))
	assert.Equal(t, 1, suites.Failures, "junit")
	for _, c := range suites.Suites[0].Cases {
		if c.Name == validate.RuleNotHeldOLMv0 {
			require.NotNil(t, c.Failure, "junit: the verdict's testcase fails")
			assert.Contains(t, c.Failure.Message, "the gate may not hold as declared")
			assert.Contains(t, c.Failure.Text, "remediation: fix the warnings", "the verdict's remedy, not the rule's")
		} else {
			assert.Nil(t, c.Failure, "junit: %s", c.Name)
		}
	}

	b.Reset()
	require.NoError(t, SARIF(&b, doubt(), validate.Rules(), ".", ""))
	log, err := sarif.FromBytes(b.Bytes())
	require.NoError(t, err)
	require.NoError(t, log.Validate())
	var levels []string
	for _, r := range log.Runs[0].Results {
		levels = append(levels, *r.RuleID+"="+r.Level)
	}
	assert.Equal(t, []string{"conditions-list-type=warning", validate.RuleNotHeldOLMv0 + "=error"}, levels, "sarif")

	b.Reset()
	require.NoError(t, Scorecard(&b, doubt(), result.Error))
	var st scorecard.TestStatus
	require.NoError(t, json.Unmarshal(b.Bytes(), &st))
	require.Len(t, st.Results, 1)
	assert.Equal(t, scorecard.FailState, st.Results[0].State, "scorecard")
	assert.Contains(t, st.Results[0].Suggestions, "fix the warnings")

	b.Reset()
	require.NoError(t, ManifestResult(&b, doubt().Bundles[0]))
	var mr apierrors.ManifestResult
	require.NoError(t, json.Unmarshal(b.Bytes(), &mr))
	require.Len(t, mr.Errors, 1, "manifest-result")
	assert.Equal(t, apierrors.ErrorType("statuscheck/"+validate.RuleNotHeldOLMv0), mr.Errors[0].Type)
	assert.Len(t, mr.Warnings, 1)

	held := doubt()
	held.Bundles[0].Protection[0].Held = true
	b.Reset()
	require.NoError(t, Scorecard(&b, held, result.Error))
	require.NoError(t, json.Unmarshal(b.Bytes(), &st))
	assert.Equal(t, scorecard.PassState, st.Results[0].State, "a held bundle with a warning passes at --fail-on error")
}
