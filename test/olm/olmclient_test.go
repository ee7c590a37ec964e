package olm

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// TestOLMClientConfig: the client the tier gives OLM refuses (OLM's
// validating round tripper panics on) an unlabelled object, passes a
// labelled one, and passes the TokenRequest OLM's token retriever sends.
func TestOLMClientConfig(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	// client-go sends built-in kinds as protobuf, which the round tripper
	// decodes with the scheme it is given (cmd/olm's manager's has them).
	kube, err := kubernetes.NewForConfig(olmClientConfig(&rest.Config{Host: srv.URL}, scheme.Scheme))
	require.NoError(t, err)
	ctx := context.Background()

	tests := []struct {
		name   string
		send   func() error
		panics bool
	}{
		{name: "configmap without OLM's label", panics: true, send: func() error {
			_, err := kube.CoreV1().ConfigMaps("ns").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
			return err
		}},
		{name: "configmap with OLM's label", send: func() error {
			_, err := kube.CoreV1().ConfigMaps("ns").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x",
				Labels: map[string]string{"olm.managed": "true"}}}, metav1.CreateOptions{})
			return err
		}},
		{name: "service account token request", send: func() error {
			_, err := kube.CoreV1().ServiceAccounts("ns").CreateToken(ctx, "sa", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			panicked := func() (p bool) {
				defer func() { p = recover() != nil }()
				err = tt.send()
				return false
			}()
			assert.Equal(t, tt.panics, panicked)
			if !tt.panics {
				assert.NoError(t, err)
			}
		})
	}
	assert.False(t, isTokenRequest("/api/v1/namespaces/ns/serviceaccounts"), "a service account's create is checked")
	assert.False(t, isTokenRequest("/apis/x/v1/namespaces/ns/serviceaccounts/sa/token"))
}
