package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tokenBundle copies a handshake example bundle with the CRD's token
// fields retyped (field name: its description line in the CRD, new
// type).
func tokenBundle(t *testing.T, example string, retype map[string]string) string {
	t.Helper()
	var edits [][2]string
	for desc, typ := range retype {
		edits = append(edits, [2]string{"                description: " + desc + "\n                type: string\n",
			"                description: " + desc + "\n                type: " + typ + "\n"})
	}
	return editedCopy(t, filepath.Join("testdata/bundles/handshake", example), goodCRDFile, edits...)
}

const (
	requestDesc = "Token OLM writes to ask whether an upgrade may proceed."
	ackDesc     = "The upgrade request token the conditions answer."
)

// TestHandshakeTokenTypeIsDecidedFromTheCRD is issue 18, item 3: with the
// token's fields typed integer, validate passes (the operator's echo is
// not status-write-rejected), a replay's request: {} and a recording's
// integer token are written as integers (not write-rejected), --explore's
// OLM request too; a field typed neither integer nor string is one
// handshake-path-missing at the schema, and no run writes a token there.
func TestHandshakeTokenTypeIsDecidedFromTheCRD(t *testing.T) {
	both := map[string]string{requestDesc: "integer", ackDesc: "integer"}
	t.Run("validate: an integer ack is echoed as an integer", func(t *testing.T) {
		dir := tokenBundle(t, "request-annotation-ack", map[string]string{ackDesc: "integer"})
		assertCleanButTheVerdict(t, dir)
	})
	t.Run("validate: an integer request and ack", func(t *testing.T) {
		dir := tokenBundle(t, "request-spec", both)
		assertCleanButTheVerdict(t, dir)
	})
	t.Run("simulate: request {} on an integer field", func(t *testing.T) {
		dir := tokenBundle(t, "request-spec", both)
		code, out, errOut := run(t, "simulate", "--bundle", dir, "testdata/traces/handshake-request-spec.yaml")
		assert.Equal(t, 0, code, "%s%s", out, errOut)
		assert.NotContains(t, out, "write-rejected")
		assert.Contains(t, out, "no violations")
	})
	t.Run("simulate: a recording's integer token", func(t *testing.T) {
		dir := tokenBundle(t, "request-spec", both)
		snap := func(gen int, token, og string) string {
			tok := ""
			if token != "" {
				tok = "\n  upgradeRequest: " + token
			}
			return "apiVersion: cool.operators.corp/v1beta1\nkind: CoolOperator\nmetadata: {name: cool-operator, generation: " + strconv.Itoa(gen) +
				"}\nspec:\n  storageLayer: PostgreSQL" + tok + "\nstatus:\n  conditions:\n  - {type: Upgradeable, status: \"True\", reason: Idle, message: \"\", lastTransitionTime: \"2024-01-01T00:00:00Z\", observedGeneration: " + og + "}\n"
		}
		rec := filepath.Join(t.TempDir(), "rec.yaml")
		require.NoError(t, os.WriteFile(rec, []byte(snap(3, "", "3")+"---\n"+snap(4, "5", "3")+"---\n"+snap(4, "5", "4")), 0o644))
		code, out, errOut := run(t, "simulate", "--bundle", dir, rec)
		assert.NotContains(t, out+errOut, "write-rejected")
		assert.Contains(t, out, "request")
		assert.Equal(t, 0, code, "%s%s", out, errOut)
	})
	t.Run("explore: OLM's request on an integer field", func(t *testing.T) {
		dir := tokenBundle(t, "request-spec", both)
		code, out, errOut := run(t, "simulate", "--explore", "--depth", "8", "--bundle", dir)
		assert.NotContains(t, out, "write-rejected")
		assert.Equal(t, 0, code, "%s%s", out, errOut)
	})
	t.Run("validate: a boolean token field", func(t *testing.T) {
		dir := tokenBundle(t, "request-annotation-ack", map[string]string{ackDesc: "boolean"})
		code, out, _ := run(t, "validate", "-o", "text", dir)
		assert.Equal(t, 1, code, out)
		assert.Equal(t, 1, strings.Count(out, "error ")-strings.Count(out, "error upgrade-not-held-olm-v0:"), "one finding besides the verdict's, no follow-on status-write-rejected: %s", out)
		assert.Contains(t, out, "handshake-path-missing")
		assert.Contains(t, out, "types .status.observedUpgradeRequest (handshake.ack.statusPath) as boolean")
		assert.Contains(t, out, "cool.operators.corp_cooloperators.yaml:", "at the schema, in the CRD")
	})
	t.Run("simulate: a boolean token field is exit 2 naming the field", func(t *testing.T) {
		dir := tokenBundle(t, "request-spec", map[string]string{requestDesc: "boolean"})
		code, out, errOut := run(t, "simulate", "--bundle", dir, "testdata/traces/handshake-request-spec.yaml")
		assert.Equal(t, 2, code, "%s%s", out, errOut)
		assert.Empty(t, out)
		assert.Contains(t, errOut, ".spec.upgradeRequest (handshake.request.specPath) as boolean")
	})
}
