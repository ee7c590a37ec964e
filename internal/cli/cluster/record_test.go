package cluster

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/result"
)

// writeKubeconfig writes a kubeconfig whose current context reaches
// server.
func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: server}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u", Namespace: "from-context"}
	kc.CurrentContext = "c"
	p := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, p))
	return p
}

// forbiddingServer answers every request as an apiserver does to a user
// RBAC does not let list the resource.
func forbiddingServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",` +
			`"message":"cooloperators.cool.operators.corp is forbidden: User \"dev\" cannot list resource \"cooloperators\" in API group \"cool.operators.corp\" in the namespace \"cool\"",` +
			`"reason":"Forbidden","details":{"group":"cool.operators.corp","kind":"cooloperators"},"code":403}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string { return "https://" + testutil.FreeAddr(t) }

// TestRecordErrors: what a user meets before anything is recorded is one
// line, exit 2. (The real server's answers, a kind it does not serve
// among them, are in internal/conformance's record tests.)
func TestRecordErrors(t *testing.T) {
	home := t.TempDir() // no ~/.kube/config here
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", "")
	source := []string{"--bundle", "testdata/bundles/good"}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{
			name: "no kubeconfig at all",
			args: source,
			want: "statuscheck: no kubeconfig: the default path " + clientcmd.RecommendedHomeFile + " does not exist (pass --kubeconfig FILE, set KUBECONFIG, or create ~/.kube/config)\n",
		},
		{
			name: "--kubeconfig names a missing file",
			args: append([]string{"--kubeconfig", filepath.Join(home, "nope")}, source...),
			want: "statuscheck: no kubeconfig: --kubeconfig " + filepath.Join(home, "nope") + " does not exist (pass --kubeconfig FILE, set KUBECONFIG, or create ~/.kube/config)\n",
		},
		{
			name: "an unknown --context",
			args: append([]string{"--kubeconfig", "KUBECONFIG", "--context", "prod"}, source...),
			want: "statuscheck: --context prod is not in the kubeconfig ",
		},
		{
			name: "a server nobody answers at",
			args: append([]string{"--kubeconfig", "UNREACHABLE"}, source...),
			want: "statuscheck: cannot reach the cluster at UNREACHABLE_HOST: ",
		},
		{
			name: "RBAC forbids the list",
			args: append([]string{"--kubeconfig", "FORBIDDING"}, source...),
			want: "statuscheck: the cluster forbids this: list cooloperators.cool.operators.corp in namespace from-context (",
		},
		{
			name: "KUBECONFIG is read as kubectl reads it",
			args: source,
			env:  map[string]string{"KUBECONFIG": "FORBIDDING"},
			want: "statuscheck: the cluster forbids this: list cooloperators.cool.operators.corp in namespace from-context (",
		},
		{
			name: "-n names the namespace",
			args: append([]string{"--kubeconfig", "FORBIDDING", "-n", "cool"}, source...),
			want: "statuscheck: the cluster forbids this: list cooloperators.cool.operators.corp in namespace cool (",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unreachable := closedPort(t)
			paths := map[string]string{
				"KUBECONFIG":  writeKubeconfig(t, "https://127.0.0.1:1"),
				"UNREACHABLE": writeKubeconfig(t, unreachable),
				"FORBIDDING":  writeKubeconfig(t, forbiddingServer(t)),
			}
			args := append([]string{"record"}, tc.args...)
			for i, a := range args {
				if p, ok := paths[a]; ok {
					args[i] = p
				}
			}
			for k, v := range tc.env {
				t.Setenv(k, paths[v])
			}
			want := strings.ReplaceAll(tc.want, "UNREACHABLE_HOST", unreachable)
			code, stdout, stderr := run(t, args...)
			assert.Equal(t, result.ExitFailure, code, stderr)
			assert.Empty(t, stdout, "nothing recorded, nothing written")
			assert.True(t, strings.HasPrefix(stderr, want), "stderr:\n%s\nwant prefix:\n%s", stderr, want)
			assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
		})
	}
}

func TestRecordUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "no status source", args: nil, want: "record needs the status source: --bundle, or --crd with --source"},
		{name: "negative duration", args: []string{"--bundle", "testdata/bundles/good", "--duration", "-1s"}, want: "--duration cannot be negative"},
		{name: "--crd without --source", args: []string{"--crd", "x.yaml"}, want: "if any flags in the group [crd source] are set they must all be set"},
		{name: "a TRACE argument", args: []string{"--bundle", "testdata/bundles/good", "trace.yaml"}, want: `unknown command "trace.yaml"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := run(t, append([]string{"record"}, tc.args...)...)
			assert.Equal(t, result.ExitFailure, code)
			assert.Contains(t, stderr, tc.want)
			assert.Contains(t, stderr, "Run 'statuscheck record --help' for usage.")
		})
	}
}

// TestRecordLeavesNoFileOnABadStart: -o is created by the first write,
// once the cluster has answered, so a run that cannot start leaves no
// empty file, and an older recording under that name is not lost.
func TestRecordLeavesNoFileOnABadStart(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "trace.yaml")
	old := filepath.Join(dir, "old.yaml")
	require.NoError(t, os.WriteFile(old, []byte("an older recording\n"), 0o644))
	kc := writeKubeconfig(t, closedPort(t))
	for _, o := range []string{out, old} {
		code, _, stderr := run(t, "record", "--kubeconfig", kc, "--bundle", "testdata/bundles/good", "-o", o)
		assert.Equal(t, result.ExitFailure, code)
		assert.Contains(t, stderr, "cannot reach the cluster")
	}
	_, err := os.Stat(out)
	assert.True(t, os.IsNotExist(err), "no trace file: %v", err)
	data, err := os.ReadFile(old)
	require.NoError(t, err)
	assert.Equal(t, "an older recording\n", string(data))
}
