package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/result"
)

// TestStatuscheckDoesNotLinkTheClusterClients: the binary a pre-commit
// hook starts once a bundle does not link controller-runtime's manager,
// client-go's dynamic client, nor its discovery client and the typed
// clients' scheme that comes with it, nor operator-registry's declcfg
// (file-based catalogs), whose package initialisation every process pays;
// the cluster commands and the reading of catalogs are in
// statuscheck-cluster.
func TestStatuscheckDoesNotLinkTheClusterClients(t *testing.T) {
	heavy := []string{"sigs.k8s.io/controller-runtime/pkg/manager", "sigs.k8s.io/controller-runtime/pkg/client/apiutil",
		"sigs.k8s.io/controller-runtime/pkg/internal/controller/metrics", "k8s.io/client-go/dynamic",
		"github.com/statuscheck/statuscheck/internal/cli/cluster", "github.com/statuscheck/statuscheck/pkg/bridge/controller",
		"k8s.io/client-go/discovery", "k8s.io/client-go/kubernetes/scheme", "github.com/statuscheck/statuscheck/pkg/source/served",
		"github.com/operator-framework/operator-registry/alpha/declcfg", "github.com/statuscheck/statuscheck/pkg/catalog/fbc"}
	light, full := testutil.Deps(t, "./cmd/statuscheck"), testutil.Deps(t, "./cmd/statuscheck-cluster")
	for _, p := range heavy {
		assert.False(t, slices.Contains(light, p), "cmd/statuscheck links %s", p)
		assert.True(t, slices.Contains(full, p), "cmd/statuscheck-cluster links %s (the test can fail)", p)
	}
}

// TestClusterCommandsRunInStatuscheckCluster: statuscheck lists the
// cluster commands with their help and runs them in statuscheck-cluster,
// from its own directory: their help, their flags, their completion, their
// exit codes.
func TestClusterCommandsRunInStatuscheckCluster(t *testing.T) {
	bin := testutil.Binary(t)
	// Never from PATH: one there is not the one beside it.
	env := impostorOnPath(t)
	code, stdout, _ := runBinary(t, bin, env, "--help")
	require.Equal(t, 0, code)
	for _, c := range ClusterCommands {
		assert.Regexp(t, `\n  `+c.Name+` +`+regexp.QuoteMeta(c.Short)+`\n`, stdout)
	}

	code, stdout, stderr := runBinary(t, bin, env, "record", "--help")
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "statuscheck record [flags]")
	assert.Contains(t, stdout, "--kubeconfig FILE")
	// statuscheck help record is the same help.
	code, help, _ := runBinary(t, bin, env, "help", "record")
	assert.Equal(t, 0, code)
	assert.Equal(t, stdout, help)
	// Through a symbolic link elsewhere, it is still the one beside the
	// binary.
	link := filepath.Join(t.TempDir(), "statuscheck")
	require.NoError(t, os.Symlink(bin, link))
	code, help, _ = runBinary(t, link, env, "record", "--help")
	assert.Equal(t, 0, code)
	assert.Equal(t, stdout, help)

	// A usage error of the bridge's own flags: its message, exit 2.
	code, stdout, stderr = runBinary(t, bin, env, "bridge", "--resync=-1s")
	assert.Equal(t, result.ExitFailure, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "statuscheck: --resync cannot be negative (-1s)")
	assert.Contains(t, stderr, "Run 'statuscheck bridge --help' for usage.")

	// An unknown flag is refused by the command that has the flags.
	code, _, stderr = runBinary(t, bin, env, "gate", "--no-such-flag")
	assert.Equal(t, result.ExitFailure, code)
	assert.Contains(t, stderr, "unknown flag: --no-such-flag")

	// The shell's completion of a cluster command's flags.
	code, stdout, _ = runBinary(t, bin, env, "__complete", "record", "--kube")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "--kubeconfig")

	// statuscheck-cluster has statuscheck's own commands too.
	cluster := filepath.Join(filepath.Dir(bin), ClusterBinary)
	code, stdout, _ = runBinary(t, cluster, nil, "validate", filepath.Join(repoRoot, "testdata", "bundles", "protected"))
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "cool-operator.v0.2.0 (")

	// A file-based catalog among validate's paths: the whole command line
	// runs in statuscheck-cluster, flags and the other paths with it.
	args := []string{"validate", "-o", "json", "--fail-on", "warning", filepath.Join(repoRoot, "testdata", "bundles", "protected"), filepath.Join(repoRoot, "testdata", "catalog")}
	wantCode, want, wantErr := runBinary(t, cluster, nil, args...)
	code, stdout, stderr = runBinary(t, bin, env, args...)
	assert.Equal(t, result.ExitFindings, wantCode, "the catalog's bundles have findings (the test can fail)")
	assert.Equal(t, wantCode, code)
	assert.Equal(t, want, stdout)
	assert.Equal(t, wantErr, stderr)
	assert.Contains(t, stdout, "cool-operator.v0.3.0", "the catalog's bundles are in the report")
}

// TestClusterCommandWithoutStatuscheckCluster: a statuscheck installed
// without statuscheck-cluster beside it says where it looked and how to
// install it, exit 2, nothing on stdout, and never runs one from PATH;
// its own commands still run.
func TestClusterCommandWithoutStatuscheckCluster(t *testing.T) {
	dir := t.TempDir()
	alone := filepath.Join(dir, "statuscheck")
	data, err := os.ReadFile(testutil.Binary(t))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(alone, data, 0o755))
	env := impostorOnPath(t)
	notBeside := "statuscheck-cluster is not beside statuscheck (" + dir + "): the cluster commands (record, bridge, gate) and the validation of file-based catalogs run in it; install it there (GOBIN=" + dir + " go install github.com/statuscheck/statuscheck/cmd/statuscheck-cluster@VERSION; make build writes both to bin/)\n"
	missing := "statuscheck: " + notBeside
	for _, args := range [][]string{{"record", "--help"}, {"help", "record"}, {"bridge"}, {"gate", "x"}, {"__complete", "gate", "--"}} {
		code, stdout, stderr := runBinary(t, alone, env, args...)
		assert.Equal(t, result.ExitFailure, code, "%v", args)
		assert.Empty(t, stdout)
		assert.Equal(t, missing, stderr, "%v", args)
	}
	code, _, _ := runBinary(t, alone, env, "validate", filepath.Join(repoRoot, "testdata", "bundles", "protected"))
	assert.Equal(t, 0, code)
	// A file-based catalog is validated there too: named, exit 2, and no
	// half a report for the paths before it.
	cat := filepath.Join(repoRoot, "testdata", "catalog")
	code, stdout, stderr := runBinary(t, alone, env, "validate", filepath.Join(repoRoot, "testdata", "bundles", "protected"), cat)
	assert.Equal(t, result.ExitFailure, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "statuscheck: "+cat+" is a file-based catalog: "+notBeside, stderr)

	// A statuscheck-cluster that is statuscheck itself (a link, a copy)
	// would start itself without end: the second forward is refused.
	for name, place := range map[string]func(string) error{
		"a link": func(p string) error { return os.Symlink(alone, p) },
		"a copy": func(p string) error { return os.WriteFile(p, data, 0o755) },
	} {
		require.NoError(t, place(filepath.Join(dir, ClusterBinary)), name)
		for _, args := range [][]string{{"validate", cat}, {"record", "--help"}} {
			code, stdout, stderr := runBinary(t, alone, env, args...)
			assert.Equal(t, result.ExitFailure, code, "%s: %v", name, args)
			assert.Empty(t, stdout, "%s: %v", name, args)
			assert.Contains(t, stderr, filepath.Join(dir, ClusterBinary)+" gave the command back to statuscheck: it is not statuscheck-cluster", "%s: %v", name, args)
		}
		require.NoError(t, os.Remove(filepath.Join(dir, ClusterBinary)))
	}

	// Something beside it that is not a file is named.
	require.NoError(t, os.Mkdir(filepath.Join(dir, ClusterBinary), 0o755))
	code, stdout, stderr = runBinary(t, alone, env, "record")
	assert.Equal(t, result.ExitFailure, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "statuscheck: "+filepath.Join(dir, ClusterBinary)+" is not a file (d---------): the cluster commands (record, bridge, gate) and the validation of file-based catalogs run in it\n", stderr)
}

// TestClusterCommandsInProcess: Main, which links neither the cluster
// commands nor the reading of catalogs, refuses them (exit 2) instead of
// starting a binary.
func TestClusterCommandsInProcess(t *testing.T) {
	code, stdout, stderr := run(t, "record", "--bundle", "testdata/bundles/good")
	assert.Equal(t, result.ExitFailure, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "statuscheck: record: this build of statuscheck runs it in statuscheck-cluster, which it cannot start\n", stderr)

	t.Chdir(repoRoot)
	var out, errb bytes.Buffer
	code = Main([]string{"validate", "testdata/bundles/good", "testdata/catalog"}, &out, &errb)
	assert.Equal(t, result.ExitFailure, code)
	assert.Empty(t, out.String())
	assert.Equal(t, "statuscheck: testdata/catalog is a file-based catalog: this build of statuscheck validates catalogs in statuscheck-cluster, which it cannot start\n", errb.String())
}

// TestCatalogForwardsTheWholeCommandLine: the command line Run was given,
// global flags and all, is what runs in statuscheck-cluster, once however
// many catalogs there are, and its exit code is the command's; a tree
// made by Command, which has no command line, refuses instead of running
// statuscheck-cluster without arguments.
func TestCatalogForwardsTheWholeCommandLine(t *testing.T) {
	t.Chdir(repoRoot)
	var calls [][]string
	forward := func(args []string) (int, error) {
		calls = append(calls, args)
		return 7, nil
	}
	args := []string{"-o", "json", "validate", "--fail-on", "info", "testdata/bundles/good", "testdata/catalog", "testdata/catalog/cool-operator/catalog.json"}
	var out, errb bytes.Buffer
	code := Run(args, &out, &errb, Options{Forward: forward})
	assert.Equal(t, 7, code, "statuscheck-cluster's exit code")
	assert.Equal(t, [][]string{args}, calls)
	assert.Empty(t, out.String(), "nothing of this run is printed")
	assert.Empty(t, errb.String())

	// No catalog: nothing is forwarded.
	calls = nil
	code = Run([]string{"validate", "testdata/bundles/protected"}, &out, &errb, Options{Forward: forward})
	assert.Equal(t, 0, code)
	assert.Empty(t, calls)

	calls = nil
	out.Reset()
	errb.Reset()
	root := Command(&out, &errb, Options{Forward: forward})
	root.SetArgs([]string{"validate", "testdata/catalog"})
	root.SilenceErrors = true
	err := root.Execute()
	require.Error(t, err)
	assert.Equal(t, "testdata/catalog is a file-based catalog, validated in statuscheck-cluster: run the command with cli.Run, which has its command line", err.Error())
	assert.Empty(t, calls)
	assert.Empty(t, out.String())
}

// impostorOnPath is an environment whose PATH holds only a
// statuscheck-cluster that is not statuscheck's (it prints IMPOSTOR and
// exits 7), to show that none is taken from PATH.
func impostorOnPath(t *testing.T) []string {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, ClusterBinary), []byte("#!/bin/sh\necho IMPOSTOR\nexit 7\n"), 0o755))
	return []string{"PATH=" + dir}
}
