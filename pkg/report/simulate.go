package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/simulate"
)

// Timeline writes a replay as text, a row per step. With a spool (a
// temporary file), the rows are held there until Close, which writes the
// whole run at once with each column as wide as its widest cell: nothing
// is printed for a replay that fails, and memory does not grow with the
// trace. Without one (a live stream) each row is written as it comes, in
// fixed widths that a longer cell pushes right.
type Timeline struct {
	w     io.Writer
	sum   *simulate.Summary
	err   error
	spool io.ReadWriteSeeker
	buf   *bufio.Writer
	// widths are the spooled columns' widest cells, the header's included.
	widths []int
}

// timelineWidths are a live stream's fixed column widths.
var timelineWidths = []int{5, 5, 8, 28, 4, 16}

// NewTimeline starts the text of a run: at once without a spool, at Close
// with one.
func NewTimeline(w io.Writer, sum *simulate.Summary, spool io.ReadWriteSeeker) *Timeline {
	t := &Timeline{w: w, sum: sum, spool: spool}
	if spool == nil {
		t.head(t.columns(), timelineWidths)
		return t
	}
	t.buf = bufio.NewWriter(spool)
	for _, c := range t.columns() {
		t.widths = append(t.widths, len(c))
	}
	return t
}

func (t *Timeline) columns() []string {
	upgradeable := "UPGRADEABLE"
	if t.sum.ReadsOC {
		upgradeable = "UPGRADEABLE (OC)" // what OLM's gate reads
	}
	cols := []string{"STEP", "LINE", "ACTOR", "ACTION", "GEN", upgradeable}
	for _, p := range t.sum.Policies {
		cols = append(cols, string(p))
	}
	return append(cols, "VIOLATIONS", "WHY")
}

// head writes the run's header and the column names.
func (t *Timeline) head(cols []string, widths []int) {
	sum := t.sum
	name := sum.File
	if sum.Name != "" {
		name = fmt.Sprintf("%s (%s)", sum.Name, sum.File)
	}
	t.printf("trace:     %s [%s]\n", name, sum.Format)
	t.printf("source:    %s\n", sum.Source)
	t.printf("subresource status: %s\n", map[bool]string{true: "on", false: "off (status writes bump generation)"}[sum.StatusSubresource])
	for _, n := range sum.Notes {
		t.printf("%s", wrapAfter("note:      ", n, 11))
	}
	if h := historicalNote(sum); h != "" {
		t.printf("%s", wrapAfter("note:      ", h, 11))
	}
	t.printf("\n")
	t.line(cols, widths)
}

// historicalNote says which policies of a run are historical gates: shown
// side by side, not in the exit code ("" when none is).
func historicalNote(sum *simulate.Summary) string {
	for _, p := range sum.Policies {
		if simulate.Historical(p, sum.Primary) {
			return fmt.Sprintf("%s is OLM's old gate (it ignores observedGeneration), which no OLM ships now: shown for comparison, its violations do not set the exit code", p)
		}
	}
	return ""
}

// whyCell says why each policy decided as it did: one reason when all
// agree, else each group of policies with its own ("olm, strict: ...;
// naive: ...").
func whyCell(policies []contract.Policy, why []string) string {
	if len(why) == 0 {
		return ""
	}
	var order []string
	by := map[string][]string{}
	for i, w := range why {
		if _, ok := by[w]; !ok {
			order = append(order, w)
		}
		by[w] = append(by[w], string(policies[i]))
	}
	if len(order) == 1 {
		return order[0]
	}
	parts := make([]string, len(order))
	for i, w := range order {
		parts[i] = strings.Join(by[w], ", ") + ": " + w
	}
	return strings.Join(parts, "; ")
}

// line writes cells padded to widths (a policy column is at least 6
// wide); the last cell is not padded.
func (t *Timeline) line(cells []string, widths []int) {
	var b strings.Builder
	for i, c := range cells {
		if i > 0 {
			b.WriteByte(' ')
		}
		if i == len(cells)-1 {
			b.WriteString(c)
			break
		}
		w := 6
		if i < len(widths) {
			w = widths[i]
		}
		fmt.Fprintf(&b, "%-*s", w, c)
	}
	t.printf("%s\n", strings.TrimRight(b.String(), " "))
}

func (t *Timeline) printf(format string, args ...interface{}) {
	if t.err == nil {
		_, t.err = fmt.Fprintf(t.w, format, args...)
	}
}

// Row writes one step, or spools it.
func (t *Timeline) Row(r simulate.Row) error {
	action := r.Step.Action()
	if r.Step.Expect != "" {
		action += " (expect " + string(r.Step.Expect) + ")"
	}
	gen := fmt.Sprint(r.Generation)
	if !r.Exists {
		gen = "-"
	}
	cells := []string{fmt.Sprint(r.Outcome.Step), lineOf(r.Step.Line), string(r.Step.Actor), action, gen, r.Condition}
	for i := range t.sum.Policies {
		v := "-"
		if r.Outcome.Verdicts != nil {
			v = string(r.Outcome.Verdicts[i].Verdict)
		}
		cells = append(cells, v)
	}
	cells = append(cells, violationTags(r.Outcome.Violations), whyCell(t.sum.Policies, r.Why))
	if t.spool == nil {
		t.line(cells, timelineWidths)
		return t.err
	}
	for i, c := range cells {
		c = strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' {
				return ' '
			}
			return r
		}, c)
		cells[i] = c
		if i < len(t.widths) && len(c) > t.widths[i] {
			t.widths[i] = len(c)
		}
	}
	if t.err == nil {
		_, t.err = t.buf.WriteString(strings.Join(cells, "\t") + "\n")
	}
	return t.err
}

// unspool writes the header and the spooled rows, aligned.
func (t *Timeline) unspool() {
	if t.err == nil {
		t.err = t.buf.Flush()
	}
	if t.err == nil {
		_, t.err = t.spool.Seek(0, io.SeekStart)
	}
	if t.err != nil {
		return
	}
	widths := append([]int(nil), t.widths...)
	for i := 6; i < len(widths)-1; i++ {
		widths[i] = max(widths[i], 6)
	}
	t.head(t.columns(), widths)
	sc := bufio.NewScanner(t.spool)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() && t.err == nil {
		t.line(strings.Split(sc.Text(), "\t"), widths)
	}
	if t.err == nil {
		t.err = sc.Err()
	}
}

func lineOf(l int) string {
	if l == 0 {
		return "-"
	}
	return fmt.Sprint(l)
}

func violationTags(vs []simulate.Violation) string {
	var tags []string
	for _, v := range vs {
		tag := v.Rule
		if v.Policy != "" {
			tag += "(" + string(v.Policy) + ")"
		}
		tags = append(tags, tag)
	}
	return strings.Join(tags, " ")
}

// Close writes the spooled rows, the violations and the summary.
func (t *Timeline) Close(sum *simulate.Summary) error {
	if t.spool != nil {
		t.unspool()
	}
	t.printf("\n")
	for _, v := range sum.Violations {
		at := fmt.Sprintf(" at step %d", v.Step)
		if v.Step == 0 {
			at = "" // about the run as a whole, or its starting state
		}
		t.printf("%s: %s %s%s%s: %s\n", location(v), v.Severity, v.Rule, violationPolicyTag(v), at, v.Message)
	}
	for _, r := range remediations(sum.Violations) {
		t.printf("%s", wrapAfter("to fix "+r.rule+": ", r.text, 4))
	}
	if sum.Dropped > 0 {
		t.printf("... and %d more violations (only the first %d are listed)\n", sum.Dropped, simulate.MaxViolations)
	}
	if sum.Skipped != "" {
		t.printf("other objects in the input, skipped: %s\n", sum.Skipped)
	}
	for _, n := range sum.Late {
		t.printf("%s", wrapAfter("note: ", n, 6))
	}
	var final []string
	for _, d := range sum.Final {
		final = append(final, fmt.Sprintf("%s %s", d.Policy, d.Verdict))
	}
	t.printf("%s", wrap(fmt.Sprintf("%s, %s%s; gate at the end: %s", plural(sum.Steps, "step", "steps"), countsText(sum.Counts), historicalText(sum), strings.Join(final, ", ")), 0, 2))
	return t.err
}

// violationPolicyTag names a violation's policy, and marks a historical
// gate's: " [naive, historical gate: not in the exit code]".
func violationPolicyTag(v simulate.Violation) string {
	switch {
	case v.Policy == "":
		return ""
	case v.Historical:
		return " [" + string(v.Policy) + ", historical gate: not in the exit code]"
	}
	return " [" + string(v.Policy) + "]"
}

// historicalText counts the violations of a historical gate, which are
// in the counts but not in the exit code.
func historicalText(sum *simulate.Summary) string {
	n := 0
	for _, c := range sum.Historical {
		n += c
	}
	if n == 0 {
		return ""
	}
	var p contract.Policy
	for _, q := range sum.Policies {
		if simulate.Historical(q, sum.Primary) {
			p = q
		}
	}
	return fmt.Sprintf(", %d of them the historical %s gate's (not in the exit code)", n, p)
}

type remediation struct{ rule, text string }

// remediations lists the remediation of each rule among vs, once, in the
// order the rules first appear.
func remediations(vs []simulate.Violation) []remediation {
	var out []remediation
	seen := map[string]bool{}
	for _, v := range vs {
		if seen[v.Rule] || v.Remediation == "" {
			continue
		}
		seen[v.Rule] = true
		out = append(out, remediation{v.Rule, v.Remediation})
	}
	return out
}

func location(v simulate.Violation) string {
	if v.Line > 0 {
		return fmt.Sprintf("%s:%d", v.File, v.Line)
	}
	if v.File != "" {
		return v.File
	}
	return "end of trace"
}

func countsText(c map[string]int) string {
	total := 0
	var parts []string
	for _, k := range sortedRules(c) {
		total += c[k]
		parts = append(parts, fmt.Sprintf("%s %d", k, c[k]))
	}
	if total == 0 {
		return "no violations"
	}
	return fmt.Sprintf("%s (%s)", plural(total, "violation", "violations"), strings.Join(parts, ", "))
}

func sortedRules(c map[string]int) []string {
	var out []string
	for k, n := range c {
		if n > 0 {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// JSONSteps spools a replay's per-step verdicts for SimulationJSON: one
// line a step where the gate was evaluated, in a temporary file, so
// memory does not grow with the trace and nothing is written before the
// replay is whole.
type JSONSteps struct {
	policies []contract.Policy
	spool    io.ReadWriteSeeker
	buf      *bufio.Writer
	n        int
	err      error
}

// NewJSONSteps spools into spool the verdicts of policies.
func NewJSONSteps(spool io.ReadWriteSeeker, policies []contract.Policy) *JSONSteps {
	return &JSONSteps{policies: policies, spool: spool, buf: bufio.NewWriter(spool)}
}

// Row spools a step's verdicts, if the gate was evaluated there.
func (j *JSONSteps) Row(r simulate.Row) error {
	sv := simulate.VerdictsOf(j.policies, r)
	if sv == nil || j.err != nil {
		return j.err
	}
	data, err := marshal(sv, "    ")
	if err != nil {
		j.err = err
		return err
	}
	data = bytes.ReplaceAll(data, []byte("\n"), []byte("\x00")) // one spooled line a step
	if _, j.err = j.buf.Write(append(data, '\n')); j.err == nil {
		j.n++
	}
	return j.err
}

// marshal encodes v indented, with prefix on every line after the first,
// without escaping HTML.
func marshal(v interface{}, prefix string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent(prefix, "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// SimulationJSON writes a run's summary and violations, and with steps
// the timeline of verdicts they spooled ("timeline").
func SimulationJSON(w io.Writer, sum *simulate.Summary, steps *JSONSteps) error {
	data, err := marshal(sum, "")
	if err != nil {
		return err
	}
	if steps == nil || steps.n == 0 {
		_, err = fmt.Fprintf(w, "%s\n", data)
		return err
	}
	if steps.err != nil {
		return steps.err
	}
	if err := steps.buf.Flush(); err != nil {
		return err
	}
	if _, err := steps.spool.Seek(0, io.SeekStart); err != nil {
		return err
	}
	// The summary's object, closed after the timeline.
	body := bytes.TrimSuffix(data, []byte("}"))
	body = bytes.TrimRight(body, "\n")
	bw := bufio.NewWriter(w)
	bw.Write(body)
	bw.WriteString(",\n  \"timeline\": [\n")
	sc := bufio.NewScanner(steps.spool)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for i := 0; sc.Scan(); i++ {
		if i > 0 {
			bw.WriteString(",\n")
		}
		bw.WriteString("    ")
		bw.Write(bytes.ReplaceAll(sc.Bytes(), []byte("\x00"), []byte("\n")))
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading the spooled timeline: %w", err)
	}
	bw.WriteString("\n  ]\n}\n")
	return bw.Flush()
}

// MaxHTMLRows bounds the timeline an HTML page shows; past it only steps
// with violations are kept.
const MaxHTMLRows = 5000

// HTMLRows collects rows for SimulationHTML within MaxHTMLRows.
type HTMLRows struct {
	Rows    []simulate.Row
	Skipped int
}

// Add keeps a row if there is room, or if it has violations.
func (h *HTMLRows) Add(r simulate.Row) error {
	if len(h.Rows) < MaxHTMLRows || len(r.Outcome.Violations) > 0 {
		h.Rows = append(h.Rows, r)
	} else {
		h.Skipped++
	}
	return nil
}

type htmlRow struct {
	ID         string
	Step, Line int
	Actor      string
	Action     string
	Gen        string
	Condition  string
	Verdicts   []htmlVerdict
	Violations []htmlTag
	Bad        bool
}

type htmlTag struct {
	Tag, Severity string
}

type htmlVerdict struct {
	Verdict, Reason, Class string
}

type htmlViolation struct {
	Rule, Policy, Severity, Message, Anchor string
	Step                                    int
	Historical                              bool
}

type htmlRemediation struct {
	Rule, Text string
}

// page is parsed when a page is first written, not when the package
// initialises: every statuscheck process initialises it, few write one.
var page = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Parse(pageText))
})

const pageText = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>statuscheck simulate: {{.Title}}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.4em; }
dl { display: grid; grid-template-columns: max-content auto; gap: .2em 1em; }
dt { font-weight: bold; }
code { font-family: ui-monospace, monospace; font-size: .9em; }
table { border-collapse: collapse; margin-top: 1em; font-size: .9em; }
th, td { border: 1px solid #ccc; padding: .25em .5em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; position: sticky; top: 0; }
td.Allow { background: #dff3df; }
td.Block { background: #f8dcdc; }
td.violated { background: #f4b6b6; color: #800; font-weight: bold; }
tr.bad td { border-top: 2px solid #b00; }
.violation { font-weight: bold; }
.error { color: #b00; }
.warning { color: #9a5b00; }
.info { color: #245; }
.why { font-weight: normal; font-size: .85em; color: #444; }
ul.violations li { margin: .3em 0; }
</style>
</head>
<body>
<h1>statuscheck simulate: {{.Title}}</h1>
<dl>
<dt>trace</dt><dd><code>{{.File}}</code> ({{.Format}})</dd>
<dt>status source</dt><dd><code>{{.Source}}</code></dd>
<dt>status subresource</dt><dd>{{.Subresource}}</dd>
<dt>steps</dt><dd>{{.Steps}}</dd>
<dt>result</dt><dd id="result">{{.Result}}</dd>
{{range .Notes}}<dt>note</dt><dd>{{.}}</dd>
{{end}}{{if .Historical}}<dt>historical gate</dt><dd id="historical">{{.Historical}}</dd>
{{end}}</dl>
<h2>Violations</h2>
{{if .Violations}}<ul class="violations" id="violations">
{{range .Violations}}<li>{{if .Step}}<a href="#{{.Anchor}}">step {{.Step}}</a>{{else}}end of the trace{{end}}: <span class="violation {{.Severity}}" data-rule="{{.Rule}}">{{.Rule}}</span>{{if .Policy}} [{{.Policy}}{{if .Historical}}, historical gate: not in the exit code{{end}}]{{end}} ({{.Severity}}): {{.Message}}</li>
{{end}}</ul>{{else}}<p id="violations">None.</p>{{end}}
{{if .Remediations}}<h2>Remediations</h2>
<dl id="remediations">
{{range .Remediations}}<dt>{{.Rule}}</dt><dd>{{.Text}}</dd>
{{end}}</dl>
{{end}}
<h2>Timeline</h2>
{{if .Skipped}}<p>{{.Skipped}} steps without violations are not shown.</p>{{end}}
<table id="timeline">
<thead><tr><th>step</th><th>line</th><th>actor</th><th>action</th><th>generation</th><th>Upgradeable</th>{{range .Policies}}<th>{{.}}</th>{{end}}<th>violations</th></tr></thead>
<tbody>
{{range .Rows}}<tr id="{{.ID}}"{{if .Bad}} class="bad"{{end}}><td>{{.Step}}</td><td>{{.Line}}</td><td>{{.Actor}}</td><td>{{.Action}}</td><td>{{.Gen}}</td><td>{{.Condition}}</td>{{range .Verdicts}}<td class="{{.Class}}">{{.Verdict}}{{if .Reason}}<div class="why">{{.Reason}}</div>{{end}}</td>{{end}}<td>{{range .Violations}}<span class="violation {{.Severity}}">{{.Tag}}</span> {{end}}</td></tr>
{{end}}</tbody>
</table>
</body>
</html>
`

// SimulationHTML writes a self-contained timeline page.
func SimulationHTML(w io.Writer, sum *simulate.Summary, rows *HTMLRows) error {
	data := struct {
		Title, File, Format, Source, Subresource, Result string
		Historical                                       string
		Steps, Skipped                                   int
		Notes                                            []string
		Policies                                         []string
		Violations                                       []htmlViolation
		Remediations                                     []htmlRemediation
		Rows                                             []htmlRow
	}{
		Title: sum.Name, File: sum.File, Format: string(sum.Format), Source: sum.Source,
		Subresource: map[bool]string{true: "on", false: "off"}[sum.StatusSubresource],
		Result:      countsText(sum.Counts) + historicalText(sum), Historical: historicalNote(sum),
		Steps: sum.Steps, Skipped: rows.Skipped, Notes: sum.Notes,
	}
	for _, p := range sum.Policies {
		head := string(p)
		if simulate.Historical(p, sum.Primary) {
			head += " (historical)"
		}
		data.Policies = append(data.Policies, head)
	}
	if data.Title == "" {
		data.Title = sum.File
	}
	for _, v := range sum.Violations {
		data.Violations = append(data.Violations, htmlViolation{Rule: v.Rule, Policy: string(v.Policy), Severity: v.Severity.String(),
			Message: v.Message, Step: v.Step, Anchor: fmt.Sprintf("step-%d", v.Step), Historical: v.Historical})
	}
	for _, r := range remediations(sum.Violations) {
		data.Remediations = append(data.Remediations, htmlRemediation{Rule: r.rule, Text: r.text})
	}
	for _, r := range rows.Rows {
		hr := htmlRow{ID: fmt.Sprintf("step-%d", r.Outcome.Step), Step: r.Outcome.Step, Line: r.Step.Line, Actor: string(r.Step.Actor),
			Action: r.Step.Action(), Gen: fmt.Sprint(r.Generation), Condition: r.Condition, Bad: len(r.Outcome.Violations) > 0}
		if r.Step.Expect != "" {
			hr.Action += " (expect " + string(r.Step.Expect) + ")"
		}
		if !r.Exists {
			hr.Gen = "-"
		}
		for i, p := range sum.Policies {
			v := htmlVerdict{Verdict: "-"}
			if r.Outcome.Verdicts != nil {
				d := r.Outcome.Verdicts[i]
				if i < len(r.Why) {
					d.Reason = r.Why[i]
				}
				v = htmlVerdict{Verdict: string(d.Verdict), Reason: d.Reason, Class: string(d.Verdict)}
				// A verdict that is itself the violation (an approval on
				// outdated information, a replacement while blocked) is
				// not shown as a good one.
				for _, viol := range r.Outcome.Violations {
					if viol.Policy == p && viol.Step == r.Outcome.Step {
						v.Class = "violated"
						v.Reason = viol.Rule + ": " + d.Reason
					}
				}
			}
			hr.Verdicts = append(hr.Verdicts, v)
		}
		for _, v := range r.Outcome.Violations {
			tag := v.Rule
			if v.Policy != "" {
				tag += " [" + string(v.Policy) + "]"
			}
			hr.Violations = append(hr.Violations, htmlTag{Tag: tag, Severity: v.Severity.String()})
		}
		data.Rows = append(data.Rows, hr)
	}
	return page().Execute(w, data)
}
