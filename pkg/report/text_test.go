package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/pkg/result"
)

// verdicts is the verdict validate gives a bundle with a status source:
// OLM v0's depends on the bundle, OLM v1's and "without OLM"'s do not.
func verdicts(held bool, path string) []result.Protection {
	v0 := result.Protection{Manager: result.ManagerOLMv0, Held: held, Reason: "statuscheck bridge writes the OperatorCondition from the CR; the protocol search on the bundle's configuration found no violation"}
	if !held {
		v0 = result.Protection{Manager: result.ManagerOLMv0, Reason: "OLM v0 reads only the OperatorCondition (of the CSV being replaced, when the next version comes), and nothing writes it",
			Remedy: "run `statuscheck generate -w --bridge IMAGE --handshake RequestAck --request-spec-path .spec.FIELD " + path + "` (statuscheck bridge, a sidecar, writes the OperatorCondition from the CR)"}
	}
	return []result.Protection{v0,
		{Manager: result.ManagerOLMv1, Reason: "operator-controller has no gate an operator can hold an upgrade on: it does not support the OperatorConditions API (its docs, Limitations), reads no condition of the CR", Remedy: "pin the ClusterExtension's version (spec.source.catalog.version) and raise it only once the CR reports a fresh Upgradeable=True"},
		{Manager: result.ManagerNone, Reason: "applied as plain manifests (kubectl, Helm, kustomize), nothing reads the condition before the new operator replaces the old", Remedy: "wait before applying the new version: the CR's Upgradeable condition True with observedGeneration equal to metadata.generation"},
	}
}

func longFinding(file string) result.Finding {
	return result.Finding{Rule: "upgrade-not-held-olm-v0", Severity: result.Error, File: file, Line: 11, Column: 41,
		Message:     strings.Repeat("a message longer than any terminal is wide ", 12),
		Remediation: "Declare what carries the CR's condition to OLM: `statuscheck generate -w --bridge IMAGE BUNDLE` adds statuscheck bridge as a sidecar, or the operator writes its OperatorCondition itself and `statuscheck generate -w --handshake OperatorCondition BUNDLE` declares it."}
}

// TestTextLayout: one line per finding with its position, the rule's
// remediation under its first finding, indented; the verdict wrapped to
// Width; OLM v1's and "without OLM"'s paragraphs said once for all
// bundles, OLM v0's per bundle.
func TestTextLayout(t *testing.T) {
	rep := &result.Report{Bundles: []result.Bundle{
		{Path: "bundles/a", Name: "a.v1", Findings: []result.Finding{longFinding("bundles/a/manifests/a.csv.yaml")}, Protection: verdicts(false, "bundles/a")},
		{Path: "bundles/b", Name: "b.v1", Findings: []result.Finding{longFinding("bundles/b/manifests/b.csv.yaml")}, Protection: verdicts(false, "bundles/b")},
		{Path: "bundles/c", Name: "c.v1", Protection: verdicts(true, "bundles/c")},
	}}
	var b bytes.Buffer
	require.NoError(t, Text(&b, rep))
	out := b.String()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")

	for _, l := range lines {
		if strings.Contains(l, ": error upgrade-not-held-olm-v0: ") {
			assert.True(t, strings.HasPrefix(l, "bundles/"), "a finding's line starts with its position: %q", l)
			continue // one line per finding, however long
		}
		assert.LessOrEqual(t, len(l), Width, "every other line fits %d columns: %q", Width, l)
	}
	assert.Contains(t, out, "bundles/a/manifests/a.csv.yaml:11:41: error upgrade-not-held-olm-v0: a message longer")
	assert.Equal(t, 2, strings.Count(out, ": error upgrade-not-held-olm-v0: "), "one line per finding")
	assert.Equal(t, 1, strings.Count(out, "    to fix: Declare what carries"), "the remediation once, under the rule's first finding, indented")
	assert.Contains(t, out, "bundles/a/manifests/a.csv.yaml:11:41: error upgrade-not-held-olm-v0: "+longFinding("").Message+"\n    to fix: ")

	for _, said := range []string{"operator-controller has no gate", "applied as plain manifests", "pin the ClusterExtension's"} {
		assert.Equal(t, 1, strings.Count(out, said), "said once for the three bundles: %q", said)
	}
	assert.Equal(t, 3, strings.Count(out, "  OLM v1: no (said once, below)\n"))
	assert.Equal(t, 3, strings.Count(out, "  without OLM: no (said once, below)\n"))
	assert.Equal(t, 2, strings.Count(out, "  OLM v0: no\n"), "OLM v0's is per bundle")
	assert.Equal(t, 1, strings.Count(out, "  OLM v0: yes\n"))
	assert.Contains(t, out, "\nSaid once for the bundles above that point here:\n  OLM v1: no\n    operator-controller has no gate")
	// A command too long for a line is continued as a shell continues it.
	assert.Contains(t, out, "`statuscheck generate -w --bridge IMAGE --handshake RequestAck \\\n")
	assert.True(t, strings.HasSuffix(out, "\n3 bundles checked: 2 errors, 0 warnings, 0 info\n"), out)
}

// TestTextOneBundleSaysItAll: with one bundle nothing is shared; each
// manager's paragraph is under it.
func TestTextOneBundleSaysItAll(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, Text(&b, &result.Report{Bundles: []result.Bundle{{Path: "p", Name: "p.v1", Protection: verdicts(true, "p")}}}))
	out := b.String()
	assert.NotContains(t, out, "below")
	assert.Contains(t, out, "p.v1 (p): is the upgrade held while the status source says wait?\n  OLM v0: yes\n")
	assert.Contains(t, out, "  OLM v1: no\n    operator-controller has no gate")
	assert.Contains(t, out, "  without OLM: no\n    applied as plain manifests")
}

// TestTextVerdictsThatDifferAreNotShared: the paragraph most bundles
// share is said once; a bundle whose paragraph differs has it under its
// own verdict.
func TestTextVerdictsThatDifferAreNotShared(t *testing.T) {
	a, b2, c := verdicts(true, "a"), verdicts(true, "b"), verdicts(true, "c")
	c[1].Reason += "; an operator that writes its OperatorCondition may not even start there"
	var b bytes.Buffer
	require.NoError(t, Text(&b, &result.Report{Bundles: []result.Bundle{{Path: "a", Protection: a}, {Path: "b", Protection: b2}, {Path: "c", Protection: c}}}))
	out := b.String()
	assert.Equal(t, 2, strings.Count(out, "  OLM v1: no (said once, below)\n"), "a's and b's OLM v1 paragraph is shared")
	flat := strings.Join(strings.Fields(out), " ")
	assert.Equal(t, 1, strings.Count(flat, "may not even start there"), "c's differs: under c")
	assert.Equal(t, 2, strings.Count(flat, "operator-controller has no gate"), "the shared one once, c's once")
	assert.Equal(t, 1, strings.Count(out, "applied as plain manifests"), "without OLM's is the same: once")
}

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		name, text  string
		first, rest int
		want        string
	}{
		{name: "short", text: "a b c", first: 2, rest: 4, want: "  a b c\n"},
		{name: "empty", text: "", want: "\n"},
		{name: "at the width", text: strings.Repeat("x", Width-2) + " y", want: strings.Repeat("x", Width-2) + " y\n"},
		{name: "past the width", text: strings.Repeat("x", Width-1) + " y", first: 0, rest: 2, want: strings.Repeat("x", Width-1) + "\n  y\n"},
		{name: "a word wider than the width stands alone", text: "a " + strings.Repeat("x", Width+5) + " b", first: 0, rest: 0, want: "a\n" + strings.Repeat("x", Width+5) + "\nb\n"},
		{name: "a quoted command is kept whole", text: strings.Repeat("w ", 30) + "`statuscheck validate bundle/`, then", first: 0, rest: 0,
			want: strings.TrimSpace(strings.Repeat("w ", 30)) + "\n`statuscheck validate bundle/`, then\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, wrap(tc.text, tc.first, tc.rest))
		})
	}
}
