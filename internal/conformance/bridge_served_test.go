package conformance

import (
	"bytes"
	"context"
	"crypto/tls"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/kubetest"
	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/bridge"
	"github.com/statuscheck/statuscheck/pkg/bridge/sidecar"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/source"
	"github.com/statuscheck/statuscheck/pkg/source/served"
)

// installCoolTyped installs the good CRD with the schema of
// spec.upgradeRequest and status.observedUpgradeRequest (the handshake's
// token fields) replaced by field.
func installCoolTyped(t *testing.T, field apiextv1.JSONSchemaProps) coolCRD {
	t.Helper()
	crd := testutil.ReadCRD(t, goodCRD)
	props := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties
	for _, p := range [][2]string{{"spec", "upgradeRequest"}, {"status", "observedUpgradeRequest"}} {
		parent := props[p[0]]
		require.Contains(t, parent.Properties, p[1])
		parent.Properties[p[1]] = field
		props[p[0]] = parent
	}
	return coolCRD{in: install(t, crd)}
}

var (
	integerField     = apiextv1.JSONSchemaProps{Type: "integer", Format: "int64"}
	intOrStringField = apiextv1.JSONSchemaProps{XIntOrString: true, AnyOf: []apiextv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}}}
)

// TestServedTokensOnARealServer: served.Resolve finds the kind's
// resource and scope by discovery, and the token types it reads from the
// schema the apiserver serves (OpenAPI v3 discovery, served.Tokens)
// are those the CRD's own schema gives (crd.Version.HandshakeTokens), for
// each type a token field may have, on both sides of the handshake.
func TestServedTokensOnARealServer(t *testing.T) {
	tests := []struct {
		name  string
		field apiextv1.JSONSchemaProps
		want  contract.TokenType
	}{
		{name: "integer", field: integerField, want: contract.TokenInteger},
		{name: "string", field: apiextv1.JSONSchemaProps{Type: "string"}, want: contract.TokenString},
		{name: "int-or-string", field: intOrStringField, want: contract.TokenString},
	}
	srv := kubetest.Get(t)
	dc, err := discovery.NewDiscoveryClientForConfig(srv.Config)
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cool := installCoolTyped(t, tt.field)
			src := &v1alpha1.StatusSource{APIVersion: cool.in.APIVersion("v1beta1"), Kind: "CoolOperator", Name: "cool-operator",
				Handshake: &v1alpha1.Handshake{Mode: v1alpha1.HandshakeRequestAck, Request: &v1alpha1.HandshakeRequest{SpecPath: ".spec.upgradeRequest"},
					Ack: &v1alpha1.HandshakeAck{StatusPath: ".status.observedUpgradeRequest"}}}
			// The apiserver publishes a new CRD's schema asynchronously.
			var got *source.Context
			require.Eventually(t, func() bool {
				got, err = served.Resolve(dc, src, "test")
				return err == nil
			}, 20*time.Second, 100*time.Millisecond, "the served schema: %v", err)
			assert.Equal(t, contract.Tokens{Request: tt.want, Ack: tt.want}, got.Tokens)
			assert.Equal(t, cool.in.GVR("v1beta1"), got.GVR())
			assert.True(t, got.Namespaced)
		})
	}
}

// bridgeProcess runs `statuscheck bridge` for the cluster's OperatorCondition
// cool.v1 with no flag naming the status source, as the generated sidecar
// runs (env adds to its environment), until the test ends: then SIGTERM,
// and exit 0 is expected. It returns the process's stderr so far.
func bridgeProcess(t *testing.T, c *cluster, env []string, args ...string) func() string {
	t.Helper()
	cmd := exec.Command(testutil.Binary(t), append([]string{"bridge", "--kubeconfig", kubetest.Get(t).Kubeconfig, "-n", c.ns,
		"--operator-condition-name", "cool.v1", "--resync", "200ms", "--metrics-bind-address", "0", "--health-probe-bind-address", "0"}, args...)...)
	var mu sync.Mutex
	var stderr bytes.Buffer
	cmd.Stderr = writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return stderr.Write(p)
	})
	cmd.Env = append(os.Environ(), env...)
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	read := func() string {
		mu.Lock()
		defer mu.Unlock()
		return stderr.String()
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			assert.NoError(t, err, "exit 0 on SIGTERM: %s", read())
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("no exit after SIGTERM: %s", read())
		}
		if t.Failed() {
			t.Logf("statuscheck bridge:\n%s", read())
		}
	})
	return read
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// annotateCSV writes the status-source annotation on a CSV, as the
// bundle's CSV carries it.
func (c *cluster) annotateCSV(name string, src *v1alpha1.StatusSource) {
	c.t.Helper()
	csv, err := c.csvs().Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(c.t, err)
	csv.SetAnnotations(map[string]string{v1alpha1.AnnotationKey: src.Marshal()})
	_, err = c.csvs().Update(context.Background(), csv, metav1.UpdateOptions{FieldManager: "olm"})
	require.NoError(c.t, err)
}

// TestDefect7IntegerTokenFromServedSchema: the generated sidecar's mode
// (no CRD, the status source from the running CSV) with an integer-typed
// request field. The bridge types its token from the schema the cluster
// serves, so its request is the integer 1, which the apiserver accepts,
// and the operator's fresh answer lets the upgrade through. Typed as a
// string (the code before), every request is refused and the entry stays
// NoUpgradeRequested for ever.
func TestDefect7IntegerTokenFromServedSchema(t *testing.T) {
	c := setUp(t, installCoolTyped(t, integerField))
	src := coolSource(c)
	src.Handshake = &v1alpha1.Handshake{Mode: v1alpha1.HandshakeRequestAck, Request: &v1alpha1.HandshakeRequest{SpecPath: ".spec.upgradeRequest"}}
	c.annotateCSV("cool.v1", src)
	bridgeProcess(t, c, nil)

	c.ocEntry("False", bridge.ReasonNoRequest)
	c.createCSV("cool.v2", "cool.v1")
	c.ocEntry("False", bridge.ReasonUnanswered)
	cr, err := c.cr().Get(context.Background(), c.name, metav1.GetOptions{})
	require.NoError(t, err)
	token, found, err := unstructured.NestedFieldNoCopy(cr.Object, "spec", "upgradeRequest")
	require.NoError(t, err)
	require.True(t, found, "the request is in the CR's spec")
	assert.IsType(t, int64(0), token, "an integer token for an integer field")
	c.operatorReports("True", "UpgradeRequestAccepted", cr.GetGeneration())
	c.ocEntry("True", bridge.ReasonAnswered)
}

// TestBridgeReadsTheStatusSourceFromThePod: with the annotation in
// STATUSCHECK_STATUS_SOURCE (the downward API's copy of the pod
// template's, which OLM copies from the CSV) the bridge never needs the
// running CSV: here the CSV has no annotation at all, and the entry
// follows the CR. An invalid value is logged and retried, never a crash;
// and --metrics-secure serves the metrics over HTTPS to authenticated
// clients only.
func TestBridgeReadsTheStatusSourceFromThePod(t *testing.T) {
	t.Run("valid", func(t *testing.T) {
		c := setUp(t, installCool(t))
		metricsAddr := testutil.FreeAddr(t)
		bridgeProcess(t, c, []string{sidecar.EnvStatusSource + "=" + coolSource(c).Marshal()}, "--metrics-secure", "--metrics-bind-address", metricsAddr)
		c.ocEntry("True", bridge.ReasonUpgradeable)
		c.userSetsStorage("MariaDB")
		c.ocEntry("False", bridge.ReasonOutdated)

		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		var resp *http.Response
		var err error
		require.Eventually(t, func() bool { // served once its certificate is made
			resp, err = client.Get("https://" + metricsAddr + "/metrics")
			return err == nil
		}, 10*time.Second, 50*time.Millisecond, "metrics over HTTPS: %v", err)
		resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "no token, no metrics")
	})
	t.Run("invalid", func(t *testing.T) {
		c := setUp(t, installCool(t))
		stderr := bridgeProcess(t, c, []string{sidecar.EnvStatusSource + `={"kind":"CoolOperator"}`})
		assert.Eventually(t, func() bool {
			return bytes.Count([]byte(stderr()), []byte("cannot read the status source yet")) >= 2
		}, 10*time.Second, 100*time.Millisecond, "logged and retried: %s", stderr())
		assert.Contains(t, stderr(), "$"+sidecar.EnvStatusSource+": the status-source annotation is invalid")
		oc, err := c.dyn.Resource(ocGVR).Namespace(c.ns).Get(context.Background(), "cool.v1", metav1.GetOptions{})
		require.NoError(t, err)
		_, found, _ := unstructured.NestedSlice(oc.Object, "spec", "conditions")
		assert.False(t, found, "nothing written meanwhile")
	})
}
