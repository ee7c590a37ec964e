package cli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExploreFaultsFlag: --faults takes the faults' names (or all),
// refuses an unknown one naming the known ones, and goes with --explore
// --bridge; the faults it names are the ones the search runs, in the
// output.
func TestExploreFaultsFlag(t *testing.T) {
	usage := []struct {
		name   string
		args   []string
		stderr string
	}{
		{name: "an unknown fault", args: []string{"simulate", "--explore", "--bridge", "--bundle", "testdata/bundles/handshake/none", "--faults", "unknown,crash"},
			stderr: `--faults: unknown fault "crash" (want unknown, replica, restart, revert, recreate, other-writer, duplicate, stop, or all)`},
		{name: "not a fault's spelling", args: []string{"simulate", "--explore", "--bridge", "--bundle", "testdata/bundles/handshake/none", "--faults", "otherWriter"},
			stderr: `unknown fault "otherWriter"`},
		{name: "without the bridge", args: []string{"simulate", "--explore", "--bundle", "testdata/bundles/handshake/none", "--faults", "all"},
			stderr: "--faults are the bridge's: they go with --bridge"},
		{name: "without --explore", args: []string{"simulate", "--faults", "stop", "testdata/traces/seed.yaml"},
			stderr: "go with --explore"},
	}
	for _, tt := range usage {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tt.args...)
			assert.Equal(t, 2, code)
			assert.Empty(t, stdout)
			assert.Contains(t, stderr, tt.stderr)
		})
	}
	t.Run("the faults run", func(t *testing.T) {
		base := []string{"simulate", "--explore", "--bridge", "--bundle", "testdata/bundles/handshake/request-spec", "--depth", "8"}
		args := append(append([]string(nil), base...), "--faults", " stop, unknown")
		code, stdout, _ := run(t, append(append([]string(nil), args...), "-o", "json")...)
		require.Contains(t, []int{0, 1}, code)
		var out struct {
			Bridge  bool     `json:"bridge"`
			Faults  []string `json:"faults"`
			Results []struct {
				States int `json:"states"`
			} `json:"results"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &out))
		assert.True(t, out.Bridge)
		assert.Equal(t, []string{"unknown", "stop"}, out.Faults, "in the faults' order")
		require.Len(t, out.Results, 1)
		_, plain, _ := run(t, append(append([]string(nil), base...), "-o", "json")...)
		var without struct {
			Results []struct {
				States int `json:"states"`
			} `json:"results"`
		}
		require.NoError(t, json.Unmarshal([]byte(plain), &without))
		assert.Greater(t, out.Results[0].States, without.Results[0].States, "the faults add states")
		_, text, _ := run(t, args...)
		assert.Contains(t, text, "bridge faults: unknown, stop\n")
	})
}

// TestMaskMeasured: the fault table's time and states/s are masked in the
// staleness check, and nothing else.
func TestMaskMeasured(t *testing.T) {
	row := func(states, time, rate string) string {
		return "| `none` | none | olm | " + states + ", 16 | " + time + " | " + rate + " | `unsafe-approval` (2: user update, olm check) |"
	}
	assert.Equal(t, maskMeasured(row("1647031", "27.1 s", "60,774")), maskMeasured(row("1647031", "33.0 s", "49,910")))
	assert.NotEqual(t, maskMeasured(row("1647031", "27.1 s", "60,774")), maskMeasured(row("1647032", "27.1 s", "60,774")))
	assert.Equal(t, "| `none` | none | olm | 905, 16 | `upgrade-while-blocked` (3) |", maskMeasured("| `none` | none | olm | 905, 16 | `upgrade-while-blocked` (3) |"))
}

// TestExploreStartUpFlag: --start-up starts the search in the bridge's
// start-up window. A spec request the bridge serves has no violation at
// the default depth; from the empty OperatorCondition OLM made, OLM lets
// the upgrade through with no answer to its request (exit 1). It goes
// with --explore and the bridge only.
func TestExploreStartUpFlag(t *testing.T) {
	base := []string{"simulate", "--explore", "--bridge", "--bundle", "testdata/bundles/handshake/request-spec"}
	code, text, stderr := run(t, base...)
	require.Equal(t, 0, code, "%s%s", text, stderr)
	assert.NotContains(t, text, "start-up window")

	code, text, stderr = run(t, append(append([]string(nil), base...), "--start-up")...)
	require.Equal(t, 1, code, "%s%s", text, stderr)
	assert.Contains(t, text, "start-up window: the traces start before the bridge's first entry")
	assert.Contains(t, text, "unacknowledged-upgrade")

	code, stdout, _ := run(t, append(append([]string(nil), base...), "--start-up", "-o", "json")...)
	require.Equal(t, 1, code)
	var out struct {
		StartUp bool `json:"startUp"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &out))
	assert.True(t, out.StartUp)

	for _, tt := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{name: "without the bridge", args: []string{"simulate", "--explore", "--bundle", "testdata/bundles/handshake/none", "--start-up"},
			stderr: "--start-up is the bridge's start-up window: it goes with --bridge"},
		{name: "without --explore", args: []string{"simulate", "--start-up", "testdata/traces/seed.yaml"},
			stderr: "go with --explore"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tt.args...)
			assert.Equal(t, 2, code)
			assert.Empty(t, stdout)
			assert.Contains(t, stderr, tt.stderr)
		})
	}
}
