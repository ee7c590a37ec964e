package cluster

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestGateBadInput: gate's usage errors exit 2 before reaching a cluster.
func TestGateBadInput(t *testing.T) {
	none := filepath.Join(repoRoot, "testdata", "bundles", "handshake", "none")
	tests := []struct {
		name string
		args []string
		err  string
	}{
		{name: "no status source", args: nil, err: "gate needs the status source"},
		{name: "two sources", args: []string{none, "--source", "a/v1/K/n"}, err: "takes the status source once"},
		{name: "--crd without --source", args: []string{"--crd", none}, err: "--crd goes with --source"},
		{name: "a negative timeout", args: []string{none, "--timeout", "-1s"}, err: "--timeout cannot be negative"},
		{name: "--operator-deployment without its namespace", args: []string{none, "--operator-deployment", "cool-operator"}, err: `--operator-deployment takes NAMESPACE/NAME, not "cool-operator"`},
		{name: "--operator-deployment with a path", args: []string{none, "--operator-deployment", "ns/a/b"}, err: "--operator-deployment takes NAMESPACE/NAME"},
		{name: "--operator-deployment with a bad namespace", args: []string{none, "--operator-deployment", "Cool_NS/cool-operator"}, err: `--operator-deployment: namespace "Cool_NS": a lowercase RFC 1123 label`},
		{name: "--operator-deployment with a bad name", args: []string{none, "--operator-deployment", "cool/Cool Operator"}, err: `--operator-deployment: Deployment name "Cool Operator": a lowercase RFC 1123 subdomain`},
		{name: "no kubeconfig", args: []string{none, "--kubeconfig", filepath.Join(t.TempDir(), "none")}, err: "no kubeconfig"},
		{name: "a bad --source", args: []string{"--source", "nope", "--kubeconfig", filepath.Join(t.TempDir(), "none")}, err: "no kubeconfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, append([]string{"gate"}, tt.args...)...)
			assert.Equal(t, 2, code)
			assert.Empty(t, stdout)
			assert.Contains(t, stderr, tt.err)
		})
	}
}

// statusServer answers discovery of cool.operators.corp/v1beta1 with
// discoveryCode and every other request (the operator's Deployment among
// them) with a 404 for the object, as an apiserver does.
func statusServer(t *testing.T, discoveryCode int) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		code, reason, details := http.StatusNotFound, metav1.StatusReasonNotFound, `{"name":"cool-operator","group":"apps","kind":"deployments"}`
		if strings.HasPrefix(r.URL.Path, "/apis/cool.operators.corp/") {
			code, reason, details = discoveryCode, metav1.StatusReason(http.StatusText(discoveryCode)), `{}`
		}
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"%s","reason":%q,"details":%s,"code":%d}`,
			http.StatusText(code), reason, details, code)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestGateFirstInstallOnlyWhenNotServed: --operator-deployment reads a
// missing Deployment as a first install only when the cluster says it
// does not serve the kind (404); discovery that fails (503, 429, 500)
// with the Deployment missing is exit 2, never the first install's 0.
func TestGateFirstInstallOnlyWhenNotServed(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBECONFIG", "")
	none := filepath.Join(repoRoot, "testdata", "bundles", "handshake", "none")
	tests := []struct {
		name      string
		discovery int
		code      int
		stdout    string
		stderr    string
	}{
		{name: "not served (404): a first install", discovery: http.StatusNotFound, code: 0,
			stdout: "allows the upgrade: a first install: Deployment cool-system/cool-operator does not exist", stderr: "note: read as a first install"},
		{name: "discovery answers 503", discovery: http.StatusServiceUnavailable, code: 2, stderr: "Service Unavailable"},
		{name: "discovery answers 429", discovery: http.StatusTooManyRequests, code: 2, stderr: "Too Many Requests"},
		{name: "discovery answers 500", discovery: http.StatusInternalServerError, code: 2, stderr: "Internal Server Error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kc := writeKubeconfig(t, statusServer(t, tt.discovery))
			code, stdout, stderr := run(t, "gate", none, "--kubeconfig", kc, "-n", "cool-system",
				"--operator-deployment", "cool-system/cool-operator", "--timeout", "300ms", "--interval", "100ms")
			assert.Equal(t, tt.code, code, "stdout: %s\nstderr: %s", stdout, stderr)
			assert.Contains(t, stderr, tt.stderr)
			if tt.code == 0 {
				assert.Contains(t, stdout, tt.stdout)
			} else {
				assert.Empty(t, stdout)
				assert.NotContains(t, stderr, "first install")
			}
		})
	}
}
