package simulate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/statuscheck/statuscheck/pkg/contract"
)

// TraceYAML renders steps as a native StatusTrace that `statuscheck
// simulate` replays to the same violations: the explorer's initial state,
// the status source and the generation rules it ran with, and one step per
// line.
func TraceYAML(name, comment string, cfg *Config, initial, oc map[string]interface{}, steps []Step) []byte {
	var b bytes.Buffer
	b.WriteString(TraceHeader{Name: name, Comment: comment, Source: cfg.Source, StatusSubresource: cfg.StatusSubresource,
		Initial: initial, OperatorCondition: oc}.YAML())
	for _, st := range steps {
		b.WriteString(StepLine(st))
	}
	return b.Bytes()
}

// TraceHeader is what a StatusTrace says before its steps.
type TraceHeader struct {
	Name, Comment     string
	Source            *contract.StatusSource
	StatusSubresource bool
	// Recorded marks a trace recorded from a cluster (statuscheck record).
	Recorded bool
	// Initial is the CR at the start (nil: not created yet);
	// OperatorCondition the one the gate reads, if given.
	Initial, OperatorCondition map[string]interface{}
}

// YAML renders the header, up to and including "steps:".
func (h TraceHeader) YAML() string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(h.Comment), "\n") {
		fmt.Fprintf(&b, "# %s\n", line)
	}
	fmt.Fprintf(&b, "apiVersion: %s\nkind: %s\n", TraceAPIVersion, TraceKind)
	fmt.Fprintf(&b, "metadata: {name: %s}\n", h.Name)
	fmt.Fprintf(&b, "statusSource: %s\n", h.Source.Marshal())
	fmt.Fprintf(&b, "statusSubresource: %v\n", h.StatusSubresource)
	if h.Recorded {
		b.WriteString("recorded: true\n")
	}
	fmt.Fprintf(&b, "initial: %s\n", compactJSON(h.Initial))
	if h.OperatorCondition != nil {
		fmt.Fprintf(&b, "operatorCondition: %s\n", compactJSON(h.OperatorCondition))
	}
	b.WriteString("steps:\n")
	return b.String()
}

func stepYAML(st Step) string {
	parts := []string{"actor: " + string(st.Actor)}
	if st.Target != TargetSource {
		parts = append(parts, "target: "+string(st.Target))
	}
	var val string
	switch st.Verb {
	case VerbCheck:
		val = "{}"
		if st.Expect != "" {
			val = "{expect: " + string(st.Expect) + "}"
		}
	case VerbUpgrade, VerbRequest, VerbDelete:
		val = "{}"
		if tok, ok := st.Value["token"]; ok && st.Verb == VerbRequest {
			val = "{token: " + compactJSON(tok) + "}"
		}
		if p, ok := st.Value["propagationPolicy"]; ok && st.Verb == VerbDelete {
			val = "{propagationPolicy: " + compactJSON(p) + "}"
		}
	default:
		if st.Value == nil {
			val = "null"
		} else {
			val = compactJSON(st.Value)
		}
	}
	parts = append(parts, string(st.Verb)+": "+val)
	if st.Recorded != nil {
		parts = append(parts, fmt.Sprintf("generation: %d", *st.Recorded))
	}
	if st.ResourceVersion != "" {
		parts = append(parts, "resourceVersion: "+compactJSON(st.ResourceVersion))
	}
	if st.Time != "" {
		parts = append(parts, "time: "+compactJSON(st.Time))
	}
	if st.Who != "" {
		parts = append(parts, "who: "+compactJSON(st.Who))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// StepLine renders a step as one line of a StatusTrace's steps list
// ("- {actor: ..., ...}\n"), with what was recorded of it.
func StepLine(st Step) string { return "- " + stepYAML(st) + "\n" }

// WriteCounterexamples writes each counterexample of res into dir as
// NN-RULE[-POLICY].yaml and returns the files written.
func WriteCounterexamples(dir string, cfg *Config, res *ExploreResult) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("writing counterexamples: %w", err)
	}
	var files []string
	for i, c := range res.Counterexamples {
		v := c.Violation
		name := fmt.Sprintf("%02d-%s", i+1, v.Rule)
		if v.Policy != "" {
			name += "-" + string(v.Policy)
		} else {
			name += "-" + string(res.Policy)
		}
		comment := fmt.Sprintf("Counterexample found by statuscheck simulate --explore (policy %s):\n%s at step %d: %s\nReplay: statuscheck simulate --policy %s %s.yaml",
			res.Policy, v.Rule, v.Step, v.Message, res.Policy, name)
		data := TraceYAML(name, comment, cfg, res.Initial, res.OperatorCondition, c.Steps)
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return files, fmt.Errorf("writing counterexamples: %w", err)
		}
		files = append(files, p)
	}
	return files, nil
}

// CounterexampleJSON is a counterexample for machine output.
type CounterexampleJSON struct {
	Violation Violation         `json:"violation"`
	Steps     []json.RawMessage `json:"steps"`
	File      string            `json:"file,omitempty"`
}

// StepJSON renders a step as the trace format writes it.
func StepJSON(st Step) json.RawMessage {
	m := map[string]interface{}{"actor": st.Actor}
	if st.Target != TargetSource {
		m["target"] = st.Target
	}
	switch st.Verb {
	case VerbCheck, VerbUpgrade:
		m[string(st.Verb)] = map[string]interface{}{}
	case VerbRequest, VerbDelete:
		if st.Value == nil {
			m[string(st.Verb)] = map[string]interface{}{}
		} else {
			m[string(st.Verb)] = st.Value
		}
	default:
		m[string(st.Verb)] = st.Value
	}
	data, _ := json.Marshal(m)
	return data
}
