package validate

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/manifest"
	"github.com/statuscheck/statuscheck/pkg/result"
)

var update = flag.Bool("update", false, "rewrite golden files and generated fixtures")

const testdata = "../../testdata/bundles"

func fixtureDir(f fixture) string {
	kind := "fail"
	if f.pass {
		kind = "pass"
	}
	return filepath.Join(testdata, "rules", f.rule, kind)
}

// materialize builds a fixture from the good bundle into dst.
func materialize(t *testing.T, f fixture, dst string) {
	t.Helper()
	good := filepath.Join(testdata, "good")
	files := map[string][]byte{}
	require.NoError(t, filepath.WalkDir(good, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(good, p)
		data, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = data
		return err
	}))
	for _, r := range f.remove {
		require.Contains(t, files, r, "fixture %s removes a file the good bundle lacks", f.rule)
		delete(files, r)
	}
	for _, e := range f.edits {
		data, ok := files[e.file]
		require.True(t, ok, "fixture %s edits missing file %s", f.rule, e.file)
		require.Equal(t, 1, bytes.Count(data, []byte(e.old)), "fixture %s: edit must match %s exactly once: %q", f.rule, e.file, e.old)
		files[e.file] = bytes.Replace(data, []byte(e.old), []byte(e.new), 1)
	}
	for name, content := range f.add {
		if strings.HasPrefix(content, "@") {
			data, ok := files[content[1:]]
			if !ok {
				data, _ = os.ReadFile(filepath.Join(good, content[1:]))
			}
			require.NotEmpty(t, data, "fixture %s copies missing %s", f.rule, content[1:])
			content = string(data)
		}
		files[name] = []byte(content)
	}
	for name, data := range files {
		p := filepath.Join(dst, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, data, 0o644))
	}
	for name, target := range f.links {
		p := filepath.Join(dst, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.Symlink(target, p))
	}
}

// tree describes a directory: file contents and symlink targets.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			out[filepath.ToSlash(rel)] = "symlink -> " + target
			return err
		}
		data, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = string(data)
		return err
	})
	require.NoError(t, err)
	return out
}

func rulesFired(res result.Bundle) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range res.Findings {
		if !seen[f.Rule] {
			seen[f.Rule] = true
			out = append(out, f.Rule)
		}
	}
	sort.Strings(out)
	return out
}

// alsoFires lists rules that rightly fire on a fail fixture besides its own.
var alsoFires = map[string][]string{
	// A misspelt condition is also an annotation without Upgradeable.
	"condition-type-spelling": {"status-source-invalid"},
	// A cluster-scoped kind needs clusterPermissions, which the good bundle lacks.
	"status-source-scope-mismatch": {"status-rbac-missing"},
	// Without the CRD, nothing about the status source can be checked, and
	// the bundle is not what the CSV owns.
	"status-source-crd-missing": nil,
	// The parse error hides the CSV, so nothing else is checked.
	"manifest-parse": nil,
	// Without a CSV there is no status source to check.
	"bundle-csv-missing": nil,
	// The second CSV is the same as the first: it validates clean.
	"bundle-multiple-csvs": nil,
	// The escaped CRD is not read, so the status source has no CRD.
	"bundle-symlink-escape": {"status-source-crd-missing"},
	// Under handshake None the search finds both: OLM's copy allows on an
	// outdated True, and the spec changes between the check and the
	// replacement.
	"upgrade-while-blocked": {"unsafe-approval"},
	"unsafe-approval":       {"upgrade-while-blocked"},
	// An annotation request without an echo is a request freshness alone
	// answers: the None handshake's race comes with it.
	"unacknowledged-upgrade": {"unsafe-approval", "upgrade-while-blocked"},
}

func TestRuleFixtures(t *testing.T) {
	byRule := map[string][2]bool{}
	for _, f := range fixtures {
		have := byRule[f.rule]
		if f.pass {
			have[1] = true
		} else {
			have[0] = true
		}
		byRule[f.rule] = have
	}
	for _, r := range Rules() {
		t.Run(r.ID, func(t *testing.T) {
			have := byRule[r.ID]
			assert.True(t, have[0], "rule %s has no failing fixture", r.ID)
			assert.True(t, have[1], "rule %s has no passing fixture", r.ID)
		})
	}
	ids, verdict := map[string]bool{}, map[string]bool{}
	for _, r := range Rules() {
		ids[r.ID] = true
		verdict[r.ID] = r.Verdict
	}
	for _, f := range fixtures {
		name := f.rule + "/fail"
		if f.pass {
			name = f.rule + "/pass"
		}
		t.Run(name, func(t *testing.T) {
			require.True(t, ids[f.rule], "fixture for unknown rule %s", f.rule)
			dir := fixtureDir(f)
			want := t.TempDir()
			materialize(t, f, want)
			if *update {
				require.NoError(t, os.RemoveAll(dir))
				materialize(t, f, dir)
			}
			require.Equal(t, tree(t, want), tree(t, dir), "fixture %s is stale; run go test ./pkg/validate -run TestRuleFixtures -update", dir)

			res := Path(dir, Options{}, bundle.Options{})
			require.Empty(t, res.Errors)
			// A verdict rule's fixtures are judged on the verdict's
			// findings, every other rule's on the rest: the good bundle
			// passes every rule on a manifest's fields, while the verdict
			// (upgrade-not-held-olm-v0, the protocol search) judges what
			// the fixture declares as a whole.
			res.Findings = slices.DeleteFunc(res.Findings, func(fd result.Finding) bool { return verdict[fd.Rule] != verdict[f.rule] })
			fired := rulesFired(res)
			if f.pass {
				assert.Empty(t, res.Findings, "pass fixture %s (%s) should be clean", dir, f.comment)
				return
			}
			expect := append([]string{f.rule}, alsoFires[f.rule]...)
			sort.Strings(expect)
			assert.Equal(t, expect, fired, "fail fixture %s (%s): rules fired", dir, f.comment)
			for _, fd := range res.Findings {
				assert.NotEmpty(t, fd.File, "finding without a file: %+v", fd)
				assert.NotEmpty(t, fd.Message)
				assert.NotEmpty(t, fd.Remediation)
			}
		})
	}
}

// TestGoodBundleIsClean: the good bundle passes every rule on its
// manifests' fields; the verdict says what it does not have, something that
// holds its upgrade on OLM v0 (issue 27, item 1), and the protocol search
// finds OLM's race under handshake None.
func TestGoodBundleIsClean(t *testing.T) {
	for _, p := range []string{filepath.Join(testdata, "good"), filepath.Join(testdata, "good", "manifests")} {
		res := Path(p, Options{RequireStatusSource: true}, bundle.Options{})
		assert.Empty(t, res.Errors, p)
		var verdict []string
		for _, f := range res.Findings {
			if VerdictRule(f.Rule) {
				verdict = append(verdict, f.Rule)
				continue
			}
			t.Errorf("%s: finding %s: %s", p, f.Rule, f.Message)
		}
		assert.Contains(t, verdict, "upgrade-not-held-olm-v0", p)
		assert.Contains(t, verdict, "upgrade-while-blocked", p)
		assert.Equal(t, "cool-operator.v0.2.0", res.Name)
		require.Len(t, res.Protection, 3)
		for _, pr := range res.Protection {
			assert.False(t, pr.Held, "%s: %+v", p, pr)
			assert.NotEmpty(t, pr.Remedy, "%s: %+v", p, pr)
		}
	}
}

// TestItem1TheVerdictSaysWhatHoldsTheUpgrade is issue 27, item 1: a status
// source with handshake None and no bridge was 0 findings, exit 0, while
// OLM v0 reads only the (empty) OperatorCondition. Now it is
// upgrade-not-held-olm-v0 with the two fixes as commands; the bridge under
// RequestAck holds it on OLM v0 and nothing holds it on OLM v1 or without
// OLM.
func TestItem1TheVerdictSaysWhatHoldsTheUpgrade(t *testing.T) {
	tests := []struct {
		name   string
		edits  []edit
		heldV0 bool
		by     string
		rule   bool
	}{
		{name: "handshake None, no bridge", rule: true},
		{name: "RequestAck, no bridge", edits: []edit{annotation(requestAckSpec)}, rule: true},
		{name: "the bridge under RequestAck", edits: protectedEdits, heldV0: true, by: result.HeldByBridge},
		{name: "the bridge under None: the race", edits: []edit{bridgeDeclared, bridgeContainer}, by: result.HeldByBridge},
		{name: "the operator writes the OperatorCondition", edits: []edit{annotation(operatorCondition)}, by: result.HeldByOperatorCondition},
		{name: "both: two writers", edits: []edit{bridgeDeclared, annotation(operatorCondition), bridgeContainer}},
		// The review's defects: the verdict fails closed.
		{name: "a broken declaration: the bridge is meant, and its container is missing", edits: []edit{bridgeDeclared}, by: result.HeldByBridge},
		{name: "the bridge, and a search that cannot model the bundle", edits: append([]edit{{crdFile, "              storageLayer:\n                description: Storage backend; changing it starts a migration.\n                type: string\n                enum:\n                - PostgreSQL\n                - MariaDB\n", ""}}, protectedEdits...), by: result.HeldByBridge},
		{name: "the bridge, and a pinned namespace in doubt", edits: []edit{protectedEdits[0], annotation(`{` + cool + `,"namespace":"cool-system","handshake":{"mode":"RequestAck","request":{"specPath":".spec.upgradeRequest"}}}`), protectedEdits[2], protectedEdits[3]}, by: result.HeldByBridge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			materialize(t, fixture{edits: tt.edits}, dir)
			res := Path(dir, Options{}, bundle.Options{})
			require.Empty(t, res.Errors)
			fired := false
			for _, f := range res.Findings {
				if f.Rule == "upgrade-not-held-olm-v0" {
					fired = true
					assert.Equal(t, result.Error, f.Severity)
					assert.Contains(t, f.Message, "statuscheck generate -w --bridge IMAGE --request-spec-path .spec.upgradeRequest "+dir)
					assert.Contains(t, f.Message, "--handshake OperatorCondition")
					assert.NotZero(t, f.Line)
				}
			}
			assert.Equal(t, tt.rule, fired)
			require.Len(t, res.Protection, 3)
			byManager := map[string]result.Protection{}
			for _, p := range res.Protection {
				byManager[p.Manager] = p
			}
			assert.Equal(t, tt.heldV0, byManager[result.ManagerOLMv0].Held, "%+v", byManager[result.ManagerOLMv0])
			assert.Equal(t, tt.by, byManager[result.ManagerOLMv0].By)
			assert.False(t, byManager[result.ManagerOLMv1].Held)
			assert.False(t, byManager[result.ManagerNone].Held)
		})
	}
}

func TestRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Rules() {
		assert.False(t, seen[r.ID], "duplicate rule %s", r.ID)
		seen[r.ID] = true
		assert.Regexp(t, `^[a-z][a-z0-9]*(-[a-z0-9]+)*$`, r.ID, "rule IDs are kebab-case")
		assert.NotEmpty(t, r.Summary, r.ID)
		assert.NotEmpty(t, r.Remediation, r.ID)
		assert.NotNil(t, r.Check, r.ID)
		assert.True(t, strings.HasSuffix(r.Summary, "."), "summary of %s is a sentence", r.ID)
	}
	// The IDs SPEC.md section 6 requires, with their severities.
	spec := map[string]result.Severity{
		"manifest-parse":                        result.Error,
		"status-source-missing":                 result.Info,
		"status-source-invalid":                 result.Error,
		"status-source-not-owned":               result.Error,
		"status-source-crd-missing":             result.Error,
		"status-source-version-not-served":      result.Error,
		"status-source-scope-mismatch":          result.Error,
		"status-subresource-disabled":           result.Error,
		"conditions-schema-missing":             result.Error,
		"conditions-observedgeneration-missing": result.Error,
		"conditions-list-type":                  result.Warning,
		"condition-type-spelling":               result.Warning,
		"initialization-resource-mismatch":      result.Warning,
		"status-rbac-missing":                   result.Error,
		"handshake-request-not-observable":      result.Error,
		"handshake-path-missing":                result.Error,
		"bridge-container-missing":              result.Error,
		"bridge-rbac-missing":                   result.Error,
		"bridge-rbac-broad":                     result.Warning,
		"bridge-operatorcondition-handshake":    result.Error,
	}
	for id, s := range spec {
		var found *Rule
		for _, r := range Rules() {
			if r.ID == id {
				r := r
				found = &r
			}
		}
		if assert.NotNil(t, found, "SPEC rule %s missing from the registry", id) {
			assert.Equal(t, s, found.Severity, "severity of %s", id)
		}
	}
}

// TestFieldNamesThePosition is issue 11, item 9: a finding's field is the
// node its position points at (a member of the JSON inside an annotation
// value is named after the annotation it sits in).
func TestFieldNamesThePosition(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(testutil.RepoRoot(), "testdata/bundles/rules/*/fail"))
	require.NoError(t, err)
	checked := 0
	for _, dir := range dirs {
		b, err := bundle.Load(dir, bundle.Options{})
		require.NoError(t, err)
		docs := map[string]*manifest.Document{}
		for _, c := range b.CSVs {
			docs[c.Doc.File] = c.Doc
		}
		for _, c := range b.CRDs {
			docs[c.Doc.File] = c.Doc
		}
		for _, f := range Check(b, Options{}).Findings {
			doc := docs[f.File]
			if doc == nil || f.Field == "" || f.Line == 0 {
				continue
			}
			p := manifest.ParsePath(f.Field)
			if len(p) >= 3 && strings.HasPrefix(f.Field, "metadata.annotations[") {
				if inside(doc, p[:3], p[3:], f) {
					checked++
					continue
				}
				p = p[:3] // a member of the annotation's JSON value, at the annotation
			}
			assert.Equal(t, p.String(), doc.Found(p).String(), "%s %s: the field %s is not in %s", filepath.Base(filepath.Dir(dir)), f.Rule, f.Field, f.File)
			at, _ := doc.Locate(p)
			key, _ := doc.LocateKey(p)
			assert.True(t, (at.Line == f.Line && at.Column == f.Column) || (key.Line == f.Line && key.Column == f.Column),
				"%s %s: %s:%d:%d is not where %s is", filepath.Base(filepath.Dir(dir)), f.Rule, f.File, f.Line, f.Column, f.Field)
			checked++
		}
	}
	assert.Greater(t, checked, 15)
}

// inside reports whether f points inside the JSON of the annotation at p:
// at the member inner, or, for the annotation itself, at a character of
// its value (where alm-examples' JSON breaks).
func inside(doc *manifest.Document, p, inner manifest.Path, f result.Finding) bool {
	at := func(pos manifest.Position, ok bool) bool { return ok && pos.Line == f.Line && pos.Column == f.Column }
	if len(inner) > 0 {
		return at(doc.LocateEmbedded(p, inner))
	}
	meta, _ := doc.Object()["metadata"].(map[string]interface{})
	annotations, _ := meta["annotations"].(map[string]interface{})
	key, _ := p[len(p)-1].Name()
	value, _ := annotations[key].(string)
	for off := range value {
		if at(doc.LocateInString(p, off)) {
			return true
		}
	}
	return false
}

// TestItem4ObservedGenerationOnlyInStatusIsAnError is issue 18, item 2,
// and issue 27, item 4: a CRD that keeps status.observedGeneration but
// prunes the condition's (as Strimzi's do) is not silence: OLM's gate
// compares the condition's own observedGeneration and would never open,
// which stops every upgrade, so it is an error (it was a warning).
func TestItem4ObservedGenerationOnlyInStatusIsAnError(t *testing.T) {
	findings := withEdits(t, edit{crdFile, "                    observedGeneration:\n                      type: integer\n                      format: int64\n                      minimum: 0\n", ""})
	require.Len(t, findings, 1, "%+v", findings)
	fd := findings[0]
	assert.Equal(t, "conditions-observedgeneration-missing", fd.Rule)
	assert.Equal(t, result.Error, fd.Severity)
	assert.Contains(t, fd.Message, "would never open")
	assert.NotZero(t, fd.Line)
}

// TestEveryExampleIsChecked is issue 18, item 4: besides the
// initialization resource, every alm-examples entry of the status
// source's kind is what the console offers users to create; one the
// apiserver refuses (an enum value the schema does not allow) is a
// status-source-example-invalid that names the entry.
func TestEveryExampleIsChecked(t *testing.T) {
	findings := withEdits(t, edit{csvFile,
		`"spec": {"storageLayer": "PostgreSQL"}}]`,
		`"spec": {"storageLayer": "PostgreSQL"}}, {"apiVersion": "cool.operators.corp/v1beta1", "kind": "CoolOperator", "metadata": {"name": "cool-sqlite"}, "spec": {"storageLayer": "SQLite"}}]`})
	require.Len(t, findings, 1, "%+v", findings)
	fd := findings[0]
	assert.Equal(t, "status-source-example-invalid", fd.Rule)
	assert.Contains(t, fd.Message, "alm-examples entry 2 (cool-sqlite)")
	assert.Contains(t, fd.Message, "SQLite")
	assert.Equal(t, "metadata.annotations[alm-examples][1].spec.storageLayer", fd.Field)
	assert.Equal(t, 7, fd.Line, "the entry's storage layer, in alm-examples' literal block")
}

// TestAnExampleOfAScaledKindKeepsItsWholeNumbers: the apiserver decodes a
// request body's whole numbers as int64 (apimachinery's unstructured JSON
// scheme, decodeToUnstructured, through util/json), and a scale
// subresource's replicas path is read as one (NestedInt64). An example
// whose replicas is 3, as JSON in the initialization resource and in
// alm-examples, is a CR the apiserver creates: no finding; so is 3.0,
// which the console sends as 3. A fraction
// there the apiserver refuses, and so does validate.
func TestAnExampleOfAScaledKindKeepsItsWholeNumbers(t *testing.T) {
	// The good CRD with a scale subresource on .spec.replicas (an integer,
	// at least 1); internal/conformance's TestScaledExampleOnTheServer
	// creates the same examples of it on a real apiserver.
	scaled := crdText("cooloperators-scaled.yaml")
	tests := []struct {
		name     string
		replicas string
		wantRule string
	}{
		{name: "a whole number", replicas: "3"},
		// The console sends JSON.stringify(JSON.parse(...)): 3.0 is 3.
		{name: "a whole number written with a fraction", replicas: "3.0"},
		{name: "a whole number written with an exponent", replicas: "1e1"},
		{name: "a fraction", replicas: "2.5", wantRule: "status-source-example-invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The same example in the initialization resource and in
			// alm-examples.
			findings := withFixture(t, fixture{add: map[string]string{crdFile: scaled}, edits: []edit{
				{csvFile, `"spec": {"storageLayer": "PostgreSQL"}}'`, `"spec": {"storageLayer": "PostgreSQL", "replicas": ` + tt.replicas + `}}'`},
				{csvFile, `"spec": {"storageLayer": "PostgreSQL"}}]`, `"spec": {"storageLayer": "PostgreSQL", "replicas": ` + tt.replicas + `}}]`},
			}})
			var rules []string
			for _, f := range findings {
				rules = append(rules, f.Rule+": "+f.Message)
			}
			if tt.wantRule == "" {
				assert.Empty(t, rules)
				return
			}
			require.NotEmpty(t, findings)
			for _, f := range findings {
				assert.Equal(t, tt.wantRule, f.Rule, f.Message)
			}
		})
	}
}

// TestDefect4ValidateReportsTheBridgeBesideTheOperatorConditionHandshake:
// a bridge declared beside the OperatorCondition handshake (two writers
// of the OperatorCondition's Upgradeable entry) is an error at the
// bridge's annotation, with the fix; the same bundle without the bridge
// has no such finding.
func TestDefect4ValidateReportsTheBridgeBesideTheOperatorConditionHandshake(t *testing.T) {
	dir := filepath.Join(testdata, "rules", "bridge-operatorcondition-handshake", "fail")
	csv := filepath.Join(dir, csvFile)
	data, err := os.ReadFile(csv)
	require.NoError(t, err)
	line := 1 + strings.Count(string(data[:strings.Index(string(data), "statuscheck.operatorframework.io/bridge:")]), "\n")

	res := Path(dir, Options{}, bundle.Options{})
	var got []result.Finding
	for _, f := range res.Findings {
		if f.Rule == "bridge-operatorcondition-handshake" {
			got = append(got, f)
		}
	}
	require.Len(t, got, 1, "findings: %+v", res.Findings)
	assert.Equal(t, result.Error, got[0].Severity)
	assert.Equal(t, line, got[0].Line, "at the bridge's annotation")
	assert.Contains(t, got[0].Message, "use handshake None or RequestAck with the bridge, or drop the bridge")

	plain := filepath.Join(testdata, "handshake", "operatorcondition")
	assert.NotContains(t, rulesFired(Path(plain, Options{}, bundle.Options{})), "bridge-operatorcondition-handshake", "no bridge, no second writer")
}

// TestReviewStatusOnlyObservedGenerationWithTheBridge: a CRD that keeps
// status.observedGeneration but prunes the condition's is an error where
// a gate reads the condition (OLM's olm policy), and info where the CSV
// declares the bridge, which judges the CR under the strict policy and
// reads status.observedGeneration (pkg/bridge.Decide); the verdict is then
// held, as the protocol search with the bridge finds.
func TestReviewStatusOnlyObservedGenerationWithTheBridge(t *testing.T) {
	prune := edit{crdFile, "                    observedGeneration:\n                      type: integer\n                      format: int64\n                      minimum: 0\n", ""}
	for _, tt := range []struct {
		name  string
		edits []edit
		want  result.Severity
	}{
		{name: "no bridge", edits: []edit{prune}, want: result.Error},
		{name: "the bridge", edits: append([]edit{prune}, protectedEdits...), want: result.Info},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			materialize(t, fixture{edits: tt.edits}, dir)
			res := Path(dir, Options{}, bundle.Options{})
			var sevs []result.Severity
			for _, f := range res.Findings {
				if f.Rule == "conditions-observedgeneration-missing" {
					sevs = append(sevs, f.Severity)
				}
			}
			assert.Equal(t, []result.Severity{tt.want}, sevs)
		})
	}
}

// TestProtectedExample keeps testdata/bundles/protected, the README's quick
// start, equal to the good bundle with protectedEdits (the bridge under a
// RequestAck handshake with a spec request; -update rewrites it), and holds
// what the README says of it: no finding, and OLM v0 holds its upgrade
// through the bridge while OLM v1 and no OLM do not.
func TestProtectedExample(t *testing.T) {
	dir := filepath.Join(testdata, "protected")
	want := t.TempDir()
	materialize(t, fixture{edits: protectedEdits}, want)
	if *update {
		require.NoError(t, os.RemoveAll(dir))
		materialize(t, fixture{edits: protectedEdits}, dir)
	}
	require.Equal(t, tree(t, want), tree(t, dir), "%s is stale; run go test ./pkg/validate -run TestProtectedExample -update", dir)
	res := Path(dir, Options{RequireStatusSource: true}, bundle.Options{})
	require.Empty(t, res.Errors)
	assert.Empty(t, res.Findings)
	require.Len(t, res.Protection, 3)
	assert.Equal(t, result.Protection{Manager: result.ManagerOLMv0, Held: true, By: result.HeldByBridge,
		Reason: "statuscheck bridge writes the OperatorCondition from the CR; the protocol search on the bundle's configuration found no violation; except in the start-up window: from this version's CSV Succeeded until its bridge's first entry, its new OperatorCondition is empty, which OLM reads as allowed (a chain published together can go through it)"}, res.Protection[0])
	assert.False(t, res.Protection[1].Held)
	assert.False(t, res.Protection[2].Held)
}

// TestItem4NeverUpgradeableIsAnError is issue 27, item 4: a gate that can
// never open was a warning (exit 0) while the race was an error; the
// protocol search's never-upgradeable (kind unreachable) is now an error,
// and so is the bundle's exit code.
func TestItem4NeverUpgradeableIsAnError(t *testing.T) {
	res := Path(filepath.Join(testdata, "rules", "never-upgradeable", "fail"), Options{}, bundle.Options{})
	var found bool
	for _, f := range res.Findings {
		if f.Rule == "never-upgradeable" {
			found = true
			assert.Equal(t, result.Error, f.Severity, f.Message)
		}
	}
	require.True(t, found, "%+v", res.Findings)
	rep := result.Report{Bundles: []result.Bundle{res}}
	assert.Equal(t, result.ExitFindings, rep.ExitCode(result.Error))
}

// TestMissingSourceSuggestsWhatItsFixDoes: the finding's message for a
// CSV whose initialization resource is a candidate names the command its
// remediation names, the bridge included: generate without --bridge
// writes the annotation alone, and validate then says OLM v0 does not
// hold the upgrade.
func TestMissingSourceSuggestsWhatItsFixDoes(t *testing.T) {
	res := Path(filepath.Join(testdata, "rules", "status-source-missing", "fail"), Options{}, bundle.Options{})
	var found bool
	for _, f := range res.Findings {
		if f.Rule != "status-source-missing" {
			continue
		}
		found = true
		assert.Contains(t, f.Message, "`statuscheck generate -w --bridge IMAGE --request-spec-path .spec.upgradeRequest ", "the verdict's command, RequestAck included")
		assert.Contains(t, f.Remediation, "generate -w --bridge IMAGE")
	}
	require.True(t, found)
}
