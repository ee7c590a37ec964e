package olm

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// deploymentGate is a validating admission webhook on the Deployments of
// one namespace, served by the test: it can let OLM's deployment writes
// through, refuse them, or hold them until the test releases them. That
// is how a test makes installer.Install fail (a replacement that fails)
// or take as long as the test needs (the window between OLM's commit and
// the replacement). The kube-apiserver calls it as it calls any webhook.
type deploymentGate struct {
	mu      sync.Mutex
	deny    bool
	code    int32         // of a refusal: 403 unless refuseRetryably set 500
	hold    chan struct{} // non-nil: writes wait until it is closed
	arrived chan struct{} // gets a value when a held write arrives
	writes  int
}

func (g *deploymentGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	g.mu.Lock()
	g.writes++
	deny, code, hold, arrived := g.deny, g.code, g.hold, g.arrived
	g.mu.Unlock()
	if hold != nil {
		select {
		case arrived <- struct{}{}:
		default:
		}
		select {
		case <-hold:
		case <-time.After(25 * time.Second):
		}
	}
	resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: !deny}
	if deny {
		resp.Result = &metav1.Status{Message: "the test refuses deployment writes for now", Code: code}
	}
	review.Response = resp
	review.Request = nil
	_ = json.NewEncoder(w).Encode(review)
}

// refuse makes the gate refuse (true) or admit (false) writes. A refusal
// is Forbidden, which installer.Install takes for missing permissions:
// unrecoverable (install.IsErrorUnrecoverable), so the CSV is
// Failed/InstallComponentFailedNoRetry.
func (g *deploymentGate) refuse(on bool) {
	g.mu.Lock()
	g.deny, g.code = on, http.StatusForbidden
	g.mu.Unlock()
}

// refuseRetryably makes the gate refuse writes with an internal error,
// which OLM retries (Failed/InstallComponentFailed, then the next sync).
// A held write is refused or admitted as the gate was when it arrived.
func (g *deploymentGate) refuseRetryably() {
	g.mu.Lock()
	g.deny, g.code = true, http.StatusInternalServerError
	g.mu.Unlock()
}

// holdWrites makes writes wait; the returned channel gets a value when
// one arrives, and release lets them all through.
func (g *deploymentGate) holdWrites() (arrived <-chan struct{}, release func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	hold, got := make(chan struct{}), make(chan struct{}, 1)
	g.hold, g.arrived = hold, got
	var once sync.Once
	return got, func() {
		once.Do(func() {
			g.mu.Lock()
			g.hold = nil
			g.mu.Unlock()
			close(hold)
		})
	}
}

// gateDeployments serves a deploymentGate for the world's namespace and
// registers it with the kube-apiserver.
func (w *world) gateDeployments() *deploymentGate {
	w.t.Helper()
	g := &deploymentGate{}
	srv := httptest.NewTLSServer(g)
	w.t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	url := srv.URL + "/validate"
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	timeout := int32(30)
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "deployments-" + w.ns},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "deployments.statuscheck.test",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": w.ns}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          &timeout,
		}},
	}
	if _, err := w.c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(context.Background(), cfg, metav1.CreateOptions{}); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() {
		_ = w.c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), cfg.Name, metav1.DeleteOptions{})
	})
	// The apiserver picks a new configuration up within a second or so.
	time.Sleep(2 * time.Second)
	return g
}
