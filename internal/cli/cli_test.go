package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/pkg/catalog/fbc"
	"github.com/statuscheck/statuscheck/pkg/report"
	"github.com/statuscheck/statuscheck/pkg/result"
	"github.com/statuscheck/statuscheck/pkg/simulate"
	"github.com/statuscheck/statuscheck/pkg/validate"
)

var update = flag.Bool("update", false, "rewrite golden files and docs/rules.md")

// repoRoot is the checkout, where a user runs statuscheck from.
var repoRoot, _ = filepath.Abs("../..")

// run calls Run from the repository root, as a user in a checkout would,
// with catalogs read in process (statuscheck forwards them to
// statuscheck-cluster, which reads them with fbc.Walk).
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Chdir(repoRoot)
	var out, errb bytes.Buffer
	code = Run(args, &out, &errb, Options{Catalogs: fbc.Walk})
	return code, out.String(), errb.String()
}

// golden compares got with testdata/golden/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file; run go test ./internal/cli -update")
	assert.Equal(t, string(want), got, "golden %s differs; run go test ./internal/cli -update and review the diff", path)
}

func failFixtures(t *testing.T) []string {
	matches, err := filepath.Glob(filepath.Join(repoRoot, "testdata/bundles/rules/*/fail"))
	for i, m := range matches {
		matches[i], _ = filepath.Rel(repoRoot, m)
	}
	require.NoError(t, err)
	sort.Strings(matches)
	require.NotEmpty(t, matches)
	return matches
}

func TestValidateExitCodes(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{name: "a protected bundle", args: []string{"validate", "testdata/bundles/protected"}, code: 0, stdout: "1 bundle checked: 0 errors, 0 warnings, 0 info"},
		{name: "the good bundle: nothing holds its upgrade on OLM v0", args: []string{"validate", "testdata/bundles/good"}, code: 1, stdout: "error upgrade-not-held-olm-v0:"},
		{name: "an error finding", args: []string{"validate", "testdata/bundles/rules/status-rbac-missing/fail"}, code: 1, stdout: "error status-rbac-missing:"},
		{name: "a warning that puts the gate in doubt fails by default: OLM v0's verdict is no", args: []string{"validate", "WARNING"}, code: 1, stdout: "warning conditions-list-type:"},
		{name: "a warning fails with --fail-on warning", args: []string{"validate", "--fail-on", "warning", "WARNING"}, code: 1},
		{name: "info passes with --fail-on warning", args: []string{"validate", "--fail-on=warning", "testdata/bundles/rules/status-source-missing/fail"}, code: 0, stdout: "info status-source-missing:"},
		{name: "info fails with --fail-on info", args: []string{"validate", "--fail-on=info", "testdata/bundles/rules/status-source-missing/fail"}, code: 1},
		{name: "--require-status-source", args: []string{"validate", "--require-status-source", "testdata/bundles/rules/status-source-missing/fail"}, code: 1, stdout: "error status-source-missing:"},
		{name: "several bundles", args: []string{"validate", "testdata/bundles/protected", "WARNING"}, code: 1, stdout: "2 bundles checked: 0 errors, 1 warning"},
		{name: "several bundles, all held", args: []string{"validate", "testdata/bundles/protected", "testdata/bundles/protected"}, code: 0, stdout: "2 bundles checked: 0 errors, 0 warnings"},
		{name: "a missing path", args: []string{"validate", "testdata/bundles/nope"}, code: 2, stderr: "loading bundle testdata/bundles/nope: no such file or directory"},
		{name: "a missing path beside a good one", args: []string{"validate", "testdata/bundles/good", "testdata/bundles/nope"}, code: 2},
		{name: "no path", args: []string{"validate"}, code: 2, stderr: "requires at least 1 arg"},
		{name: "a bad output", args: []string{"validate", "-o", "yaml", "testdata/bundles/good"}, code: 2, stderr: `"yaml" is not one of text, json`},
		{name: "a bad --fail-on", args: []string{"validate", "--fail-on", "fatal", "testdata/bundles/good"}, code: 2, stderr: `"fatal" is not one of error, warning, info`},
		{name: "an unknown flag", args: []string{"validate", "--strict", "testdata/bundles/good"}, code: 2, stderr: "unknown flag: --strict"},
		{name: "an unknown command", args: []string{"lint"}, code: 2, stderr: "unknown command"},
		{name: "rules", args: []string{"rules"}, code: 0, stdout: "status-rbac-missing"},
		{name: "version", args: []string{"--version"}, code: 0, stdout: "statuscheck version"},
	}
	warning := protectedWithWarning(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, a := range tt.args {
				if a == "WARNING" {
					tt.args[i] = warning
				}
			}
			code, stdout, stderr := run(t, tt.args...)
			assert.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			assert.Contains(t, stdout, tt.stdout)
			assert.Contains(t, stderr, tt.stderr)
			if tt.code == 2 {
				assert.NotEmpty(t, stderr, "a failure says why")
			}
		})
	}
}

func TestValidateGolden(t *testing.T) {
	code, stdout, _ := run(t, append([]string{"validate"}, failFixtures(t)...)...)
	assert.Equal(t, 1, code)
	golden(t, "validate-fail-fixtures.txt", stdout)

	code, stdout, _ = run(t, append([]string{"validate", "-o", "json"}, failFixtures(t)...)...)
	assert.Equal(t, 1, code)
	golden(t, "validate-fail-fixtures.json", stdout)

	var rep struct {
		Bundles []result.Bundle `json:"bundles"`
		Summary struct {
			Bundles int `json:"bundles"`
			Error   int `json:"error"`
			Warning int `json:"warning"`
			Info    int `json:"info"`
		} `json:"summary"`
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&rep))
	assert.Equal(t, len(failFixtures(t)), rep.Summary.Bundles)
	for _, b := range rep.Bundles {
		require.NotEmpty(t, b.Findings, b.Path)
		for _, f := range b.Findings {
			assert.NotEmpty(t, f.Rule)
			assert.NotEmpty(t, f.File)
			assert.NotEmpty(t, f.Message)
			assert.NotEmpty(t, f.Remediation)
		}
	}
	// The raw JSON uses the documented keys, not Go field names.
	assert.Contains(t, stdout, `"remediation":`)
	assert.NotContains(t, stdout, `"Remediation":`)
}

func TestValidateOrderIsDeterministic(t *testing.T) {
	args := append([]string{"validate"}, failFixtures(t)...)
	_, first, _ := run(t, args...)
	for i := 0; i < 5; i++ {
		_, again, _ := run(t, args...)
		require.Equal(t, first, again)
	}
	// The order follows the arguments, not the finishing order.
	rev := append([]string{"validate"}, failFixtures(t)...)
	for i, j := 1, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	_, reversed, _ := run(t, rev...)
	firstLines := strings.Split(strings.TrimSpace(first), "\n")
	revLines := strings.Split(strings.TrimSpace(reversed), "\n")
	assert.Equal(t, len(firstLines), len(revLines))
	assert.NotEqual(t, firstLines[0], revLines[0])
}

// TestRulesOutputs: every output of `rules` lists the same entries,
// validate's rules and simulate's violations (issue 11, item 12).
func TestRulesOutputs(t *testing.T) {
	code, stdout, _ := run(t, "rules", "-o", "json")
	require.Equal(t, 0, code)
	var rules []report.RuleInfo
	require.NoError(t, json.Unmarshal([]byte(stdout), &rules))
	kinds := simulate.Kinds()
	require.Len(t, rules, len(validate.Rules())+len(kinds))
	for i, r := range validate.Rules() {
		assert.Equal(t, r.ID, rules[i].ID)
		assert.Equal(t, r.Severity, rules[i].Severity)
		assert.Equal(t, "validate", rules[i].Command)
	}
	for i, k := range kinds {
		assert.Equal(t, k.ID, rules[len(validate.Rules())+i].ID)
		assert.Equal(t, "simulate", rules[len(validate.Rules())+i].Command)
	}
	code, text, _ := run(t, "rules")
	require.Equal(t, 0, code)
	_, md, _ := run(t, "rules", "-o", "markdown")
	for _, r := range rules {
		assert.Contains(t, text, "  "+r.ID+" ", "text lists %s", r.ID)
		assert.Contains(t, md, "## "+r.ID+"\n", "markdown lists %s", r.ID)
	}
}

// TestRulesDocIsCurrent fails when docs/rules.md is stale: regenerate it
// with `make docs` (or go test ./internal/cli -update).
func TestRulesDocIsCurrent(t *testing.T) {
	code, stdout, _ := run(t, "rules", "-o", "markdown")
	require.Equal(t, 0, code)
	if *update {
		require.NoError(t, os.WriteFile("docs/rules.md", []byte(stdout), 0o644))
	}
	want, err := os.ReadFile("docs/rules.md")
	require.NoError(t, err)
	assert.Equal(t, string(want), stdout, "docs/rules.md is stale: run make docs")
	for _, r := range validate.Rules() {
		assert.Contains(t, stdout, "## "+r.ID)
	}
}

// TestBadInput runs validate over hostile bundles: each gets exit 1 or 2
// and a message naming the file, and nothing panics.
func TestBadInput(t *testing.T) {
	csv, err := os.ReadFile(filepath.Join(repoRoot, "testdata/bundles/good/manifests/cool-operator.clusterserviceversion.yaml"))
	require.NoError(t, err)
	tests := []struct {
		name  string
		file  string
		data  string
		setup func(t *testing.T, manifests string)
		code  int
		rule  string
	}{
		{name: "binary bytes", file: "blob.yaml", data: "\x00\x01\x02\x03", code: 1, rule: "manifest-parse"},
		{name: "not yaml", file: "bad.yaml", data: "a: [\n", code: 1, rule: "manifest-parse"},
		{name: "an alias bomb", file: "bomb.yaml", data: "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n", code: 1, rule: "manifest-limit"},
		{name: "deep nesting", file: "deep.yaml", data: strings.Repeat("[", 9000) + strings.Repeat("]", 9000), code: 1, rule: "manifest-limit"},
		{name: "a 40 MB manifest", file: "huge.yaml", setup: func(t *testing.T, m string) {
			f, err := os.Create(filepath.Join(m, "huge.yaml"))
			require.NoError(t, err)
			require.NoError(t, f.Truncate(40<<20))
			require.NoError(t, f.Close())
		}, code: 1, rule: "manifest-limit"},
		{name: "a symlink out of the bundle", file: "escape.yaml", setup: func(t *testing.T, m string) {
			require.NoError(t, os.Symlink("/etc/hostname", filepath.Join(m, "escape.yaml")))
		}, code: 1, rule: "bundle-symlink-escape"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			m := filepath.Join(dir, "manifests")
			require.NoError(t, os.MkdirAll(m, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(m, "csv.clusterserviceversion.yaml"), csv, 0o644))
			if tt.data != "" {
				require.NoError(t, os.WriteFile(filepath.Join(m, tt.file), []byte(tt.data), 0o644))
			}
			if tt.setup != nil {
				tt.setup(t, m)
			}
			code, stdout, stderr := run(t, "validate", dir)
			assert.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			assert.Contains(t, stdout, filepath.Join(m, tt.file))
			assert.Contains(t, stdout, tt.rule)
		})
	}
	t.Run("an empty directory", func(t *testing.T) {
		dir := t.TempDir()
		code, stdout, stderr := run(t, "validate", dir)
		assert.Equal(t, 2, code)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, "loading bundle "+dir+": an empty directory")
	})
	t.Run("a missing directory", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "gone")
		code, _, stderr := run(t, "validate", dir)
		assert.Equal(t, 2, code)
		assert.Contains(t, stderr, "loading bundle "+dir+": no such file or directory")
	})
	t.Run("a file that is not a CSV", func(t *testing.T) {
		// A CSV file is validated (issue 27); another object is not one.
		file := filepath.Join(t.TempDir(), "configmap.yaml")
		require.NoError(t, os.WriteFile(file, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"), 0o644))
		code, _, stderr := run(t, "validate", "-o", "json", file)
		assert.Equal(t, 2, code)
		assert.Contains(t, stderr, "loading bundle "+file+": a ConfigMap, not a ClusterServiceVersion")
	})
}

// TestValidateTextReads: validate's text output, over many bundles, is for
// a terminal: each finding on one line that starts with its position, a
// rule's remediation under its first finding, every other line within
// report.Width columns (but a single word wider than that), and the OLM v1
// and "without OLM" paragraphs said once, not once a bundle.
func TestValidateTextReads(t *testing.T) {
	fixtures := failFixtures(t)
	code, stdout, _ := run(t, append([]string{"validate"}, fixtures...)...)
	assert.Equal(t, 1, code)
	finding := regexp.MustCompile(`^testdata/bundles/rules/[^ ]+: (error|warning|info) [a-z0-9-]+: `)
	findings, verdicts := 0, 0
	for _, l := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		if finding.MatchString(l) {
			findings++
			continue
		}
		if strings.HasSuffix(l, "is the upgrade held while the status source says wait?") {
			verdicts++
		}
		if len(l) > report.Width {
			assert.NotContains(t, strings.TrimSpace(l), " ", "a line wider than %d columns is one word: %q", report.Width, l)
		}
	}
	assert.Greater(t, findings, len(fixtures)/2, "findings are one line each")
	assert.Greater(t, verdicts, 10, "many bundles have a verdict")
	for _, once := range []string{"operator-controller has no gate an operator can hold an upgrade on", "applied as plain manifests (kubectl, Helm, kustomize)"} {
		assert.Less(t, strings.Count(strings.Join(strings.Fields(stdout), " "), once), verdicts/4, "said once for the bundles that share it, not once for each of %d: %q", verdicts, once)
	}
	assert.Contains(t, stdout, "\nSaid once for the bundles above that point here:\n")
	assert.Equal(t, 1, strings.Count(stdout, "    to fix: Put every object in a file of its own."), "a remediation under its rule's first finding")
}

// TestHelpFitsATerminal: every command's --help fits a terminal of 100
// columns (helpWidth): the flags' descriptions wrap under their column,
// and an enum flag with many values shows a name (FORMAT), its values
// listed in its description.
// An example command line is the one thing left whole, to paste.
func TestHelpFitsATerminal(t *testing.T) {
	for _, c := range [][]string{{}, {"validate"}, {"generate"}, {"simulate"}, {"rules"}, {"version"}, {"completion"}} {
		t.Run(strings.Join(append([]string{"statuscheck"}, c...), " "), func(t *testing.T) {
			code, stdout, stderr := run(t, append(c, "--help")...)
			require.Equal(t, 0, code, stderr)
			for _, line := range strings.Split(stdout, "\n") {
				if strings.HasPrefix(strings.TrimSpace(line), "statuscheck ") {
					continue
				}
				assert.LessOrEqual(t, len(line), helpWidth, "%q", line)
			}
		})
	}
}

// TestCommandsDocShowsWhatValidatePrints: docs/commands.md shows the text
// validate prints for the protected example bundle; it is that output,
// byte for byte (-update rewrites it there).
func TestCommandsDocShowsWhatValidatePrints(t *testing.T) {
	const prompt = "$ statuscheck validate testdata/bundles/protected\n"
	path := filepath.Join(repoRoot, "docs", "commands.md")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	doc := string(data)
	start := strings.Index(doc, prompt)
	require.GreaterOrEqual(t, start, 0, "docs/commands.md shows %q", prompt)
	start += len(prompt)
	end := strings.Index(doc[start:], "```")
	require.GreaterOrEqual(t, end, 0)
	code, stdout, stderr := run(t, "validate", "testdata/bundles/protected")
	require.Equal(t, 0, code, stderr)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(doc[:start]+stdout+doc[start+end:]), 0o644))
		return
	}
	assert.Equal(t, stdout, doc[start:start+end], "docs/commands.md's example output (go test ./internal/cli -run TestCommandsDocShowsWhatValidatePrints -update)")
}

// TestFollowingTheMissingSourcesCommandHoldsTheUpgrade: the command
// status-source-missing gives for a candidate initialization resource,
// run as written (IMAGE replaced), leaves a bundle whose upgrade OLM v0
// holds: validate exits 0 and says so.
func TestFollowingTheMissingSourcesCommandHoldsTheUpgrade(t *testing.T) {
	dir := copyTree(t, "testdata/bundles/rules/status-source-missing/fail")
	_, stdout, _ := run(t, "validate", "-o", "json", dir)
	var rep struct {
		Bundles []result.Bundle `json:"bundles"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	require.Len(t, rep.Bundles, 1)
	var command string
	for _, f := range rep.Bundles[0].Findings {
		if f.Rule == "status-source-missing" {
			_, after, ok := strings.Cut(f.Message, "run `")
			require.True(t, ok, f.Message)
			command, _, _ = strings.Cut(after, "`")
		}
	}
	require.NotEmpty(t, command, "the finding names a command")
	args := strings.Fields(strings.Replace(command, "IMAGE", "quay.io/statuscheck/statuscheck:v0.1.0", 1))
	require.Equal(t, []string{"statuscheck", "generate"}, args[:2])
	code, _, stderr := run(t, args[1:]...)
	require.Equal(t, 0, code, "%s: %s", command, stderr)

	code, stdout, stderr = run(t, "validate", "-o", "json", dir)
	assert.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	held, _ := rep.Bundles[0].OLMv0()
	assert.True(t, held.Held, "OLM v0: %s", held.Reason)
}
