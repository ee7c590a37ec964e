package cluster

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/internal/cli"
)

// repoRoot is the checkout, where a user runs statuscheck from.
var repoRoot, _ = filepath.Abs("../../..")

// run runs statuscheck-cluster's tree (every command, the cluster ones
// linked) from the repository root, as a user in a checkout would.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Chdir(repoRoot)
	var out, errb bytes.Buffer
	code = cli.Run(args, &out, &errb, cli.Options{Cluster: Commands})
	return code, out.String(), errb.String()
}

// tree is statuscheck-cluster's whole command tree.
func tree() *cobra.Command {
	return cli.Command(io.Discard, io.Discard, cli.Options{Cluster: Commands})
}

// TestCommandsAreTheListedOnes: the cluster commands made here are
// cli.ClusterCommands, in its order, with its usage lines and help, which
// statuscheck shows for them without linking this package.
func TestCommandsAreTheListedOnes(t *testing.T) {
	cmds := Commands(cli.Env{Stdout: io.Discard, Stderr: io.Discard, Exit: func(int) {}})
	require.Len(t, cmds, len(cli.ClusterCommands))
	for i, info := range cli.ClusterCommands {
		assert.Equal(t, info.Name, cmds[i].Name())
		assert.Equal(t, info.Use, cmds[i].Use)
		assert.Equal(t, info.Short, cmds[i].Short)
	}
}

// TestRecordWithAYAMLErrorSaysWhatValidateSays: record on a bundle whose
// CSV has a YAML error stops with validate's finding, and nothing on
// stdout.
func TestRecordWithAYAMLErrorSaysWhatValidateSays(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join(repoRoot, "testdata/bundles/good"))))
	csv := filepath.Join(dir, "manifests", "cool-operator.clusterserviceversion.yaml")
	require.NoError(t, os.Chmod(csv, 0o644))
	f, err := os.OpenFile(csv, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("apiVersion: v1\nkind: [\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	code, stdout, stderr := run(t, "record", "--bundle", dir)
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, csv+":77:1: error manifest-parse: invalid YAML", "what validate says")
	assert.NotContains(t, stderr, "no ClusterServiceVersion")
}
