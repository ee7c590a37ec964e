package explore

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/statuscheck/statuscheck/pkg/simulate"
	"github.com/statuscheck/statuscheck/pkg/trace"
)

// Trace renders a counterexample as a native StatusTrace that `statuscheck
// simulate` replays to the same violation: the search's initial state, the
// status source and the generation rules it ran with, one step per line.
func Trace(name, comment string, cfg *Config, res *Result, steps []Step) []byte {
	return trace.Write(trace.Header{Name: name, Comment: comment, Source: cfg.Source, StatusSubresource: cfg.StatusSubresource,
		Bridge: cfg.Bridge, Initial: res.Initial, OperatorCondition: res.OperatorCondition}, steps)
}

// WriteCounterexamples writes each counterexample of res into dir as
// NN-RULE[-POLICY].yaml and returns the files written.
func WriteCounterexamples(dir string, cfg *Config, res *Result) ([]string, error) {
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
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, Trace(name, comment, cfg, res, c.Steps), 0o644); err != nil {
			return files, fmt.Errorf("writing counterexamples: %w", err)
		}
		files = append(files, p)
	}
	return files, nil
}

// CounterexampleJSON is a counterexample for machine output.
type CounterexampleJSON struct {
	Violation simulate.Violation `json:"violation"`
	Steps     []json.RawMessage  `json:"steps"`
	File      string             `json:"file,omitempty"`
}
