// Package report writes validation results and the rule registry in the
// formats statuscheck offers. Each format has its own writer; none of them
// decides anything (exit codes come from package result).
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/statuscheck/statuscheck/pkg/result"
	"github.com/statuscheck/statuscheck/pkg/simulate"
	"github.com/statuscheck/statuscheck/pkg/validate"
)

// Text writes one "file:line:col: severity rule: message" line per finding
// and a summary line.
func Text(w io.Writer, rep *result.Report) error {
	for _, b := range rep.Bundles {
		if err := Lines(w, b.Findings); err != nil {
			return err
		}
		if err := Protection(w, b); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "%s\n", summary(rep))
	return err
}

// Lines writes findings one per line, without a summary.
func Lines(w io.Writer, findings []result.Finding) error {
	ew := &errWriter{w: w}
	for _, f := range findings {
		ew.printf("%s: %s %s: %s\n", position(f), f.Severity, f.Rule, f.Message)
	}
	return ew.err
}

// managerNames are the lifecycle managers as the text output names them.
var managerNames = map[string]string{result.ManagerOLMv0: "OLM v0", result.ManagerOLMv1: "OLM v1", result.ManagerNone: "without OLM"}

// Protection writes a bundle's verdict, one line per lifecycle manager,
// after a heading naming the bundle; nothing when it has none.
func Protection(w io.Writer, b result.Bundle) error {
	if len(b.Protection) == 0 {
		return nil
	}
	ew := &errWriter{w: w}
	name := b.Path
	if b.Name != "" {
		name = b.Name + " (" + b.Path + ")"
	}
	ew.printf("%s: is the upgrade held while the status source says wait?\n", name)
	for _, p := range b.Protection {
		verdict := "no"
		if p.Held {
			verdict = "yes"
		}
		ew.printf("  %s: %s: %s", managerNames[p.Manager], verdict, p.Reason)
		if p.Remedy != "" {
			ew.printf("; to hold it: %s", p.Remedy)
		}
		ew.printf("\n")
	}
	return ew.err
}

func position(f result.Finding) string {
	switch {
	case f.Line == 0:
		return f.File
	case f.Column == 0:
		return fmt.Sprintf("%s:%d", f.File, f.Line)
	}
	return fmt.Sprintf("%s:%d:%d", f.File, f.Line, f.Column)
}

// Plural writes a count with the word that agrees with it ("1 step",
// "2 steps").
func Plural(n int, one, many string) string { return plural(n, one, many) }

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

func summary(rep *result.Report) string {
	c := rep.Counts()
	s := fmt.Sprintf("%s checked: %s, %s, %d info", plural(len(rep.Bundles), "bundle", "bundles"),
		plural(c.Error, "error", "errors"), plural(c.Warning, "warning", "warnings"), c.Info)
	failed := 0
	for _, b := range rep.Bundles {
		if len(b.Errors) > 0 {
			failed++
		}
	}
	if failed > 0 {
		s += fmt.Sprintf("; %s could not be read completely", plural(failed, "bundle", "bundles"))
	}
	if len(rep.Errors) > 0 {
		paths := make([]string, len(rep.Errors))
		for i, e := range rep.Errors {
			paths[i] = e.Path
		}
		s += fmt.Sprintf("; %s could not be read: %s", plural(len(rep.Errors), "path", "paths"), strings.Join(paths, ", "))
	}
	return s
}

type jsonSummary struct {
	Bundles int `json:"bundles"`
	result.Counts
}

type jsonReport struct {
	Bundles []result.Bundle `json:"bundles"`
	// Errors name the paths that could not be read as a bundle at all.
	Errors  []result.PathError `json:"errors,omitempty"`
	Summary jsonSummary        `json:"summary"`
}

// JSON writes the findings grouped per bundle, the paths that could not be
// read, and a summary.
func JSON(w io.Writer, rep *result.Report) error {
	out := jsonReport{Bundles: rep.Bundles, Errors: rep.Errors, Summary: jsonSummary{Bundles: len(rep.Bundles), Counts: rep.Counts()}}
	if out.Bundles == nil {
		out.Bundles = []result.Bundle{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

// RuleInfo is a rule of validate, or a violation of simulate, as the
// rules listing shows it.
type RuleInfo struct {
	ID string `json:"id"`
	// Command is the command that reports it: validate or simulate.
	Command     string          `json:"command"`
	Severity    result.Severity `json:"severity"`
	Summary     string          `json:"summary"`
	Remediation string          `json:"remediation"`
	// PerPolicy marks a simulate violation judged for each gate policy.
	PerPolicy bool `json:"perPolicy,omitempty"`
}

// infos lists validate's rules, then simulate's violations: the same
// entries docs/rules.md has.
func infos(rules []validate.Rule) []RuleInfo {
	out := make([]RuleInfo, 0, len(rules))
	for _, r := range rules {
		out = append(out, RuleInfo{ID: r.ID, Command: "validate", Severity: r.Severity, Summary: r.Summary, Remediation: r.Remediation})
	}
	for _, k := range simulate.Kinds() {
		out = append(out, RuleInfo{ID: k.ID, Command: "simulate", Severity: k.Severity, Summary: k.Summary, Remediation: k.Remediation, PerPolicy: k.PerPolicy})
	}
	return out
}

// RulesText lists validate's rules and simulate's violations, one per line.
func RulesText(w io.Writer, rules []validate.Rule) error {
	ew := &errWriter{w: w}
	all := infos(rules)
	width := 0
	for _, r := range all {
		width = max(width, len(r.ID))
	}
	cmd := ""
	for _, r := range all {
		if r.Command != cmd {
			if cmd != "" {
				ew.printf("\n")
			}
			cmd = r.Command
			ew.printf("statuscheck %s:\n", map[string]string{"validate": "validate rules", "simulate": "simulate violations"}[cmd])
		}
		ew.printf("  %-*s  %-7s  %s\n", width, r.ID, r.Severity, r.Summary)
	}
	return ew.err
}

// RulesJSON lists the rules as a JSON array.
func RulesJSON(w io.Writer, rules []validate.Rule) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(infos(rules))
}

// RulesMarkdown writes docs/rules.md.
func RulesMarkdown(w io.Writer, rules []validate.Rule) error {
	ew := &errWriter{w: w}
	ew.printf("# statuscheck validate: rules\n\n")
	ew.printf("<!-- Generated by `statuscheck rules -o markdown` from the registry in pkg/validate/rules.go. Do not edit; run `make docs`. -->\n\n")
	ew.printf("Every finding names one of these rules. IDs are stable. `--fail-on` (default `error`) sets the lowest severity that makes the exit code 1; `--require-status-source` turns `status-source-missing` into an error.\n\n")
	ew.printf("Severities: **error** means the upgrade is not held while the operator says wait, or the status source cannot work (a gate that can never open is an error too: it stops every upgrade); **warning** means it works with a gap worth closing, or statuscheck cannot verify it; **info** is worth knowing. The verdict's rules (upgrade-not-held-olm-v0 and the violations the bounded protocol search finds, which link to their entries under simulate's violations below) judge the bundle's configuration as a whole; see docs/contract.md section 7.\n\n")
	ew.printf("| rule | severity | fires when |\n|---|---|---|\n")
	for _, r := range rules {
		ew.printf("| [`%s`](#%s) | %s | %s |\n", r.ID, r.ID, r.Severity, mdCell(r.Summary))
	}
	for _, r := range rules {
		if validate.ProtocolRule(r.ID) {
			continue // its section is the violation's, below: one home
		}
		ew.printf("\n## %s\n\n", r.ID)
		ew.printf("Severity: **%s**\n\n", r.Severity)
		ew.printf("%s\n\n", r.Summary)
		ew.printf("Remediation: %s\n", r.Remediation)
	}
	ew.printf("\n# statuscheck simulate: violations\n\n")
	ew.printf("`simulate` reports these on the step where they happen. Those marked per policy are judged for each gate policy (`--policy olm|strict|naive|all`).\n\n")
	ew.printf("| violation | severity | per policy | meaning |\n|---|---|---|---|\n")
	for _, k := range simulate.Kinds() {
		ew.printf("| `%s` | %s | %s | %s |\n", k.ID, k.Severity, map[bool]string{true: "yes", false: "no"}[k.PerPolicy], mdCell(k.Summary))
	}
	for _, k := range simulate.Kinds() {
		ew.printf("\n## %s\n\n%s\n\nRemediation: %s\n", k.ID, k.Summary, k.Remediation)
	}
	return ew.err
}

func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...interface{}) {
	if e.err != nil {
		return
	}
	_, e.err = fmt.Fprintf(e.w, format, args...)
}
