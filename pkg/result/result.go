// Package result is the model every statuscheck command reports into:
// findings with a rule, a severity and a position, grouped per bundle, and
// the exit code they imply. Formatting lives elsewhere (package report);
// nothing here knows how a finding is printed.
package result

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Severity orders findings: Info < Warning < Error.
type Severity int

const (
	// Info is worth knowing.
	Info Severity = iota
	// Warning should be fixed.
	Warning
	// Error must be fixed: the status source cannot work.
	Error
)

// Severities lists them from the most to the least severe.
func Severities() []Severity { return []Severity{Error, Warning, Info} }

func (s Severity) String() string {
	switch s {
	case Error:
		return "error"
	case Warning:
		return "warning"
	case Info:
		return "info"
	}
	return fmt.Sprintf("severity(%d)", int(s))
}

// ParseSeverity reads "error", "warning" or "info".
func ParseSeverity(s string) (Severity, error) {
	for _, v := range Severities() {
		if v.String() == s {
			return v, nil
		}
	}
	return 0, fmt.Errorf("unknown severity %q (want error, warning or info)", s)
}

// MarshalJSON writes the name.
func (s Severity) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalJSON reads the name.
func (s *Severity) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err != nil {
		return err
	}
	v, err := ParseSeverity(name)
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Finding is one problem at one place.
type Finding struct {
	Rule        string   `json:"rule"`
	Severity    Severity `json:"severity"`
	File        string   `json:"file"`
	Line        int      `json:"line"`
	Column      int      `json:"column"`
	Field       string   `json:"field,omitempty"`
	Message     string   `json:"message"`
	Remediation string   `json:"remediation,omitempty"`
}

// Bundle is the result for one bundle.
type Bundle struct {
	// Path is the bundle as the user named it.
	Path string `json:"path"`
	// Name is the CSV's name where there is one.
	Name string `json:"name,omitempty"`
	// File is the file that stands for the bundle where a format needs
	// one for a finding about a directory (SARIF): its CSV, else its
	// metadata/annotations.yaml; "" when it has neither.
	File string `json:"-"`
	// Findings are sorted by file, line, column and rule.
	Findings []Finding `json:"findings"`
	// Errors say what could not be read or checked; any makes the exit code 2.
	Errors []string `json:"errors,omitempty"`
	// Protection says, for each lifecycle manager the bundle can meet,
	// whether its upgrade is held while the status source says wait;
	// empty when the CSV declares no valid status source.
	Protection []Protection `json:"protection,omitempty"`
}

// Lifecycle managers a bundle can meet (Protection.Manager).
const (
	// ManagerOLMv0 is OLM v0 (operator-lifecycle-manager), which gates a
	// CSV's replacement on its OperatorCondition.
	ManagerOLMv0 = "olm-v0"
	// ManagerOLMv1 is OLM v1 (operator-controller), which has no upgrade
	// gate.
	ManagerOLMv1 = "olm-v1"
	// ManagerNone is the operator applied without OLM.
	ManagerNone = "none"
)

// What holds an upgrade on OLM v0 (Protection.By).
const (
	// HeldByBridge: statuscheck bridge writes the OperatorCondition from
	// the CR.
	HeldByBridge = "bridge"
	// HeldByOperatorCondition: the operator writes its OperatorCondition
	// itself (the OperatorCondition handshake).
	HeldByOperatorCondition = "operatorcondition"
)

// Protection is the verdict for one lifecycle manager: is the upgrade held
// while the operator says wait?
type Protection struct {
	Manager string `json:"manager"`
	Held    bool   `json:"held"`
	// By is what holds it (HeldByBridge, HeldByOperatorCondition), when
	// something does.
	By string `json:"by,omitempty"`
	// Reason says why, in a sentence.
	Reason string `json:"reason"`
	// Remedy says what the user can do when it is not held.
	Remedy string `json:"remedy,omitempty"`
}

// Sort orders the findings deterministically.
func (b *Bundle) Sort() {
	sort.SliceStable(b.Findings, func(i, j int) bool {
		x, y := b.Findings[i], b.Findings[j]
		switch {
		case x.File != y.File:
			return x.File < y.File
		case x.Line != y.Line:
			return x.Line < y.Line
		case x.Column != y.Column:
			return x.Column < y.Column
		case x.Rule != y.Rule:
			return x.Rule < y.Rule
		}
		return x.Message < y.Message
	})
}

// Report is the result of one run over one or more bundles, in the order
// the bundles were named.
type Report struct {
	Bundles []Bundle `json:"bundles"`
	// Errors are the paths that could not be read as a bundle at all (a
	// path that does not exist, an empty directory): nothing of them was
	// checked, so they are not among Bundles. Any makes the exit code 2.
	Errors []PathError `json:"errors,omitempty"`
}

// PathError is a path that could not be read as a bundle, and why.
type PathError struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

// Counts tallies findings per severity.
type Counts struct {
	Error   int `json:"error"`
	Warning int `json:"warning"`
	Info    int `json:"info"`
}

// Counts tallies the findings of every bundle.
func (r *Report) Counts() Counts {
	var c Counts
	for _, b := range r.Bundles {
		for _, f := range b.Findings {
			switch f.Severity {
			case Error:
				c.Error++
			case Warning:
				c.Warning++
			default:
				c.Info++
			}
		}
	}
	return c
}

// Failed reports whether any bundle or path could not be checked.
func (r *Report) Failed() bool {
	if len(r.Errors) > 0 {
		return true
	}
	for _, b := range r.Bundles {
		if len(b.Errors) > 0 {
			return true
		}
	}
	return false
}

// Exit codes shared by every command (docs/contract.md section 7).
const (
	ExitOK       = 0
	ExitFindings = 1
	ExitFailure  = 2
)

// ExitCode is 2 when something could not be checked, 1 when a finding is
// at or above failOn or a bundle's upgrade is not held on OLM v0 (which
// counts as an error, whatever findings say it: a warning that puts the
// gate in doubt makes the verdict "no"), and 0 otherwise.
func (r *Report) ExitCode(failOn Severity) int {
	if r.Failed() {
		return ExitFailure
	}
	for _, b := range r.Bundles {
		if failOn <= Error && !b.HeldOnOLMv0() {
			return ExitFindings
		}
		for _, f := range b.Findings {
			if f.Severity >= failOn {
				return ExitFindings
			}
		}
	}
	return ExitOK
}

// HeldOnOLMv0 reports whether the bundle's verdict for OLM v0 is held, or
// there is no verdict (the CSV declares no valid status source, which its
// findings say).
func (b *Bundle) HeldOnOLMv0() bool {
	v, ok := b.OLMv0()
	return !ok || v.Held
}

// OLMv0 is the bundle's verdict for OLM v0, when it has one. A "no" fails
// the job whatever the severities of the findings behind it (ExitCode), so
// every format that a pipeline reads instead of the exit code says it too.
func (b *Bundle) OLMv0() (Protection, bool) {
	for _, p := range b.Protection {
		if p.Manager == ManagerOLMv0 {
			return p, true
		}
	}
	return Protection{}, false
}
