package cluster

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/statuscheck/statuscheck/pkg/result"
)

// TestBridgeUsage: what `statuscheck bridge` refuses before it starts is
// exit 2 with the usage hint; a status source it cannot read names its
// path, before any connection.
func TestBridgeUsage(t *testing.T) {
	kc := writeKubeconfig(t, closedPort(t))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "--crd without --source", args: []string{"--crd", "x.yaml"}, want: "if any flags in the group [crd source] are set they must all be set"},
		{name: "--source without --crd", args: []string{"--source", "a.io/v1/K/n"}, want: "if any flags in the group [crd source] are set they must all be set"},
		{name: "--bundle with --crd", args: []string{"--bundle", "testdata/bundles/good", "--crd", "x.yaml", "--source", "a.io/v1/K/n"}, want: "none of the others can be"},
		{name: "a negative resync", args: []string{"--resync", "-1s"}, want: "--resync cannot be negative (-1s)"},
		{name: "an argument", args: []string{"extra"}, want: `unknown command "extra"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, append([]string{"bridge", "--kubeconfig", kc, "-n", "ns"}, tc.args...)...)
			assert.Equal(t, result.ExitFailure, code)
			assert.Empty(t, stdout)
			assert.Contains(t, stderr, tc.want)
			assert.Contains(t, stderr, "Run 'statuscheck bridge --help' for usage.")
		})
	}
	t.Run("a bundle that is not there", func(t *testing.T) {
		code, stdout, stderr := run(t, "bridge", "--kubeconfig", kc, "-n", "ns", "--operator-condition-name", "cool.v1", "--bundle", "testdata/nope")
		assert.Equal(t, result.ExitFailure, code)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, "testdata/nope")
		assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
	})
}
