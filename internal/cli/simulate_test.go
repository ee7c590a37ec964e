package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/statuscheck/statuscheck/pkg/simulate"
)

const (
	goodCRD   = "testdata/bundles/good/manifests/cool.operators.corp_cooloperators.yaml"
	noSubCRD  = "testdata/traces/crds/cooloperators-no-status-subresource.yaml"
	coolRef   = "cool.operators.corp/v1beta1/CoolOperator/cool-operator"
	coolNSRef = "cool.operators.corp/v1beta1/CoolOperator/cool-system/cool-operator"
)

var timings = regexp.MustCompile(`(\), )[0-9.]+(ms|s|µs)\n`)

var simulateCases = []struct {
	name string
	args []string
	code int
}{
	{"seed", []string{"testdata/traces/seed.yaml", "--policy", "all"}, 1},
	{"seed-olm", []string{"testdata/traces/seed.yaml"}, 1},
	{"seed-bundle", []string{"--bundle", "testdata/bundles/handshake/none", "testdata/traces/seed.yaml", "--policy", "all"}, 1},
	{"snapshots-yaml", []string{"testdata/traces/snapshots.yaml", "--policy", "all"}, 0},
	{"snapshots-subresource-off", []string{"--crd", noSubCRD, "--source", coolRef, "testdata/traces/snapshots-subresource-off.json", "--policy", "all"}, 0}, // naive is historical; a replay ending blocked is a warning
	{"snapshots-subresource-off-assumed-on", []string{"testdata/traces/snapshots-subresource-off.json"}, 1},
	{"watch-events", []string{"--crd", goodCRD, "--source", coolRef, "testdata/traces/watch-events.json", "--policy", "all"}, 0},
	{"audit", []string{"--crd", goodCRD, "--source", coolNSRef, "testdata/traces/audit.jsonl", "--policy", "all"}, 1},
	{"duplicate-conditions", []string{"testdata/traces/duplicate-conditions.yaml", "--policy", "all"}, 0},
	{"duplicate-conditions-fail-on-warning", []string{"testdata/traces/duplicate-conditions.yaml", "--fail-on", "warning"}, 1},
	{"future-observed-generation", []string{"testdata/traces/future-observed-generation.yaml", "--policy", "all"}, 1},
	{"race-check-then-upgrade", []string{"--bundle", "testdata/bundles/handshake/none", "testdata/traces/race-check-then-upgrade.yaml", "--policy", "all"}, 1},
	{"admin-override", []string{"testdata/traces/admin-override.yaml", "--policy", "all"}, 0},
	{"handshake-request-spec", []string{"--bundle", "testdata/bundles/handshake/request-spec", "testdata/traces/handshake-request-spec.yaml"}, 0},
	{"handshake-annotation-no-ack", []string{"--bundle", "testdata/bundles/handshake/request-annotation", "testdata/traces/handshake-annotation-no-ack.yaml", "--policy", "all"}, 1},
	{"handshake-annotation-ack", []string{"--bundle", "testdata/bundles/handshake/request-annotation-ack", "testdata/traces/handshake-annotation-ack.yaml"}, 0},
	{"handshake-lock-broken", []string{"--bundle", "testdata/bundles/handshake/request-spec", "testdata/traces/handshake-lock-broken.yaml"}, 1},
	{"handshake-operatorcondition", []string{"--bundle", "testdata/bundles/handshake/operatorcondition", "testdata/traces/handshake-operatorcondition.yaml", "--policy", "all"}, 0},
	{"recorded-empty-operatorcondition", []string{"testdata/traces/recorded-empty-operatorcondition.yaml", "--policy", "all"}, 1},
}

// TestSimulateGolden pins every trace in every output format.
func TestSimulateGolden(t *testing.T) {
	for _, tc := range simulateCases {
		for _, format := range []string{"text", "json", "html"} {
			t.Run(tc.name+"/"+format, func(t *testing.T) {
				args := append([]string{"simulate", "-o", format}, tc.args...)
				code, stdout, stderr := run(t, args...)
				require.Equal(t, tc.code, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
				ext := map[string]string{"text": "txt", "json": "json", "html": "html"}[format]
				golden(t, filepath.Join("simulate", tc.name+"."+ext), stdout)
			})
		}
	}
}

type simOut struct {
	Steps      int                  `json:"steps"`
	Violations []simulate.Violation `json:"violations"`
	Counts     map[string]int       `json:"counts"`
}

func simulateJSON(t *testing.T, args ...string) simOut {
	t.Helper()
	_, stdout, stderr := run(t, append([]string{"simulate", "-o", "json"}, args...)...)
	var out simOut
	require.NoError(t, json.Unmarshal([]byte(stdout), &out), stderr)
	return out
}

func has(out simOut, rule, policy string, step int) bool {
	for _, v := range out.Violations {
		if v.Rule == rule && string(v.Policy) == policy && (step == 0 || v.Step == step) {
			return true
		}
	}
	return false
}

// TestSimulateSeed is the seed scenario: generation 15 to 16,
// PostgreSQL to MariaDB; naive approves on the outdated condition, olm and
// strict block.
func TestSimulateSeed(t *testing.T) {
	out := simulateJSON(t, "testdata/traces/seed.yaml", "--policy", "all")
	assert.True(t, has(out, "unsafe-approval", "naive", 2), "naive approves at the check: %+v", out.Violations)
	assert.False(t, has(out, "unsafe-approval", "olm", 0))
	assert.False(t, has(out, "unsafe-approval", "strict", 0))
	assert.False(t, has(out, "check-expectation", "", 0), "olm blocks at the check, as the trace expects")
	for _, v := range out.Violations {
		if v.Rule == "unsafe-approval" {
			assert.Equal(t, int64(16), v.Evidence.Generation)
			assert.Equal(t, int64(15), *v.Evidence.ObservedGeneration)
		}
	}
}

func TestSimulateFindsEachViolation(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		rule   string
		policy string
	}{
		{"status subresource off, from snapshots", []string{"--crd", noSubCRD, "--source", coolRef, "testdata/traces/snapshots-subresource-off.json"}, "never-upgradeable", "olm"},
		{"the model's generation rules broken", []string{"testdata/traces/snapshots-subresource-off.json"}, "generation-model-mismatch", ""},
		{"duplicate conditions", []string{"testdata/traces/duplicate-conditions.yaml"}, "duplicate-condition", ""},
		{"a future observedGeneration", []string{"testdata/traces/future-observed-generation.yaml"}, "future-observed-generation", ""},
		{"the race between check and replacement", []string{"testdata/traces/race-check-then-upgrade.yaml"}, "upgrade-while-blocked", "olm"},
		{"an annotation request without an ack", []string{"--bundle", "testdata/bundles/handshake/request-annotation", "testdata/traces/handshake-annotation-no-ack.yaml"}, "unacknowledged-upgrade", ""},
		{"a broken lock", []string{"--bundle", "testdata/bundles/handshake/request-spec", "testdata/traces/handshake-lock-broken.yaml"}, "lock-broken", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := simulateJSON(t, tt.args...)
			assert.True(t, has(out, tt.rule, tt.policy, 0), "want %s: %+v", tt.rule, out.Violations)
		})
	}
	for _, clean := range [][]string{
		{"--bundle", "testdata/bundles/handshake/request-spec", "testdata/traces/handshake-request-spec.yaml"},
		{"--bundle", "testdata/bundles/handshake/request-annotation-ack", "testdata/traces/handshake-annotation-ack.yaml"},
	} {
		out := simulateJSON(t, clean...)
		assert.Empty(t, out.Violations, "%v", clean)
	}
}

// TestSimulateHTML parses the page simulate writes: a timeline row per
// step, a list entry per violation, each linking to its row.
func TestSimulateHTML(t *testing.T) {
	for _, tc := range simulateCases {
		t.Run(tc.name, func(t *testing.T) {
			_, page, _ := run(t, append([]string{"simulate", "-o", "html"}, tc.args...)...)
			out := simulateJSON(t, tc.args...)
			doc, err := html.Parse(strings.NewReader(page))
			require.NoError(t, err)
			ids := map[string]bool{}
			var rows, items int
			var links []string
			severities := map[string]string{} // rule -> the class its tags carry
			var walk func(n *html.Node, inTimeline, inList bool)
			walk = func(n *html.Node, inTimeline, inList bool) {
				if n.Type == html.ElementNode {
					attr := map[string]string{}
					for _, a := range n.Attr {
						attr[a.Key] = a.Val
					}
					switch {
					case n.Data == "table" && attr["id"] == "timeline":
						inTimeline = true
					case n.Data == "ul" && attr["id"] == "violations":
						inList = true
					case n.Data == "tr" && inTimeline && attr["id"] != "":
						rows++
						ids[attr["id"]] = true
					case n.Data == "li" && inList:
						items++
					case n.Data == "a" && inList:
						links = append(links, strings.TrimPrefix(attr["href"], "#"))
					case n.Data == "span" && strings.Contains(attr["class"], "violation") && attr["data-rule"] != "":
						severities[attr["data-rule"]] = strings.TrimSpace(strings.TrimPrefix(attr["class"], "violation"))
					case n.Data == "td" && attr["class"] == "Allow" && strings.Contains(attr["title"], "unsafe-approval"):
						t.Errorf("an Allow that is the violation is shown as a good verdict")
					}
				}
				for c := n.FirstChild; c != nil; c = c.NextSibling {
					walk(c, inTimeline, inList)
				}
			}
			walk(doc, false, false)
			assert.Equal(t, out.Steps, rows, "a row per step")
			assert.Equal(t, len(out.Violations), items, "an entry per violation")
			for _, l := range links {
				if l != "step-0" {
					assert.True(t, ids[l], "link #%s has a row", l)
				}
			}
			assert.NotContains(t, page, "<script", "self-contained and inert")
			// Issue 11, item 13: a violation is styled by its severity.
			for _, v := range out.Violations {
				assert.Equal(t, v.Severity.String(), severities[v.Rule], "%s is styled as %s", v.Rule, v.Severity)
			}
		})
	}
}

func TestSimulateBadInput(t *testing.T) {
	dir := t.TempDir()
	unparsable := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(unparsable, []byte("apiVersion: statuscheck.operatorframework.io/v1alpha1\nkind: StatusTrace\nstatusSource: {apiVersion: a.io/v1, kind: A, name: a}\ninitial: null\nsteps:\n- {actor: olm, check: {}}\n- {actor: olm, check: {}\n"), 0o644))
	robot := filepath.Join(dir, "robot.yaml")
	require.NoError(t, os.WriteFile(robot, []byte("apiVersion: statuscheck.operatorframework.io/v1alpha1\nkind: StatusTrace\nstatusSource: {apiVersion: a.io/v1, kind: A, name: a}\ninitial: null\nsteps:\n- {actor: robot, check: {}}\n"), 0o644))
	other := filepath.Join(dir, "other.json")
	require.NoError(t, os.WriteFile(other, []byte(`{"apiVersion":"a.io/v1","kind":"A","metadata":{"name":"a"}}`+"\n"+`{"apiVersion":"a.io/v1","kind":"A","metadata":{"name":"b"}}`+"\n"), 0o644))
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"a trace that does not parse", []string{unparsable}, unparsable + ":7: invalid YAML"},
		{"an unknown actor", []string{robot}, robot + `:6: unknown actor "robot"`},
		{"a status write before create", []string{"testdata/traces/status-write-before-create.yaml"}, "testdata/traces/status-write-before-create.yaml:9: step 1: status write before the CR exists"},
		{"two objects, neither changing", []string{other}, other + ": one recording of A a and no change to replay (other objects skipped: A b (1))"},
		// Issue 11, item 3: what is not a trace of the status source.
		{"a CSV", []string{"testdata/bundles/good/manifests/cool-operator.clusterserviceversion.yaml"}, "one recording of ClusterServiceVersion cool-operator.v0.2.0 and no change to replay; simulate replays a StatusTrace"},
		{"a CSV against the bundle", []string{"--bundle", "testdata/bundles/good", "testdata/bundles/good/manifests/cool-operator.clusterserviceversion.yaml"}, "no recording of CoolOperator cool-operator in the input; it has ClusterServiceVersion cool-operator.v0.2.0 (1)"},
		{"a StatusTrace read as snapshots", []string{"--format", "snapshots", "testdata/traces/seed.yaml"}, "this is a StatusTrace, not a recording of the status source: read it with --format trace (or auto)"},
		{"a trace of another kind than the bundle's", []string{"--crd", "testdata/traces/crds/cooloperators-defaults.yaml", "--source", "cool.operators.corp/v1beta1/CoolOperator/another", "testdata/traces/seed.yaml"},
			"the trace's initial object is CoolOperator cool.operators.corp cool-operator, but --source cool.operators.corp/v1beta1/CoolOperator/another names CoolOperator cool.operators.corp another"},
		{"a missing trace", []string{"testdata/traces/nope.yaml"}, "reading testdata/traces/nope.yaml: no such file or directory"},
		{"a directory", []string{"testdata/traces"}, "is a directory, not a trace"},
		{"--crd without --source", []string{"--crd", goodCRD, "testdata/traces/seed.yaml"}, "--crd needs --source GROUP/VERSION/KIND/NAME: testdata/traces/seed.yaml declares no statusSource"},
		{"--bundle with --crd", []string{"--bundle", "testdata/bundles/good", "--crd", goodCRD, "--source", coolRef, "testdata/traces/seed.yaml"}, "none of the others can be"},
		{"a bad --source", []string{"--crd", goodCRD, "--source", "CoolOperator/x", "testdata/traces/seed.yaml"}, "is not GROUP/VERSION/KIND/NAME"},
		{"a --source the CRD lacks", []string{"--crd", goodCRD, "--source", "other.io/v1/Other/x", "testdata/traces/seed.yaml"}, "defines no Other in group other.io"},
		{"a bundle without a status source", []string{"--bundle", "testdata/bundles/rules/status-source-missing/fail", "testdata/traces/seed.yaml"}, "declares no status source"},
		{"a bad --policy", []string{"--policy", "OLM", "testdata/traces/seed.yaml"}, `"OLM" is not one of olm, strict, naive, all`},
		{"an audit log without a source", []string{"testdata/traces/audit.jsonl"}, "an audit log needs the status source"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := run(t, append([]string{"simulate"}, tt.args...)...)
			assert.Equal(t, 2, code, stderr)
			assert.Contains(t, stderr, tt.stderr)
		})
	}
}

func TestExplore(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		golden string
	}{
		{"none, every policy", []string{"--bundle", "testdata/bundles/handshake/none", "--policy", "all"}, 1, "explore-none.txt"},
		{"a spec request", []string{"--bundle", "testdata/bundles/handshake/request-spec"}, 0, "explore-request-spec.txt"},
		{"an annotation request without an ack", []string{"--bundle", "testdata/bundles/handshake/request-annotation"}, 1, "explore-request-annotation.txt"},
		{"an annotation request with an ack", []string{"--bundle", "testdata/bundles/handshake/request-annotation-ack"}, 0, ""},
		{"the OperatorCondition flow", []string{"--bundle", "testdata/bundles/handshake/operatorcondition", "--policy", "all"}, 1, ""},
		{"without OLM, from a CRD", []string{"--crd", goodCRD, "--source", coolRef, "--depth", "6"}, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, append([]string{"simulate", "--explore"}, tt.args...)...)
			assert.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			assert.Empty(t, stderr, "no progress on a non-terminal")
			if tt.golden != "" {
				// Timings vary; everything else is pinned.
				golden(t, filepath.Join("simulate", tt.golden), timings.ReplaceAllString(stdout, "${1}TIME\n"))
			}
			code, js, _ := run(t, append([]string{"simulate", "--explore", "-o", "json"}, tt.args...)...)
			assert.Equal(t, tt.code, code)
			var out struct {
				Results []struct {
					Policy          string `json:"policy"`
					States          int    `json:"states"`
					Depth           int    `json:"depth"`
					Counterexamples []struct {
						Violation simulate.Violation `json:"violation"`
						Steps     []json.RawMessage  `json:"steps"`
					} `json:"counterexamples"`
				} `json:"results"`
			}
			require.NoError(t, json.Unmarshal([]byte(js), &out))
			require.NotEmpty(t, out.Results)
			for _, r := range out.Results {
				assert.Positive(t, r.States)
				for _, c := range r.Counterexamples {
					assert.NotEmpty(t, c.Steps)
					assert.NotEmpty(t, c.Violation.Rule)
				}
			}
		})
	}
}

func TestExploreWritesReplayableCounterexamples(t *testing.T) {
	dir := t.TempDir()
	code, stdout, _ := run(t, "simulate", "--explore", "--bundle", "testdata/bundles/handshake/request-annotation", "--write-counterexamples", dir)
	require.Equal(t, 1, code)
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		assert.Contains(t, stdout, "written to "+f)
		rule := strings.TrimSuffix(strings.SplitN(filepath.Base(f), "-", 2)[1], "-olm.yaml")
		out := simulateJSON(t, f)
		assert.Positive(t, out.Counts[rule], "replaying %s shows %s: %v", f, rule, out.Counts)
		out = simulateJSON(t, "--bundle", "testdata/bundles/handshake/request-annotation", f)
		assert.Positive(t, out.Counts[rule], "also against the bundle")
	}
}

func TestExploreUsage(t *testing.T) {
	for _, tt := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"simulate", "--explore", "testdata/traces/seed.yaml", "--bundle", "testdata/bundles/good"}, "--explore takes no TRACE"},
		{[]string{"simulate", "--explore"}, "--explore needs the status source"},
		{[]string{"simulate", "--depth", "3", "testdata/traces/seed.yaml"}, "go with --explore"},
		{[]string{"simulate"}, "simulate needs a TRACE"},
		{[]string{"simulate", "--explore", "-o", "html", "--bundle", "testdata/bundles/good"}, "--explore writes text or json"},
	} {
		code, _, stderr := run(t, tt.args...)
		assert.Equal(t, 2, code, "%v", tt.args)
		assert.Contains(t, stderr, tt.stderr)
	}
}
