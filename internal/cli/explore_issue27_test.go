package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The items of issue 27 on simulate --explore, each a test named after
// its item.

// TestItem7NoHalfResultOnExit2: a --explore run that ends in an error
// (exit 2) prints nothing on stdout, neither the header nor the results of
// the policies searched before the error, and stderr names the bundle and
// says why.
func TestItem7NoHalfResultOnExit2(t *testing.T) {
	const oc = "testdata/bundles/handshake/operatorcondition"
	notADir := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(notADir, nil, 0o644))
	tests := []struct {
		name   string
		args   []string
		stderr []string
	}{
		{name: "--bridge on the OperatorCondition handshake", args: []string{"--bridge", "--bundle", oc},
			stderr: []string{"bundle " + oc + " with --bridge: ", "the bridge writes the OperatorCondition in the operator's stead"}},
		{name: "every policy", args: []string{"--bridge", "--bundle", oc, "--policy", "all"},
			stderr: []string{"bundle " + oc + " with --bridge: ", "not OperatorCondition"}},
		{name: "a bridge the bundle declares, on the OperatorCondition handshake", args: []string{"--bundle", "testdata/bundles/rules/bridge-operatorcondition-handshake/fail"},
			stderr: []string{"bundle testdata/bundles/rules/bridge-operatorcondition-handshake/fail, whose CSV declares the bridge (statuscheck.operatorframework.io/bridge: cool-operator/statuscheck-bridge): ", "in the operator's stead"}},
		// The first policy's search succeeds; writing its
		// counterexamples fails.
		{name: "an error after a search", args: []string{"--bundle", "testdata/bundles/handshake/none", "--depth", "4", "--write-counterexamples", filepath.Join(notADir, "cex")},
			stderr: []string{"writing counterexamples", "not a directory"}},
	}
	for _, tt := range tests {
		for _, output := range []string{"text", "json"} {
			t.Run(tt.name+"/"+output, func(t *testing.T) {
				code, stdout, stderr := run(t, append([]string{"simulate", "--explore", "-o", output}, tt.args...)...)
				assert.Equal(t, 2, code, stderr)
				assert.Empty(t, stdout, "no half result before an exit 2")
				for _, want := range tt.stderr {
					assert.Contains(t, stderr, want)
				}
			})
		}
	}
}

// exploreOut is what the bridge tests read of --explore -o json.
type exploreOut struct {
	Bridge     bool   `json:"bridge"`
	BridgeFrom string `json:"bridgeFrom"`
	Results    []struct {
		States          int `json:"states"`
		Counterexamples []struct {
			Violation struct {
				Rule string `json:"rule"`
			} `json:"violation"`
		} `json:"counterexamples"`
	} `json:"results"`
}

func exploreJSONOf(t *testing.T, args ...string) exploreOut {
	t.Helper()
	code, stdout, stderr := run(t, append([]string{"simulate", "--explore", "-o", "json"}, args...)...)
	require.Contains(t, []int{0, 1}, code, stderr)
	var out exploreOut
	require.NoError(t, json.Unmarshal([]byte(stdout), &out))
	require.Len(t, out.Results, 1)
	return out
}

// TestRoughEdgeExploreModelsTheDeclaredBridge: --explore --bundle models
// the bridge the bundle's CSV declares (statuscheck.operatorframework.io/bridge)
// without --bridge, and says where the bridge came from; the model is the
// one --bridge runs on the same bundle without the declaration. --bridge
// still adds the bridge to a bundle that declares none, and --faults goes
// with a declared bridge.
func TestRoughEdgeExploreModelsTheDeclaredBridge(t *testing.T) {
	const declares = "testdata/bundles/rules/bridge-rbac-broad/pass"
	depth := []string{"--depth", "10"}
	declared := exploreJSONOf(t, append([]string{"--bundle", declares}, depth...)...)
	assert.True(t, declared.Bridge)
	assert.Equal(t, "bundle", declared.BridgeFrom)

	// The same bundle without the declaration.
	dir := copyTree(t, declares)
	csv := filepath.Join(dir, "manifests", "cool-operator.clusterserviceversion.yaml")
	data, err := os.ReadFile(csv)
	require.NoError(t, err)
	line := "    statuscheck.operatorframework.io/bridge: cool-operator/statuscheck-bridge\n"
	require.Contains(t, string(data), line)
	require.NoError(t, os.WriteFile(csv, []byte(strings.Replace(string(data), line, "", 1)), 0o644))
	withFlag := exploreJSONOf(t, append([]string{"--bundle", dir, "--bridge"}, depth...)...)
	assert.True(t, withFlag.Bridge)
	assert.Equal(t, "--bridge", withFlag.BridgeFrom)
	assert.Equal(t, withFlag.Results, declared.Results, "the declared bridge is the bridge --bridge models")
	without := exploreJSONOf(t, append([]string{"--bundle", dir}, depth...)...)
	assert.False(t, without.Bridge)
	assert.Empty(t, without.BridgeFrom)
	assert.NotEqual(t, without.Results[0].States, declared.Results[0].States, "without a bridge the model is another")

	t.Run("text", func(t *testing.T) {
		code, stdout, stderr := run(t, append([]string{"simulate", "--explore", "--bundle", declares}, depth...)...)
		require.Contains(t, []int{0, 1}, code, stderr)
		assert.Contains(t, stdout, "\nbridge: declared by the bundle (statuscheck.operatorframework.io/bridge: cool-operator/statuscheck-bridge); statuscheck bridge writes the OperatorCondition and OLM reads it\n")
		_, stdout, _ = run(t, "simulate", "--explore", "--bundle", "testdata/bundles/handshake/none", "--bridge", "--depth", "4")
		assert.Contains(t, stdout, "\nbridge: --bridge; statuscheck bridge writes the OperatorCondition and OLM reads it\n")
		_, stdout, _ = run(t, "simulate", "--explore", "--bundle", "testdata/bundles/handshake/none", "--depth", "4")
		assert.NotContains(t, stdout, "bridge:")
	})
	t.Run("--faults with the declared bridge", func(t *testing.T) {
		out := exploreJSONOf(t, "--bundle", declares, "--depth", "6", "--faults", "stop")
		assert.Equal(t, "bundle", out.BridgeFrom)
		code, stdout, stderr := run(t, "simulate", "--explore", "--bundle", dir, "--faults", "stop")
		assert.Equal(t, 2, code)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, "--faults are the bridge's: they go with --bridge (bundle "+dir+" declares none)")
	})
}
