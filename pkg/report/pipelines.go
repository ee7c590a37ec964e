package report

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	scorecard "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	apierrors "github.com/operator-framework/api/pkg/validation/errors"

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
	for _, f := range b.Findings {
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
		for _, f := range b.Findings {
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
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(st)
}

func nameOf(b result.Bundle) string {
	if b.Name != "" {
		return b.Name
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

// SARIF 2.1.0, as GitHub code scanning accepts it.
type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool        sarifTool         `json:"tool"`
	Invocations []sarifInvocation `json:"invocations"`
	Results     []sarifResult     `json:"results"`
}

// sarifInvocation says whether the run did its job: a bundle that could
// not be read is not a clean result (SARIF 2.1.0 section 3.20.14).
type sarifInvocation struct {
	ExecutionSuccessful        bool                `json:"executionSuccessful"`
	ToolExecutionNotifications []sarifNotification `json:"toolExecutionNotifications,omitempty"`
}

type sarifNotification struct {
	Level   string    `json:"level"`
	Message sarifText `json:"message"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	InformationURI string      `json:"informationUri"`
	Version        string      `json:"version,omitempty"`
	Rules          []sarifRule `json:"rules"`
}

type sarifText struct {
	Text string `json:"text"`
}

type sarifRule struct {
	ID                   string         `json:"id"`
	Name                 string         `json:"name"`
	ShortDescription     sarifText      `json:"shortDescription"`
	FullDescription      sarifText      `json:"fullDescription"`
	Help                 sarifText      `json:"help"`
	HelpURI              string         `json:"helpUri,omitempty"`
	DefaultConfiguration sarifRuleLevel `json:"defaultConfiguration"`
}

type sarifRuleLevel struct {
	Level string `json:"level"`
}

type sarifResult struct {
	RuleID    string          `json:"ruleId"`
	RuleIndex int             `json:"ruleIndex"`
	Level     string          `json:"level"`
	Message   sarifText       `json:"message"`
	Locations []sarifLocation `json:"locations"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI       string `json:"uri"`
	URIBaseID string `json:"uriBaseId,omitempty"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn,omitempty"`
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

// SARIF writes a SARIF 2.1.0 log: the registry's rules, and each finding
// with a URI relative to root (the repository) and a region.
func SARIF(w io.Writer, rep *result.Report, rules []validate.Rule, root, version string) error {
	driver := sarifDriver{Name: "statuscheck", InformationURI: "https://github.com/statuscheck/statuscheck", Version: version}
	index := map[string]int{}
	for i, r := range rules {
		index[r.ID] = i
		driver.Rules = append(driver.Rules, sarifRule{
			ID: r.ID, Name: ruleName(r.ID),
			ShortDescription:     sarifText{Text: r.Summary},
			FullDescription:      sarifText{Text: r.Summary},
			Help:                 sarifText{Text: r.Remediation},
			HelpURI:              "https://github.com/statuscheck/statuscheck/blob/main/docs/rules.md#" + r.ID,
			DefaultConfiguration: sarifRuleLevel{Level: sarifLevel(r.Severity)},
		})
	}
	run := sarifRun{Tool: sarifTool{Driver: driver}, Results: []sarifResult{}}
	inv := sarifInvocation{ExecutionSuccessful: !rep.Failed()}
	for _, b := range rep.Bundles {
		for _, e := range b.Errors {
			inv.ToolExecutionNotifications = append(inv.ToolExecutionNotifications, sarifNotification{Level: "error", Message: sarifText{Text: e}})
		}
	}
	run.Invocations = []sarifInvocation{inv}
	for _, b := range rep.Bundles {
		for _, f := range b.Findings {
			file, object := splitObject(f.File)
			msg := f.Message
			if object != "" {
				msg = object + ": " + msg
			}
			loc := sarifLocation{PhysicalLocation: sarifPhysical{ArtifactLocation: artifact(root, file)}}
			if f.Line > 0 && object == "" {
				loc.PhysicalLocation.Region = &sarifRegion{StartLine: f.Line, StartColumn: f.Column}
			}
			run.Results = append(run.Results, sarifResult{RuleID: f.Rule, RuleIndex: index[f.Rule], Level: sarifLevel(f.Severity),
				Message: sarifText{Text: msg}, Locations: []sarifLocation{loc}})
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(sarifLog{Schema: sarifSchema, Version: "2.1.0", Runs: []sarifRun{run}})
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
func artifact(root, file string) sarifArtifact {
	abs, err := filepath.Abs(file)
	if err != nil {
		return sarifArtifact{URI: (&url.URL{Path: filepath.ToSlash(file)}).String()}
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return sarifArtifact{URI: (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()}
	}
	return sarifArtifact{URI: (&url.URL{Path: filepath.ToSlash(rel)}).String(), URIBaseID: "%SRCROOT%"}
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
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	TestCases []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
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
		suite := junitSuite{Name: nameOf(b)}
		byRule := map[string][]result.Finding{}
		for _, f := range b.Findings {
			byRule[f.Rule] = append(byRule[f.Rule], f)
		}
		for _, r := range rules {
			if len(b.Errors) > 0 && len(byRule[r.ID]) == 0 {
				// The bundle was not read (completely): a rule without a
				// finding did not pass, it was not checked.
				continue
			}
			tc := junitCase{Name: r.ID, ClassName: "statuscheck." + nameOf(b)}
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
				tc.Failure = &junitFailure{Message: fmt.Sprintf("%d finding(s): %s", len(failing), r.Summary), Type: r.ID,
					Text: strings.Join(failing, "\n") + "\nremediation: " + r.Remediation}
				suite.Failures++
			}
			if len(other) > 0 {
				tc.SystemOut = strings.Join(other, "\n")
			}
			suite.TestCases = append(suite.TestCases, tc)
		}
		if len(b.Errors) > 0 {
			suite.TestCases = append(suite.TestCases, junitCase{Name: "read", ClassName: "statuscheck." + nameOf(b),
				Error: &junitFailure{Message: "the bundle could not be read completely", Type: "read", Text: strings.Join(b.Errors, "\n")}})
			suite.Errors++
		}
		suite.Tests = len(suite.TestCases)
		out.Tests += suite.Tests
		out.Failures += suite.Failures
		out.Errors += suite.Errors
		out.Suites = append(out.Suites, suite)
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
