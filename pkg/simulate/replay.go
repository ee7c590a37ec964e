package simulate

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/statuscheck/statuscheck/pkg/apiserver"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/crd"
	"github.com/statuscheck/statuscheck/pkg/manifest"
	"github.com/statuscheck/statuscheck/pkg/result"
)

// Row is one step of a replay, for the timeline.
type Row struct {
	Step    Step
	Outcome Outcome
	// Exists, Generation and Condition describe the CR after the step.
	Exists     bool
	Generation int64
	Condition  string
	Token      int64
}

// MaxViolations bounds the violations a Summary keeps; the rest are
// counted only, so memory does not grow with a trace's length.
const MaxViolations = 10_000

// Summary is the result of a run.
type Summary struct {
	File   string `json:"file"`
	Name   string `json:"name,omitempty"`
	Format Format `json:"format"`
	// Source is the status source, as its annotation value.
	Source            string            `json:"source"`
	StatusSubresource bool              `json:"statusSubresource"`
	Policies          []contract.Policy `json:"policies"`
	Steps             int               `json:"steps"`
	Violations        []Violation       `json:"violations"`
	// Dropped counts violations beyond MaxViolations.
	Dropped int `json:"dropped,omitempty"`
	// Counts tallies violations per rule.
	Counts map[string]int `json:"counts"`
	// Final is the gate's verdict per policy after the last step.
	Final []contract.Decision `json:"final"`
	// Notes say what was assumed.
	Notes []string `json:"notes,omitempty"`
	// Skipped lists the other objects a recording held, which were left
	// out, with how often each was seen.
	Skipped string `json:"skipped,omitempty"`
	// Late are notes that came up while the trace was read.
	Late []string `json:"lateNotes,omitempty"`
}

func (s *Summary) add(vs ...Violation) {
	for _, v := range vs {
		s.Counts[v.Rule]++
		if len(s.Violations) < MaxViolations {
			s.Violations = append(s.Violations, v)
		} else {
			s.Dropped++
		}
	}
}

// ExitCode is 1 when a violation is at or above failOn, else 0.
func (s *Summary) ExitCode(failOn result.Severity) int {
	for id, n := range s.Counts {
		if n > 0 && kindOf(id).Severity >= failOn {
			return result.ExitFindings
		}
	}
	return result.ExitOK
}

// NewSummary starts the summary of a run: what is known before the first
// step.
func NewSummary(t *Trace, cfg *Config) *Summary {
	return &Summary{File: t.File, Name: t.Name, Format: t.Format, Source: cfg.Source.Marshal(),
		StatusSubresource: cfg.StatusSubresource, Policies: cfg.Policies, Counts: map[string]int{}, Violations: []Violation{}}
}

// Replay runs a trace through the core. emit, when set, is called after
// every step; rows are not kept, so a long trace replays in constant
// memory.
func Replay(t *Trace, cfg *Config, emit func(Row) error) (*Summary, error) {
	sum := NewSummary(t, cfg)
	notesBefore := len(t.Notes)
	s, err := Initial(cfg, t.Initial, t.OperatorCondition)
	if err != nil {
		return sum, &TraceError{File: t.File, Msg: err.Error()}
	}
	for {
		st, err := t.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return sum, err
		}
		var out Outcome
		s, out, err = Next(cfg, s, st)
		if err != nil {
			return sum, err
		}
		sum.add(out.Violations...)
		if emit != nil {
			if err := emit(RowOf(s, st, out)); err != nil {
				return sum, err
			}
		}
	}
	sum.Steps = s.Steps
	// What the reader noticed on the way (a cut-off last step).
	sum.Late = append(sum.Late, t.Notes[notesBefore:]...)
	if t.differ != nil && len(t.differ.others) > 0 {
		sum.Skipped = t.differ.otherObjects()
	}
	if s.Steps == 0 && !t.Stopped() {
		return sum, t.noSteps()
	}
	sum.add(Finish(cfg, s)...)
	for _, p := range cfg.Policies {
		sum.Final = append(sum.Final, gate(cfg, &s, p))
	}
	return sum, nil
}

// noSteps is the error for an input that held no step: nothing to judge
// is never a clean result.
func (t *Trace) noSteps() error {
	if t.differ != nil {
		return t.differ.noSteps()
	}
	return &TraceError{File: t.File, Msg: "the StatusTrace has no steps: nothing to replay"}
}

// RowOf describes the state after a step.
func RowOf(s State, st Step, out Outcome) Row {
	r := Row{Step: st, Outcome: out, Exists: s.CR.Exists, Generation: s.CR.Generation, Token: s.Token}
	if !s.CR.Exists {
		r.Condition = "(no CR)"
		return r
	}
	c := contract.Find(s.CR.Conditions, contract.ConditionUpgradeable)
	if c == nil {
		r.Condition = "-"
		return r
	}
	og := c.ObservedGeneration
	if og == nil {
		og = s.CR.StatusOG
	}
	r.Condition = fmt.Sprintf("%s og=%s", c.Status, fmtOG(og))
	return r
}

// Context is what a run is judged against: the status source and whether
// its CRD has the status subresource.
type Context struct {
	Source            *contract.StatusSource
	StatusSubresource *bool
	Plural            string
	// Namespaced is the CRD's scope.
	Namespaced bool
	// Resource serves the CRD version: writes are pruned, defaulted and
	// validated as the apiserver does. nil when no CRD was given.
	Resource *apiserver.Resource
	// Example is the CR the console creates for the kind (the CSV's
	// initialization resource, else its alm-examples entry), when the
	// bundle has one.
	Example map[string]interface{}
	// From says where the context came from.
	From string
}

// ContextFromBundle takes the status source from a bundle's CSV and the
// generation rules from its CRD.
func ContextFromBundle(dir string) (*Context, error) {
	b, err := bundle.Load(dir, bundle.Options{})
	if err != nil {
		return nil, err
	}
	if err := errors.Join(b.Errors...); err != nil {
		return nil, err
	}
	csv := b.CSV()
	switch {
	case csv == nil:
		return nil, fmt.Errorf("%s: no ClusterServiceVersion", dir)
	case len(b.CSVs) > 1:
		return nil, fmt.Errorf("%s holds %d ClusterServiceVersions (%s and %s); which status source is meant?", dir, len(b.CSVs), b.CSVs[0].Doc.File, b.CSVs[1].Doc.File)
	}
	raw, ok := csv.Obj.Annotations[contract.AnnotationKey]
	if !ok {
		return nil, fmt.Errorf("%s: the CSV %s declares no status source (run statuscheck generate)", csv.Doc.File, csv.Obj.Name)
	}
	src, problems := contract.Parse(raw)
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s: the status-source annotation is invalid: %s (run statuscheck validate)", csv.Doc.File, problems[0])
	}
	gv := src.GroupVersion()
	c := b.FindCRD(gv.Group, src.Kind)
	if c == nil {
		return nil, fmt.Errorf("%s: no CRD in the bundle defines %s in group %s", dir, src.Kind, gv.Group)
	}
	ctx, err := contextFor(src, c, "bundle "+dir)
	if err != nil {
		return nil, err
	}
	ctx.Example = exampleFor(csv.Obj.Annotations, src)
	return ctx, nil
}

// exampleFor finds the CR of the status source's kind that the console
// would create: the initialization resource, else the alm-examples entry
// of that group and kind (of the source's name, if several).
func exampleFor(annotations map[string]string, src *contract.StatusSource) map[string]interface{} {
	gv := src.GroupVersion()
	fits := func(o map[string]interface{}) bool {
		id := identityOf(o)
		return id.Kind == src.Kind && groupOf(id.APIVersion) == gv.Group
	}
	if raw, ok := annotations[contract.InitializationResourceKey]; ok {
		var o map[string]interface{}
		if yaml.Unmarshal([]byte(raw), &o) == nil && fits(o) {
			return o
		}
	}
	var list []map[string]interface{}
	if yaml.Unmarshal([]byte(annotations["alm-examples"]), &list) != nil {
		return nil
	}
	var found map[string]interface{}
	for _, o := range list {
		if !fits(o) {
			continue
		}
		if found == nil || identityOf(o).Name == src.Name {
			found = o
		}
	}
	return found
}

func contextFor(src *contract.StatusSource, c *crd.CRD, from string) (*Context, error) {
	v := c.Version(src.GroupVersion().Version)
	if v == nil {
		return nil, fmt.Errorf("CRD %s has no version %s", c.Name(), src.GroupVersion().Version)
	}
	sub := v.StatusSubresource
	res, err := apiserver.NewResource(c.V1, v.Name)
	if err != nil {
		return nil, fmt.Errorf("%s: the apiserver could not serve CRD %s: %w", c.Doc.File, c.Name(), err)
	}
	return &Context{Source: src, StatusSubresource: &sub, Plural: c.Plural(), Namespaced: c.Namespaced(), From: from, Resource: res}, nil
}

// contradicts checks a native trace against the status source the command
// line names: a trace about another object is not this run's trace.
func (t *Trace) contradicts(c *Context) error {
	want := c.Source
	check := func(what string, apiVersion, kind, name, ns string) error {
		if kind == "" {
			return nil
		}
		if kind != want.Kind || groupOf(apiVersion) != want.GroupVersion().Group || (name != "" && name != want.Name) ||
			(ns != "" && want.Namespace != "" && ns != want.Namespace) {
			return &TraceError{File: t.File, Msg: fmt.Sprintf("%s is %s %s/%s, but %s names %s %s/%s", what,
				kind, orCoreGroup(groupOf(apiVersion)), name, c.From, want.Kind, orCoreGroup(want.GroupVersion().Group), want.Name)}
		}
		return nil
	}
	if d := t.declared; d != nil {
		if err := check("the trace's statusSource", d.APIVersion, d.Kind, d.Name, d.Namespace); err != nil {
			return err
		}
	}
	if t.Format == FormatTrace && t.Initial != nil {
		id := identityOf(t.Initial)
		return check("the trace's initial object", id.APIVersion, id.Kind, id.Name, id.Namespace)
	}
	return nil
}

func orCoreGroup(g string) string {
	if g == "" {
		return "core"
	}
	return g
}

// ParseSourceRef reads API_VERSION/KIND/NAME or API_VERSION/KIND/NAMESPACE/NAME.
func ParseSourceRef(ref string) (*contract.StatusSource, error) {
	parts := strings.Split(ref, "/")
	src := &contract.StatusSource{}
	switch len(parts) {
	case 4:
		src.APIVersion, src.Kind, src.Name = parts[0]+"/"+parts[1], parts[2], parts[3]
	case 5:
		src.APIVersion, src.Kind, src.Namespace, src.Name = parts[0]+"/"+parts[1], parts[2], parts[3], parts[4]
	default:
		return nil, fmt.Errorf("--source %q is not GROUP/VERSION/KIND/NAME (or GROUP/VERSION/KIND/NAMESPACE/NAME)", ref)
	}
	if problems := contract.Check(src); len(problems) > 0 {
		return nil, fmt.Errorf("--source %q: %s", ref, problems[0])
	}
	return src, nil
}

// ContextFromCRD serves operators deployed without OLM: the CRD file (or
// a directory of CRD files, as config/crd/bases) and the object's
// reference.
func ContextFromCRD(file, ref string) (*Context, error) {
	src, err := ParseSourceRef(ref)
	if err != nil {
		return nil, err
	}
	files := []string{file}
	if st, err := os.Stat(file); err == nil && st.IsDir() {
		entries, err := os.ReadDir(file)
		if err != nil {
			return nil, fmt.Errorf("reading --crd %s: %w", file, err)
		}
		files = nil
		for _, e := range entries {
			switch filepath.Ext(e.Name()) {
			case ".yaml", ".yml", ".json":
				if e.Type().IsRegular() {
					files = append(files, filepath.Join(file, e.Name()))
				}
			}
		}
	}
	gv := src.GroupVersion()
	var kinds, others []string
	for _, f := range files {
		data, err := bundle.OS{}.ReadFile(f, manifest.DefaultLimits.MaxFileSize)
		if err != nil {
			return nil, fmt.Errorf("reading --crd %s: %w", f, err)
		}
		docs, err := manifest.Parse(f, data, manifest.DefaultLimits)
		if err != nil {
			return nil, err
		}
		crds, err := crd.DecodeAll(docs)
		if err != nil {
			return nil, err
		}
		for _, c := range crds {
			if c.Group() == gv.Group && c.Kind() == src.Kind {
				return contextFor(src, c, "--crd "+filepath.Base(f))
			}
			kinds = append(kinds, c.Kind()+"."+c.Group())
		}
		for _, d := range docs {
			if k, _ := d.Object()["kind"].(string); k != crd.Kind && k != "" {
				others = append(others, k)
			}
		}
	}
	if len(kinds) == 0 {
		what := "no CustomResourceDefinition"
		if len(others) > 0 {
			what += " (it holds " + strings.Join(dedupe(others), ", ") + ")"
		}
		return nil, fmt.Errorf("--crd %s holds %s; give the CRD of %s", file, what, src.Kind)
	}
	return nil, fmt.Errorf("--crd %s defines no %s in group %s (it has %s)", file, src.Kind, gv.Group, strings.Join(kinds, ", "))
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// Config builds a run's configuration: the command line's context first,
// then the trace's own, then what the trace's object shows, with the
// status subresource assumed on (and said so).
func (c *Context) Config(t *Trace, policies []contract.Policy, primary contract.Policy) (*Config, []string, error) {
	cfg := &Config{Policies: policies, Primary: primary, Continuous: t.Recorded}
	notes := append([]string(nil), t.Notes...)
	if c != nil && c.Source != nil {
		if err := t.contradicts(c); err != nil {
			return nil, nil, err
		}
	}
	switch {
	case c != nil && c.Source != nil:
		cfg.Source = c.Source
	case t.Source != nil:
		cfg.Source = t.Source
	case t.Initial != nil:
		id := identityOf(t.Initial)
		cfg.Source = &contract.StatusSource{APIVersion: id.APIVersion, Kind: id.Kind, Name: id.Name}
		notes = append(notes, fmt.Sprintf("no status source given: reading %s %s with the default contract (Upgradeable, no handshake); use --bundle or --crd with --source", id.Kind, id.Name))
	default:
		return nil, nil, &TraceError{File: t.File, Msg: "no status source: give --bundle, or --crd with --source"}
	}
	if c != nil {
		cfg.CR = c.Resource
	}
	switch {
	case c != nil && c.StatusSubresource != nil:
		cfg.StatusSubresource = *c.StatusSubresource
	case t.StatusSubresource != nil:
		cfg.StatusSubresource = *t.StatusSubresource
	default:
		cfg.StatusSubresource = true
		notes = append(notes, "no CRD given: assuming the status subresource is on")
	}
	return cfg, notes, nil
}
