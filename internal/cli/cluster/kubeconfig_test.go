package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRecordKubeconfigProblemsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	noCurrent := filepath.Join(dir, "no-current")
	require.NoError(t, os.WriteFile(noCurrent, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://127.0.0.1:1\"}\ncontexts:\n- name: dev\n  context: {cluster: c, user: u}\n- name: prod\n  context: {cluster: c, user: u}\nusers:\n- name: u\n  user: {}\n"), 0o600))
	bundleArgs := []string{"record", "--bundle", "testdata/bundles/good"}
	tests := []struct {
		name       string
		kubeconfig string
		args       []string
		want       string
	}{
		{name: "KUBECONFIG names a file that does not exist", kubeconfig: filepath.Join(dir, "nonexistent"),
			want: "no kubeconfig: KUBECONFIG " + filepath.Join(dir, "nonexistent") + " does not exist (pass --kubeconfig FILE, set KUBECONFIG, or create ~/.kube/config)"},
		{name: "an empty kubeconfig", kubeconfig: empty,
			want: "the kubeconfig " + empty + " (from KUBECONFIG) is empty: no clusters, users or contexts"},
		{name: "no current context", kubeconfig: noCurrent,
			want: "the kubeconfig " + noCurrent + " (from KUBECONFIG) has no current-context: pass --context NAME (it has dev, prod)"},
		{name: "-o in a directory that does not exist, before connecting", kubeconfig: noCurrent, args: []string{"-o", filepath.Join(dir, "missing", "x.yaml")},
			want: "-o " + filepath.Join(dir, "missing", "x.yaml") + ": the directory " + filepath.Join(dir, "missing") + " does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tt.kubeconfig)
			code, stdout, stderr := run(t, append(bundleArgs, tt.args...)...)
			assert.Equal(t, 2, code)
			assert.Empty(t, stdout)
			assert.Equal(t, "statuscheck: "+tt.want, strings.SplitN(strings.TrimSpace(stderr), "\n", 2)[0])
			assert.NotContains(t, stderr, "no kubeconfig: pass")
		})
	}
}
