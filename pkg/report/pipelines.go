package report

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	scorecard "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	apierrors "github.com/operator-framework/api/pkg/validation/errors"
	sarif "github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"

	"github.com/statuscheck/statuscheck/pkg/result"
	"github.com/statuscheck/statuscheck/pkg/validate"
)

// The writers in this file fit statuscheck into pipelines that already
// exist: operator-sdk's external validators, scorecard custom tests,
// GitHub code scanning (SARIF) and CI test reports (JUnit).

// ManifestResult writes one operator-framework/api errors.ManifestResult,
// the JSON (Go field names, no tags) that `operator-sdk bundle validate
// --alpha-select-external` decodes strictly. Errors are error findings,
// Warnings are warnings; info has no place in it and is left out.
func ManifestResult(w io.Writer, b result.Bundle) error {
	mr := apierrors.ManifestResult{Name: b.Name}
	if mr.Name == "" {
		mr.Name = b.Path
	}
	for _, f := range withVerdict(b) {
		e := apierrors.Error{
			Type:     apierrors.ErrorType("statuscheck/" + f.Rule),
			Field:    f.Field,
			BadValue: position(f),
			Detail:   fmt.Sprintf("%s: %s (remediation: %s)", f.Rule, f.Message, f.Remediation),
		}
		switch f.Severity {
		case result.Error:
			e.Level = apierrors.LevelError
			mr.Errors = append(mr.Errors, e)
		case result.Warning:
			e.Level = apierrors.LevelWarn
			mr.Warnings = append(mr.Warnings, e)
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "    ")
	return enc.Encode(mr)
}

// Scorecard writes a scorecard.operatorframework.io/v1alpha3 TestStatus,
// the output of a scorecard custom test: one result per bundle, failing
// when a finding is at or above failOn.
func Scorecard(w io.Writer, rep *result.Report, failOn result.Severity) error {
	var st scorecard.TestStatus
	for _, b := range rep.Bundles {
		tr := scorecard.TestResult{Name: "statuscheck-status-source", State: scorecard.PassState}
		if len(rep.Bundles) > 1 {
			tr.Name += "/" + nameOf(b)
		}
		var log strings.Builder
		for _, f := range withVerdict(b) {
			fmt.Fprintf(&log, "%s: %s %s: %s\n", position(f), f.Severity, f.Rule, f.Message)
			if f.Severity >= failOn {
				tr.State = scorecard.FailState
				tr.Errors = append(tr.Errors, fmt.Sprintf("%s: %s: %s", position(f), f.Rule, f.Message))
				tr.Suggestions = appendOnce(tr.Suggestions, f.Remediation)
			}
		}
		for _, e := range b.Errors {
			tr.State = scorecard.ErrorState
			tr.Errors = append(tr.Errors, e)
		}
		if log.Len() == 0 {
			log.WriteString("no findings\n")
		}
		tr.Log = log.String()
		st.Results = append(st.Results, tr)
	}
	for _, e := range rep.Errors {
		st.Results = append(st.Results, scorecard.TestResult{Name: "statuscheck-status-source/" + e.Path, State: scorecard.ErrorState,
			Errors: []string{e.Error}, Log: "could not be read: nothing was checked\n"})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(st)
}

// withVerdict is b's findings, then its verdict for OLM v0 as a finding
// of validate.RuleNotHeldOLMv0 when the verdict is "no" and no error of
// that rule says so already. The verdict can be "no" on warnings alone
// (they put the gate in doubt) and the exit code is then 1 (ExitCode); a
// pipeline that reads JUnit, SARIF, a scorecard result or a ManifestResult
// instead of the exit code (statuscheck exits 0 for the last two) must see
// the bundle fail too. Its place is the bundle's CSV.
func withVerdict(b result.Bundle) []result.Finding {
	v, ok := b.OLMv0()
	if !ok || v.Held {
		return b.Findings
	}
	for _, f := range b.Findings {
		if f.Rule == validate.RuleNotHeldOLMv0 && f.Severity == result.Error {
			return b.Findings
		}
	}
	return append(slices.Clip(b.Findings), result.Finding{Rule: validate.RuleNotHeldOLMv0, Severity: result.Error, File: bundleFile(b),
		Message: "OLM v0 does not hold the upgrade: " + v.Reason, Remediation: v.Remedy})
}

func nameOf(b result.Bundle) string {
	if b.Name != "" {
		return b.Name
	}
	return b.Path
}

// suiteName names a bundle's JUnit suite by its path, so two paths that
// hold the same CSV stay two suites: "bundles/a (cool-operator.v0.2.0)",
// and a catalog's entries by file and bundle name.
func suiteName(b result.Bundle) string {
	if b.Name == "" {
		return b.Path
	}
	return b.Path + " (" + b.Name + ")"
}

// bundleFile is the file that stands for a bundle: its CSV, else its
// metadata/annotations.yaml, else its path.
func bundleFile(b result.Bundle) string {
	if b.File != "" {
		return b.File
	}
	return b.Path
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// sarifSchema is the schema GitHub documents for uploads.
const sarifSchema = "https://json.schemastore.org/sarif-2.1.0.json"

func sarifLevel(s result.Severity) string {
	switch s {
	case result.Error:
		return "error"
	case result.Warning:
		return "warning"
	}
	return "note"
}

// SARIF writes a SARIF 2.1.0 log (github.com/owenrumney/go-sarif's types,
// as GitHub code scanning accepts it): the registry's rules, one
// invocation that says whether every bundle could be read (SARIF 2.1.0
// section 3.20.14), and each finding with a URI relative to root (the
// repository) and a region.
func SARIF(w io.Writer, rep *result.Report, rules []validate.Rule, root, version string) error {
	log := sarif.NewReport()
	log.Schema = sarifSchema
	run := sarif.NewRunWithInformationURI("statuscheck", "https://github.com/statuscheck/statuscheck")
	if version != "" {
		run.Tool.Driver.WithVersion(version)
	}
	for _, r := range rules {
		run.AddRule(r.ID).WithName(ruleName(r.ID)).
			WithShortDescription(sarif.NewMultiformatMessageString().WithText(r.Summary)).
			WithFullDescription(sarif.NewMultiformatMessageString().WithText(r.Summary)).
			WithHelp(sarif.NewMultiformatMessageString().WithText(r.Remediation)).
			WithHelpURI("https://github.com/statuscheck/statuscheck/blob/main/docs/rules.md#" + r.ID).
			WithDefaultConfiguration(sarif.NewReportingConfiguration().WithLevel(sarifLevel(r.Severity)))
	}
	inv := sarif.NewInvocation().WithExecutionSuccessful(!rep.Failed())
	for _, b := range rep.Bundles {
		for _, e := range b.Errors {
			inv.AddToolExecutionNotification(sarif.NewNotification().WithLevel("error").WithMessage(sarif.NewTextMessage(e)))
		}
	}
	for _, e := range rep.Errors {
		inv.AddToolExecutionNotification(sarif.NewNotification().WithLevel("error").WithMessage(sarif.NewTextMessage(e.Error)))
	}
	run.AddInvocation(inv)
	run.WithResults([]*sarif.Result{})
	for _, b := range rep.Bundles {
		for _, f := range withVerdict(b) {
			file, object := splitObject(f.File)
			msg := f.Message
			if object != "" {
				msg = object + ": " + msg
			}
			if st, err := os.Stat(file); err == nil && st.IsDir() && b.File != "" {
				// Code scanning places a result in a file: a finding about
				// a directory goes to the bundle's CSV (or annotations.yaml).
				msg = file + ": " + msg
				file = b.File
			}
			phys := sarif.NewPhysicalLocation().WithArtifactLocation(artifact(root, file))
			if f.Line > 0 && object == "" {
				region := sarif.NewRegion().WithStartLine(f.Line)
				if f.Column > 0 {
					region.WithStartColumn(f.Column)
				}
				phys.WithRegion(region)
			}
			run.AddResult(sarif.NewRuleResult(f.Rule).WithRuleIndex(run.GetRuleIndex(f.Rule)).WithLevel(sarifLevel(f.Severity)).
				WithMessage(sarif.NewTextMessage(msg)).AddLocation(sarif.NewLocationWithPhysicalLocation(phys)))
		}
	}
	log.AddRun(run)
	if err := log.PrettyWrite(w); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// ruleName turns an ID into the PascalCase name SARIF viewers show.
func ruleName(id string) string {
	var b strings.Builder
	for _, p := range strings.Split(id, "-") {
		if p != "" {
			b.WriteString(strings.ToUpper(p[:1]) + p[1:])
		}
	}
	return b.String()
}

// splitObject separates a catalog's virtual file name
// ("catalog.json[bundle].olm.bundle.object[1]") into the real file and the
// object inside it.
func splitObject(file string) (string, string) {
	if i := strings.Index(file, "["); i > 0 && strings.Contains(file[i:], "olm.bundle.object") {
		return file[:i], file[i:]
	}
	return file, ""
}

// RepoRoot finds the repository a path lies in (a directory with .git),
// for repository-relative URIs; the working directory when there is none.
func RepoRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		if filepath.Dir(dir) == dir {
			return wd
		}
	}
}

// artifact locates a file for SARIF: relative to %SRCROOT% (the
// repository) when it lies inside it, else by an absolute file: URI with
// no base, since a path outside the root cannot be resolved against it.
func artifact(root, file string) *sarif.ArtifactLocation {
	abs, err := filepath.Abs(file)
	if err != nil {
		return sarif.NewSimpleArtifactLocation((&url.URL{Path: filepath.ToSlash(file)}).String())
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return sarif.NewSimpleArtifactLocation((&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String())
	}
	return sarif.NewSimpleArtifactLocation((&url.URL{Path: filepath.ToSlash(rel)}).String()).WithURIBaseID("%SRCROOT%")
}

// JUnit.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	File      string      `xml:"file,attr,omitempty"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	TestCases []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Error     *junitFailure `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// JUnit writes one testsuite per bundle and one testcase per rule of the
// registry: failed when the rule has a finding at or above failOn. A
// bundle that could not be read gets one errored testcase, and no passing
// ones: nothing was checked.
func JUnit(w io.Writer, rep *result.Report, rules []validate.Rule, failOn result.Severity) error {
	out := junitSuites{Name: "statuscheck"}
	for _, b := range rep.Bundles {
		suite := junitSuite{Name: suiteName(b), File: bundleFile(b)}
		byRule := map[string][]result.Finding{}
		for _, f := range withVerdict(b) {
			byRule[f.Rule] = append(byRule[f.Rule], f)
		}
		for _, r := range rules {
			if len(b.Errors) > 0 && len(byRule[r.ID]) == 0 {
				// The bundle was not read (completely): a rule without a
				// finding did not pass, it was not checked.
				continue
			}
			tc := junitCase{Name: r.ID, ClassName: "statuscheck." + suite.Name, File: suite.File}
			if fs := byRule[r.ID]; len(fs) > 0 {
				tc.File, _ = splitObject(fs[0].File)
			}
			var failing, other []string
			for _, f := range byRule[r.ID] {
				line := fmt.Sprintf("%s: %s %s: %s", position(f), f.Severity, f.Rule, f.Message)
				if f.Severity >= failOn {
					failing = append(failing, line)
				} else {
					other = append(other, line)
				}
			}
			if len(failing) > 0 {
				summary, remediation := r.Summary, r.Remediation
				if r.ID == validate.RuleNotHeldOLMv0 {
					// The verdict's own reason and remedy: the rule's say one
					// of the reasons it can be "no".
					summary, remediation = byRule[r.ID][0].Message, byRule[r.ID][0].Remediation
				}
				tc.Failure = &junitFailure{Message: fmt.Sprintf("%d finding(s): %s", len(failing), summary), Type: r.ID,
					Text: strings.Join(failing, "\n") + "\nremediation: " + remediation}
				suite.Failures++
			}
			if len(other) > 0 {
				tc.SystemOut = strings.Join(other, "\n")
			}
			suite.TestCases = append(suite.TestCases, tc)
		}
		if len(b.Errors) > 0 {
			suite.TestCases = append(suite.TestCases, junitCase{Name: "read", ClassName: "statuscheck." + suite.Name, File: suite.File,
				Error: &junitFailure{Message: "the bundle could not be read completely", Type: "read", Text: strings.Join(b.Errors, "\n")}})
			suite.Errors++
		}
		suite.Tests = len(suite.TestCases)
		out.Tests += suite.Tests
		out.Failures += suite.Failures
		out.Errors += suite.Errors
		out.Suites = append(out.Suites, suite)
	}
	for _, e := range rep.Errors {
		// A path that could not be read: one errored testcase, nothing
		// checked.
		out.Suites = append(out.Suites, junitSuite{Name: e.Path, Tests: 1, Errors: 1, TestCases: []junitCase{{Name: "read", ClassName: "statuscheck." + e.Path,
			Error: &junitFailure{Message: "the path could not be read", Type: "read", Text: e.Error}}}})
		out.Tests++
		out.Errors++
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
