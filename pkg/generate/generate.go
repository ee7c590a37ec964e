// Package generate writes the status-source annotation into a CSV and
// changes nothing else in the file: the value is derived (Derive), spliced
// into the text (SetAnnotation), proven to change only that annotation
// (Verify), checked with validate's rules against the CRDs at hand, and
// written atomically (WriteFile).
package generate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/pmezard/go-difflib/difflib"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/bridge/sidecar"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/crd"
	"github.com/statuscheck/statuscheck/pkg/manifest"
	"github.com/statuscheck/statuscheck/pkg/manifest/typed"
	"github.com/statuscheck/statuscheck/pkg/result"
	"github.com/statuscheck/statuscheck/pkg/source"
	"github.com/statuscheck/statuscheck/pkg/validate"
)

// Options configure Run.
type Options struct {
	Values Values
	// CRDs are more CRD files or directories (--crd).
	CRDs []string
	// Bridge, when set, adds the bridge's sidecar, its RBAC and its
	// declaration too (--bridge).
	Bridge *Bridge
}

// Result is what generate would do to one CSV file.
type Result struct {
	// File is the CSV file.
	File string
	// Old and New are its text before and after.
	Old, New []byte
	// Derivation is the status source and where it came from.
	Derivation *Derivation
	// HadAnnotations says whether the CSV had metadata.annotations.
	HadAnnotations bool
	// Findings are validate's findings on the new value.
	Findings []result.Finding
	// Notes are things the user should know (checks that could not run).
	Notes []string
	// Verdict are validate's findings on whether the upgrade is held
	// (validate.VerdictRule) with the new value: the bundle's, not the
	// value's, so never a reason to refuse the write, nor to exit 1.
	Verdict []result.Finding
	// Bridge is the bridge's declaration and the ops that add what it
	// needs (empty when it is all there), with Options.Bridge.
	Bridge *sidecar.Declaration
	// BridgeOps are those ops, the declaration's annotation not included.
	BridgeOps []Op
}

// Changed reports whether the file would change.
func (r *Result) Changed() bool { return !bytes.Equal(r.Old, r.New) }

// Invalid reports whether validate found errors in the new value.
func (r *Result) Invalid() bool {
	for _, f := range r.Findings {
		if f.Severity >= result.Error {
			return true
		}
	}
	return false
}

// Run plans the change for path: a bundle root, a manifests directory or a
// CSV file. It reads but never writes.
func Run(path string, opts Options) (*Result, error) {
	file, crds, inBundle, err := locate(path)
	if err != nil {
		return nil, err
	}
	for _, p := range opts.CRDs {
		more, err := source.LoadCRDs(p)
		if err != nil {
			return nil, err
		}
		crds = append(crds, more...)
	}
	old, err := bundle.OS{}.ReadFile(file, manifest.DefaultLimits.MaxFileSize)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	_, csv, err := parseCSV(file, old)
	if err != nil {
		return nil, err
	}
	d, err := Derive(csv, crds, opts.Values)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	res := &Result{File: file, Old: old, Derivation: d, HadAnnotations: csv.Annotations != nil}
	value := d.Source.Marshal()
	res.New = old
	if !upToDate(csv, value) {
		edit, err := SetAnnotation(old, v1alpha1.AnnotationKey, value)
		if err != nil {
			return nil, fmt.Errorf("editing %s: %w", file, err)
		}
		res.New = edit.Apply(old)
		if err := Verify(file, old, res.New, v1alpha1.AnnotationKey, value); err != nil {
			return nil, err
		}
	}
	newDoc, newCSV, err := parseCSV(file, res.New)
	if err != nil {
		return nil, err
	}
	if opts.Bridge != nil {
		if err := res.addBridge(newDoc, newCSV, findCRD(crds, groupOf(d.Source.APIVersion), d.Source.Kind), *opts.Bridge); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if newDoc, newCSV, err = parseCSV(file, res.New); err != nil {
			return nil, err
		}
	}
	res.Findings, res.Verdict, res.Notes = check(file, newDoc, newCSV, crds, inBundle || len(opts.CRDs) > 0)
	res.Findings = toOldPositions(file, old, res.New, res.Findings)
	res.Notes = append(d.Notes, res.Notes...)
	return res, nil
}

// addBridge makes the bridge's edits on res.New: the ops, then the
// declaration's annotation, each proven to change only what it says.
func (res *Result) addBridge(doc *manifest.Document, csv *operatorsv1alpha1.ClusterServiceVersion, c *crd.CRD, b Bridge) error {
	ops, decl, err := BridgeOps(doc.Object(), csv, res.Derivation.Source, c, b)
	if err != nil {
		return err
	}
	res.Bridge, res.BridgeOps = &decl, ops
	if res.New, err = ApplyOps(res.File, res.New, ops); err != nil {
		return err
	}
	if csv.Annotations[sidecar.AnnotationKey] == decl.String() {
		return nil
	}
	edit, err := SetAnnotation(res.New, sidecar.AnnotationKey, decl.String())
	if err != nil {
		return fmt.Errorf("editing %s: %w", res.File, err)
	}
	mid := res.New
	res.New = edit.Apply(mid)
	return Verify(res.File, mid, res.New, sidecar.AnnotationKey, decl.String())
}

// ProposedPrefix starts the message of a finding about a line the user's
// file does not have yet: a line generate would write.
const ProposedPrefix = "in the lines generate would write: "

// toOldPositions moves the positions of findings in the CSV file from the
// edited text to the file the user has: a line the edit left alone keeps
// its content and gets its line number in the old file; a line the edit
// writes points at the old line where it would go, and says so.
func toOldPositions(file string, old, new []byte, findings []result.Finding) []result.Finding {
	if bytes.Equal(old, new) {
		return findings
	}
	a, b := difflib.SplitLines(string(old)), difflib.SplitLines(string(new))
	ops := difflib.NewMatcher(a, b).GetOpCodes()
	out := make([]result.Finding, len(findings))
	for i, f := range findings {
		out[i] = f
		if f.File != file || f.Line <= 0 {
			continue
		}
		j := f.Line - 1
		for _, op := range ops {
			if j < op.J1 || j >= op.J2 || op.Tag == 'd' {
				continue
			}
			switch op.Tag {
			case 'e':
				out[i].Line = op.I1 + (j - op.J1) + 1
			case 'r':
				out[i].Line = op.I1 + min(j-op.J1, op.I2-op.I1-1) + 1
				out[i].Message = ProposedPrefix + f.Message
			default: // an inserted line: where it would go
				out[i].Line, out[i].Column = max(op.I1, 1), 1
				out[i].Message = ProposedPrefix + f.Message
			}
			break
		}
	}
	return out
}

// upToDate reports whether the CSV's annotation already says value: it
// parses cleanly to the same status source (its formatting is the user's).
func upToDate(csv *operatorsv1alpha1.ClusterServiceVersion, value string) bool {
	raw, ok := csv.Annotations[v1alpha1.AnnotationKey]
	if !ok {
		return false
	}
	cur, problems := contract.Parse(raw)
	return cur != nil && len(problems) == 0 && cur.Marshal() == value
}

// locate finds the CSV file and the CRDs beside it; inBundle says the
// path was a bundle (or manifests directory), where the CRDs must be.
func locate(path string) (file string, crds []*crd.CRD, inBundle bool, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", nil, false, fmt.Errorf("reading %s: %w", path, unwrap(err))
	}
	if st.IsDir() {
		b, err := bundle.Load(path, bundle.Options{})
		if err != nil {
			return "", nil, false, err
		}
		if err := errors.Join(b.Errors...); err != nil {
			return "", nil, false, err
		}
		for _, p := range b.Problems {
			if (p.Code == bundle.CodeParse || p.Code == bundle.CodeLimit || p.Code == bundle.CodeSymlink) && manifest.NamedCSV(p.Pos.File) {
				return "", nil, false, fmt.Errorf("%s: %s", p.Pos, p.Message)
			}
		}
		switch len(b.CSVs) {
		case 0:
			for _, p := range b.Problems {
				if p.Code == bundle.CodeCSVMissing {
					return "", nil, false, fmt.Errorf("%s: %s", path, p.Message)
				}
			}
			return "", nil, false, fmt.Errorf("%s: no ClusterServiceVersion found", path)
		case 1:
		default:
			var files []string
			for _, c := range b.CSVs {
				files = append(files, c.Doc.File)
			}
			return "", nil, false, fmt.Errorf("%s holds %d ClusterServiceVersions (%v); name the CSV file", path, len(b.CSVs), files)
		}
		return b.CSV().Doc.File, b.CRDs, true, nil
	}
	// A CSV file: the CRDs beside it, if any (a bundle's manifests/ has
	// them; operator-sdk's config/manifests/bases has none: use --crd).
	crds, err = source.CRDsIn(filepath.Dir(path), path)
	if err != nil {
		return "", nil, false, err
	}
	return path, crds, false, nil
}

func unwrap(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ParseCSV finds and decodes the CSV document of a file.
func ParseCSV(file string, data []byte) (*manifest.Document, *operatorsv1alpha1.ClusterServiceVersion, error) {
	return parseCSV(file, data)
}

// parseCSV finds and decodes the CSV document of a file.
func parseCSV(file string, data []byte) (*manifest.Document, *operatorsv1alpha1.ClusterServiceVersion, error) {
	docs, err := manifest.Parse(file, data, manifest.DefaultLimits)
	if err != nil {
		return nil, nil, err
	}
	for _, d := range docs {
		if k, _ := d.Object()["kind"].(string); k == bundle.CSVKind {
			csv := &operatorsv1alpha1.ClusterServiceVersion{}
			if err := typed.Decode(d, csv); err != nil {
				return nil, nil, err
			}
			return d, csv, nil
		}
	}
	return nil, nil, fmt.Errorf("%s: no ClusterServiceVersion in the file", file)
}

// Verify proves that new differs from old only in the annotation: parsed
// the way Kubernetes parses them, every document of new equals the one of
// old, except that the CSV carries key=value.
func Verify(file string, old, new []byte, key, value string) error {
	return verifyDocs(file, old, new, func(csv map[string]interface{}) (interface{}, error) {
		return withAnnotation(csv, key, value), nil
	})
}

// verifyDocs proves that new is old with change made to its first CSV
// document and nothing else.
func verifyDocs(file string, old, new []byte, change func(csv map[string]interface{}) (interface{}, error)) error {
	fail := func(format string, args ...interface{}) error {
		return fmt.Errorf("%s: generate could not edit the file safely (%s); nothing was written. Please report this with the file", file, fmt.Sprintf(format, args...))
	}
	before, err := manifest.Parse(file, old, manifest.DefaultLimits)
	if err != nil {
		return err
	}
	after, err := manifest.Parse(file, new, manifest.DefaultLimits)
	if err != nil {
		return fail("the result does not parse: %v", err)
	}
	if len(before) != len(after) {
		return fail("%d documents became %d", len(before), len(after))
	}
	done := false
	for i := range before {
		want := before[i].Value
		if obj := before[i].Object(); !done && obj["kind"] == bundle.CSVKind {
			if want, err = change(obj); err != nil {
				return fail("the change does not apply: %v", err)
			}
			done = true
		}
		if !reflect.DeepEqual(normalize(want), normalize(after[i].Value)) {
			return fail("document %d differs beyond the change", i+1)
		}
	}
	if !done {
		return fail("no ClusterServiceVersion")
	}
	return nil
}

// withAnnotation returns a deep copy of obj with the annotation set.
func withAnnotation(obj map[string]interface{}, key, value string) map[string]interface{} {
	var cp map[string]interface{}
	data, _ := json.Marshal(obj)
	_ = json.Unmarshal(data, &cp)
	md, _ := cp["metadata"].(map[string]interface{})
	if md == nil {
		md = map[string]interface{}{}
		cp["metadata"] = md
	}
	ann, _ := md["annotations"].(map[string]interface{})
	if ann == nil {
		ann = map[string]interface{}{}
		md["annotations"] = ann
	}
	ann[key] = value
	return cp
}

// normalize makes numbers comparable across a JSON round trip.
func normalize(v interface{}) interface{} {
	data, _ := json.Marshal(v)
	var out interface{}
	_ = json.Unmarshal(data, &out)
	return out
}

// check runs validate's rules on the new CSV with the CRDs at hand. A CSV
// file alone with no CRD beside it (an operator-sdk base CSV) cannot have
// its CRD checked: that is a note, not a finding. In a bundle, or with
// --crd, a missing CRD is the error validate reports.
func check(file string, doc *manifest.Document, csv *operatorsv1alpha1.ClusterServiceVersion, crds []*crd.CRD, crdsExpected bool) (out, verdict []result.Finding, notes []string) {
	b := &bundle.Bundle{Path: file, Root: filepath.Dir(file), ManifestsDir: filepath.Dir(file),
		CSVs: []*bundle.CSV{{Doc: doc, Obj: csv}}, CRDs: crds}
	res := validate.Check(b, validate.Options{})
	// operator-sdk's base CSV has no install strategy yet: `make bundle`
	// fills it from config/rbac, so RBAC cannot be judged here.
	base := len(csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs) == 0
	for _, f := range res.Findings {
		switch {
		case len(crds) == 0 && !crdsExpected && f.Rule == "status-source-crd-missing":
			notes = append(notes, "no CRD at hand, so the CRD checks (version, status subresource, conditions schema, RBAC) were skipped; pass --crd")
			continue
		case base && f.Rule == "status-rbac-missing":
			notes = append(notes, "the CSV has no install strategy yet (an operator-sdk base CSV), so RBAC was not checked; validate the bundle `make bundle` writes")
			continue
		case validate.VerdictRule(f.Rule):
			// Whether the upgrade is held is the bundle's, not the
			// annotation's: said, never a reason to refuse the write.
			verdict = append(verdict, f)
			continue
		}
		out = append(out, f)
	}
	return out, verdict, notes
}
