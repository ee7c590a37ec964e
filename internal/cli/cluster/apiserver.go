package cluster

import (
	gocontext "context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// probeTimeout bounds the look at a server's discovery.
const probeTimeout = 10 * time.Second

// notAnAPIServer tells a server that is no Kubernetes apiserver from one
// that does not serve a resource: both answer 404 to the resource's path,
// but every apiserver answers /version (its version.Info) and /api (the
// legacy group's APIVersions), each open to any client the server lets in.
// It returns the error to report when the server answers neither (404, or
// something that is not the document); nil when it answers one of them,
// refuses to (an apiserver may, to these credentials), or cannot be
// reached (the caller's own error says so).
func notAnAPIServer(ctx gocontext.Context, cfg *rest.Config) error {
	ctx, cancel := gocontext.WithTimeout(ctx, probeTimeout)
	defer cancel()
	c := rest.CopyConfig(cfg)
	c.GroupVersion = nil
	c.APIPath = ""
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	rc, err := rest.UnversionedRESTClientFor(c)
	if err != nil {
		return nil
	}
	var answers []string
	for _, probe := range []struct {
		path string
		is   func([]byte) bool
	}{
		{"/version", func(b []byte) bool {
			var v k8sversion.Info
			return json.Unmarshal(b, &v) == nil && v.GitVersion != ""
		}},
		{"/api", func(b []byte) bool {
			var v metav1.APIVersions
			return json.Unmarshal(b, &v) == nil && v.Kind == "APIVersions"
		}},
	} {
		body, err := rc.Get().AbsPath(probe.path).Do(ctx).Raw()
		var code int32
		var se apierrors.APIStatus
		if errors.As(err, &se) {
			code = se.Status().Code
		}
		var ue *url.Error
		var ne net.Error
		switch {
		case err == nil && probe.is(body):
			return nil
		case code == 0 && (errors.As(err, &ue) || errors.As(err, &ne)):
			return nil // unreachable: the caller's own error says so
		case code == http.StatusNotFound:
			answers = append(answers, fmt.Sprintf("%s answers 404 Not Found", probe.path))
		case code != 0:
			return nil // refused (401, 403, 5xx...): an apiserver may do that
		default:
			answers = append(answers, fmt.Sprintf("%s answers what no apiserver does", probe.path))
		}
	}
	return fmt.Errorf("the server at %s is not a Kubernetes apiserver: no /version or /api discovery (%s); check the kubeconfig's server", cfg.Host, strings.Join(answers, ", "))
}
