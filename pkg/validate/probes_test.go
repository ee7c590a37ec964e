package validate

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/result"
)

// withEdits copies the good bundle, applies edits and validates it.
func withEdits(t *testing.T, edits ...edit) []result.Finding {
	t.Helper()
	good := filepath.Join(testutil.RepoRoot(), "testdata/bundles/good")
	dir := t.TempDir()
	for _, f := range []string{csvFile, crdFile, annFile} {
		data, err := os.ReadFile(filepath.Join(good, f))
		require.NoError(t, err)
		text := string(data)
		for _, e := range edits {
			if e.file == f {
				require.Contains(t, text, e.old, "edit of %s", f)
				text = strings.Replace(text, e.old, e.new, 1)
			}
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(text), 0o644))
	}
	b, err := bundle.Load(dir, bundle.Options{})
	require.NoError(t, err)
	res := Check(b, Options{})
	require.Empty(t, res.Errors, "every file of the bundle read")
	// The verdict judges the bundle as a whole (TestGoodBundleIsClean);
	// the edits here are about the probes.
	return slices.DeleteFunc(res.Findings, func(f result.Finding) bool { return VerdictRule(f.Rule) })
}

// withFixture is withEdits for a fixture (materialize's), whose files may
// also be added or removed.
func withFixture(t *testing.T, f fixture) []result.Finding {
	t.Helper()
	dir := t.TempDir()
	materialize(t, f, dir)
	b, err := bundle.Load(dir, bundle.Options{})
	require.NoError(t, err)
	res := Check(b, Options{})
	require.Empty(t, res.Errors, "every file of the bundle read")
	return slices.DeleteFunc(res.Findings, func(f result.Finding) bool { return VerdictRule(f.Rule) })
}

const (
	itemsProps = "                  properties:\n                    type:\n"
	ogSchema   = "                    observedGeneration:\n                      type: integer\n                      format: int64\n                      minimum: 0\n"
	statusObj  = "          status:\n            type: object\n"
)

// TestProbesJudgeWhatTheHandWalkCouldNot holds the schema rules to the
// apiserver on schemas a reading of the schema got wrong or could not
// judge: each case asserts the rule and the apiserver's own words.
func TestProbesJudgeWhatTheHandWalkCouldNot(t *testing.T) {
	tests := []struct {
		name  string
		edits []edit
		rule  string // "" means no error or warning at all
		msg   []string
	}{
		{name: "properties only inside allOf: the CRD is refused",
			edits: []edit{{crdFile, statusObj + "            properties:\n", statusObj + "            allOf:\n            - properties:\n                phase:\n                  type: string\n            properties:\n"}},
			rule:  "status-source-crd-invalid", msg: []string{"properties[status].allOf[0].properties[phase].type: Forbidden: must be empty to be structural"}},
		{name: "the list-map key type neither required nor defaulted: the CRD is refused",
			edits: []edit{{crdFile, "                  required:\n                  - type\n", "                  required:\n"}},
			rule:  "status-source-crd-invalid", msg: []string{"items.properties[type].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"}},
		{name: "observedGeneration bounded so that a real value is refused",
			edits: []edit{{crdFile, ogSchema, ogSchema + "                      maximum: 0\n"}},
			rule:  "status-write-rejected", msg: []string{"status.conditions[0].observedGeneration: Invalid value: 1", "should be less than or equal to 0"}},
		{name: "a CEL rule on status that refuses an Upgradeable condition",
			edits: []edit{{crdFile, statusObj, statusObj + "            x-kubernetes-validations:\n            - rule: \"!has(self.conditions) || self.conditions.all(c, c.type != 'Upgradeable')\"\n              message: Upgradeable is reported elsewhere\n"}},
			rule:  "status-write-rejected", msg: []string{"status: Invalid value: Upgradeable is reported elsewhere"}},
		{name: "a CEL rule that passes",
			edits: []edit{{crdFile, statusObj, statusObj + "            x-kubernetes-validations:\n            - rule: \"!has(self.conditions) || self.conditions.all(c, c.reason != '')\"\n              message: every condition has a reason\n"}},
			rule:  ""},
		{name: "nested preserve-unknown-fields keeps an undeclared observedGeneration",
			edits: []edit{
				{crdFile, ogSchema, ""},
				{crdFile, "              observedGeneration:\n                type: integer\n                format: int64\n", ""},
				{crdFile, "                items:\n                  type: object\n", "                items:\n                  type: object\n                  x-kubernetes-preserve-unknown-fields: true\n"},
			},
			rule: ""},
		{name: "no observedGeneration anywhere is pruned",
			edits: []edit{
				{crdFile, ogSchema, ""},
				{crdFile, "              observedGeneration:\n                type: integer\n                format: int64\n", ""},
			},
			rule: "conditions-observedgeneration-missing", msg: []string{"comes back with neither the condition's observedGeneration nor status.observedGeneration"}},
		{name: "int-or-string for the handshake token keeps it",
			edits: []edit{
				{crdFile, "              upgradeRequest:\n                description: Token OLM writes to ask whether an upgrade may proceed.\n                type: string\n", "              upgradeRequest:\n                x-kubernetes-int-or-string: true\n"},
				annotation(`{` + cool + `,"handshake":{"mode":"RequestAck","request":{"specPath":".spec.upgradeRequest"}}}`),
			},
			rule: ""},
		{name: "an integer handshake token takes an integer",
			edits: []edit{
				{crdFile, "              upgradeRequest:\n                description: Token OLM writes to ask whether an upgrade may proceed.\n                type: string\n", "              upgradeRequest:\n                type: integer\n"},
				annotation(`{` + cool + `,"handshake":{"mode":"RequestAck","request":{"specPath":".spec.upgradeRequest"}}}`),
			},
			rule: ""},
		{name: "a boolean handshake token refuses a token",
			edits: []edit{
				{crdFile, "              upgradeRequest:\n                description: Token OLM writes to ask whether an upgrade may proceed.\n                type: string\n", "              upgradeRequest:\n                type: boolean\n"},
				annotation(`{` + cool + `,"handshake":{"mode":"RequestAck","request":{"specPath":".spec.upgradeRequest"}}}`),
			},
			rule: "handshake-path-missing", msg: []string{`the schema types .spec.upgradeRequest (handshake.request.specPath) as boolean; the handshake's token is an increasing count, written as an integer or a string`}},
		{name: "a status that keeps unknown fields but describes no conditions",
			edits: []edit{{crdFile, conditionsSchema, ""}, {crdFile, statusObj, statusObj + "            x-kubernetes-preserve-unknown-fields: true\n"}},
			rule:  "conditions-schema-missing", msg: []string{"the apiserver keeps any value of status.conditions"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			findings := withEdits(t, tt.edits...)
			var got []result.Finding
			for _, f := range findings {
				if f.Severity >= result.Warning {
					got = append(got, f)
				}
			}
			if tt.rule == "" {
				assert.Empty(t, got)
				return
			}
			var found *result.Finding
			for i := range got {
				if got[i].Rule == tt.rule {
					found = &got[i]
				}
			}
			require.NotNil(t, found, "want %s; got %+v", tt.rule, got)
			assert.Positive(t, found.Line, "a position")
			for _, m := range tt.msg {
				assert.Contains(t, found.Message, m)
			}
		})
	}
}

// TestProbesOnBadInput: a CEL expression that does not compile or costs
// too much, a schema nested 500 levels deep, and a pattern that would
// backtrack catastrophically are each a finding with a position, quickly
// and within bounded memory.
func TestProbesOnBadInput(t *testing.T) {
	deep := statusObj + "            properties:\n" + deepSchema(500, 14)
	tests := []struct {
		name  string
		edits []edit
		rule  string
		msg   string
	}{
		{name: "CEL that does not compile",
			edits: []edit{{crdFile, statusObj, statusObj + "            x-kubernetes-validations:\n            - rule: self.conditions.exists(c, c.type ==)\n"}},
			rule:  "status-source-crd-invalid", msg: "compilation failed"},
		{name: "CEL over the cost budget",
			edits: []edit{{crdFile, statusObj, statusObj + "            x-kubernetes-validations:\n            - rule: self.conditions.all(a, self.conditions.all(b, self.conditions.all(c, a.message + b.message + c.message != '')))\n"}},
			rule:  "status-source-crd-invalid", msg: "cost"},
		{name: "a schema 500 levels deep",
			edits: []edit{{crdFile, statusObj + "            properties:\n", deep}},
			rule:  "manifest-limit", msg: "nesting"},
		{name: "a catastrophic pattern on the reason",
			edits: []edit{{crdFile, "                    reason:\n                      type: string\n", "                    reason:\n                      type: string\n                      pattern: '^(a+)+$'\n"}},
			rule:  "status-write-rejected", msg: `should match '^(a+)+$'`},
		{name: "a pattern RE2 cannot compile",
			edits: []edit{{crdFile, "                    reason:\n                      type: string\n", "                    reason:\n                      type: string\n                      pattern: '^(?=a)b$'\n"}},
			rule:  "status-source-crd-invalid", msg: "pattern"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			findings := withEdits(t, tt.edits...)
			elapsed := time.Since(start)
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			var found *result.Finding
			for i := range findings {
				if findings[i].Rule == tt.rule {
					found = &findings[i]
				}
			}
			require.NotNil(t, found, "want %s; got %+v", tt.rule, findings)
			assert.Positive(t, found.Line)
			assert.Contains(t, found.Message, tt.msg)
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(256<<20), "allocated")
			t.Logf("%s: %v", tt.name, elapsed)
		})
	}
}

// deepSchema nests n objects, indented from indent.
func deepSchema(n, indent int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		pad := strings.Repeat(" ", indent+4*i)
		b.WriteString(pad + "d:\n" + pad + "  type: object\n" + pad + "  properties:\n")
	}
	b.WriteString(strings.Repeat(" ", indent+4*n) + "leaf:\n" + strings.Repeat(" ", indent+4*n) + "  type: string\n")
	return b.String()
}

// TestSearchCacheStaysWithItsBundle: bundles validated in one run share
// a probe cache, but the protocol search's result belongs to a bundle the
// search can model. Of two bundles with the same status source and CRD,
// one holding two CSVs (which the search refuses: which status source is
// meant?), each reports what it reports alone, whichever is checked
// first. (The cache used to answer before the bundle was looked at, so
// the two-CSV bundle reported the other's trace when it came second.)
func TestSearchCacheStaysWithItsBundle(t *testing.T) {
	dir := filepath.Join(testutil.RepoRoot(), "testdata/bundles/rules/bundle-multiple-csvs")
	load := func(name string) *bundle.Bundle {
		b, err := bundle.Load(filepath.Join(dir, name), bundle.Options{})
		require.NoError(t, err)
		return b
	}
	rules := func(res result.Bundle) []string {
		var out []string
		for _, f := range res.Findings {
			out = append(out, f.Rule)
		}
		return out
	}
	alone := map[string][]string{}
	for _, name := range []string{"fail", "pass"} {
		alone[name] = rules(Check(load(name), Options{Probes: &ProbeCache{}}))
	}
	require.Contains(t, alone["pass"], "upgrade-while-blocked", "the search's trace on the one-CSV bundle")
	for _, order := range [][]string{{"fail", "pass"}, {"pass", "fail"}} {
		cache := &ProbeCache{}
		for _, name := range order {
			assert.Equal(t, alone[name], rules(Check(load(name), Options{Probes: cache})), "%s checked in the order %v", name, order)
		}
	}
}

// TestProbeCacheKeysOnTheCRDText: bundles whose CRD has the same text
// share one run of the probes, wherever the file is; a byte more in the
// CRD file runs them again.
func TestProbeCacheKeysOnTheCRDText(t *testing.T) {
	src := filepath.Join(testutil.RepoRoot(), "testdata/bundles/rules/status-write-rejected/pass")
	crdFile := func(dir string) string {
		t.Helper()
		m, err := filepath.Glob(filepath.Join(dir, "manifests", "*_*.yaml"))
		require.NoError(t, err)
		require.Len(t, m, 1, "the fixture's one CRD file")
		return m[0]
	}
	copyBundle := func(edit func(crd []byte) []byte) string {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "bundle")
		require.NoError(t, os.CopyFS(dir, os.DirFS(src)))
		if edit != nil {
			f := crdFile(dir)
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(f, edit(data), 0o644))
		}
		return dir
	}
	for _, tc := range []struct {
		name     string
		second   func(crd []byte) []byte
		wantRuns int
	}{
		{name: "the same CRD text in another directory", second: nil, wantRuns: 1},
		{name: "a comment more in the CRD file", second: func(crd []byte) []byte { return append(crd, "# edited\n"...) }, wantRuns: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := &ProbeCache{}
			for _, dir := range []string{copyBundle(nil), copyBundle(tc.second)} {
				b, err := bundle.Load(dir, bundle.Options{})
				require.NoError(t, err)
				Check(b, Options{Probes: cache})
			}
			assert.Len(t, cache.results, tc.wantRuns, "probe runs kept in the cache")
		})
	}
}

// TestARefusedCRDOfManyRulesCostsWhatItsValidationCosts: a CRD of
// thousands of rules that the apiserver refuses without compiling them
// (its schema is not structural) is not built as a resource, which would
// compile them all for nothing. (A resource built beside the validation,
// tried for speed, allocated 213 MiB for 5,000 rules; the check alone
// allocates about 1 MiB. The bound is wide because the count is the
// process's: under the race detector, what earlier tests left running
// came to 47 MB.)
func TestARefusedCRDOfManyRulesCostsWhatItsValidationCosts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bundle")
	require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join(testutil.RepoRoot(), "testdata/bundles/protected"))))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "manifests/cool.operators.corp_cooloperators.yaml"), testutil.CoolCRDWithRules(t, 10000), 0o644))
	b, err := bundle.Load(dir, bundle.Options{})
	require.NoError(t, err)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res := Check(b, Options{})
	runtime.ReadMemStats(&after)
	require.Contains(t, rulesFired(res), "status-source-crd-invalid", "the apiserver refuses the CRD")
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(160<<20), "bytes allocated by the check")
}
