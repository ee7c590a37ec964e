// Package olm is statuscheck's real-OLM test tier: OLM v0.46.0's own,
// unmodified olm-operator and OperatorCondition controllers run in this
// test binary against a real kube-apiserver (k8s.io/kubernetes
// cmd/kube-apiserver/app/testing, RBAC on) on an embedded etcd, offline
// and on loopback. The scenarios upgrade a real operator bundle there with
// `statuscheck record` (the built binary) recording, and replay the
// recordings with `statuscheck simulate`: what the model says must be
// what OLM did.
//
// There is no kubelet, controller manager or garbage collector: a
// Deployment is made Available by a stand-in (testutil.DeploymentStandIn) that
// writes its status as the deployment controller would once its pods run,
// and an owned object is not deleted with its owner (the tests delete what
// the garbage collector would).
//
// The tier is a module of its own so that k8s.io/kubernetes and OLM stay
// out of statuscheck's go.mod and binary.
package olm

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	olmcrds "github.com/operator-framework/api/crds"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	"github.com/operator-framework/operator-lifecycle-manager/pkg/api/client/clientset/versioned"
	"github.com/operator-framework/operator-lifecycle-manager/pkg/controller/operators"
	olmoperator "github.com/operator-framework/operator-lifecycle-manager/pkg/controller/operators/olm"
	"github.com/operator-framework/operator-lifecycle-manager/pkg/controller/operators/validatingroundtripper"
	"github.com/operator-framework/operator-lifecycle-manager/pkg/lib/operatorclient"
	"github.com/operator-framework/operator-lifecycle-manager/pkg/lib/queueinformer"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/apiserver"
)

// Cluster is a running kube-apiserver with OLM.
type Cluster struct {
	// Config reaches the server as its loopback superuser, in JSON (OLM's
	// custom resources have no protobuf).
	Config *rest.Config
	Kube   kubernetes.Interface
	Dyn    dynamic.Interface
	OLM    versioned.Interface
	Ext    apiextclient.Interface
	// Kubeconfig is a kubeconfig file for the statuscheck binary.
	Kubeconfig string
	// Started is how long the server and OLM took to be ready.
	Started time.Duration
	// OLMRequests counts the requests OLM sends with its own identity,
	// on OLM's side of the wire: the apiserver's own metric leaves out
	// some of them (requests for a CRD's version it does not serve,
	// legacy and group-version discovery). The clients OLM attenuates to
	// an OperatorGroup's service account are not counted: OLM builds
	// them with rest.AnonymousClientConfig (pkg/lib/scoped/attenuator.go),
	// which drops the round tripper that counts.
	OLMRequests *requestCounter
}

// requestCounter counts the requests of the clients whose config it
// wraps, by method and URL path.
type requestCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *requestCounter) wrap(config *rest.Config) *rest.Config {
	out := rest.CopyConfig(config)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			r.mu.Lock()
			r.n[req.Method+" "+req.URL.Path]++
			r.mu.Unlock()
			return rt.RoundTrip(req)
		})
	})
	return out
}

// snapshot is a copy of the counts so far.
func (r *requestCounter) snapshot() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.n))
	for k, v := range r.n {
		out[k] = v
	}
	return out
}

// since is the number of requests, sent after s0 was taken, whose
// "METHOD PATH" match says yes to.
func (r *requestCounter) since(s0 map[string]int, match func(method, path string) bool) (n int, seen []string) {
	for k, v := range r.snapshot() {
		method, path, _ := strings.Cut(k, " ")
		if d := v - s0[k]; d > 0 && match(method, path) {
			n += d
			seen = append(seen, fmt.Sprintf("%s (%d)", k, d))
		}
	}
	sort.Strings(seen)
	return n, seen
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

var (
	once     sync.Once
	cluster  *Cluster
	startErr error
	owner    *testutil.MainTB
	logOut   io.Writer = io.Discard
)

// TestMain starts nothing: the first test that calls get starts the
// cluster, which lives as long as the binary (OLM v0.46.0's workers can
// panic when its context is cancelled under them, so it is never
// stopped; the process ends it).
func TestMain(m *testing.M) {
	if os.Getenv("OLMTEST_VERBOSE") == "1" {
		logOut = os.Stderr
	}
	apiserver.SilenceLogs()
	klog.SetOutput(logOut)
	code := m.Run()
	testutil.RemoveBinary()
	os.Exit(code)
}

// get returns the cluster, starting it on first use; a cluster that
// cannot start fails the test (this tier is never skipped).
func get(t testing.TB) *Cluster {
	t.Helper()
	once.Do(func() {
		owner = testutil.NewMainTB("olm", func(format string, args ...interface{}) { fmt.Fprintf(logOut, format+"\n", args...) })
		func() {
			defer func() {
				if r := recover(); r != nil {
					if f, ok := r.(testutil.Fatal); ok {
						startErr = fmt.Errorf("%s", string(f))
						return
					}
					panic(r)
				}
			}()
			cluster, startErr = start(owner)
		}()
	})
	if startErr != nil {
		t.Fatalf("starting kube-apiserver and OLM: %v", startErr)
	}
	return cluster
}

func start(tb *testutil.MainTB) (*Cluster, error) {
	begin := time.Now()
	etcdCfg := testserver.NewTestConfig(tb)
	testserver.RunEtcd(tb, etcdCfg)
	storage := storagebackend.NewDefaultConfig("/olmtest", nil)
	storage.Transport.ServerList = []string{etcdCfg.ListenClientUrls[0].String()}
	srv := kubeapiservertesting.StartTestServerOrDie(tb, nil, []string{"--authorization-mode=RBAC"}, storage)

	cfg := rest.CopyConfig(srv.ClientConfig)
	cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
	c := &Cluster{Config: cfg}
	var err error
	if c.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.Dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.OLM, err = versioned.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.Ext, err = apiextclient.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.Kubeconfig, err = testutil.WriteKubeconfig(cfg, tb.TempDir()); err != nil {
		return nil, err
	}
	// OLM's CRDs, as its manifests install them.
	for _, crd := range []*apiextv1.CustomResourceDefinition{olmcrds.ClusterServiceVersion(), olmcrds.OperatorGroup(), olmcrds.OperatorCondition(),
		olmcrds.Subscription(), olmcrds.InstallPlan(), olmcrds.CatalogSource(), olmcrds.Operator(), olmcrds.OLMConfig()} {
		if err := c.installCRD(crd); err != nil {
			return nil, err
		}
	}
	ctx := context.Background()
	if err := c.startOLM(ctx); err != nil {
		return nil, err
	}
	go testutil.DeploymentStandIn(ctx, c.Kube) // OLM's install check reads the Deployments
	c.Started = time.Since(begin)
	return c, nil
}

// installCRD creates a CRD and waits until its resources answer.
func (c *Cluster) installCRD(crd *apiextv1.CustomResourceDefinition) error {
	ctx := context.Background()
	if _, err := c.Ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
	}
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := c.Ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextv1.Established && cond.Status == apiextv1.ConditionTrue {
				for _, v := range got.Spec.Versions {
					if !v.Served {
						continue
					}
					gvr := crdGVR(got, v.Name)
					var err error
					if got.Spec.Scope == apiextv1.NamespaceScoped {
						_, err = c.Dyn.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{})
					} else {
						_, err = c.Dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
					}
					if err != nil {
						return false, nil
					}
				}
				return true, nil
			}
		}
		return false, nil
	})
}

// startOLM runs OLM's olm-operator and its OperatorCondition controllers as
// cmd/olm/main.go and cmd/olm/manager.go (OLM v0.46.0) set them up:
// olm.NewOperator with the same clients (the operator client through the
// validating round tripper that refuses objects without OLM's labels:
// olmClientConfig), and
// NewOperatorConditionReconciler and NewOperatorConditionGeneratorReconciler
// on a controller-runtime manager.
func (c *Cluster) startOLM(ctx context.Context) error {
	logger := logrus.New()
	logger.SetOutput(logOut)
	logrus.SetOutput(logOut) // some of OLM logs through logrus's global logger
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		return err
	}
	if err := operators.AddToScheme(scheme); err != nil {
		return err
	}
	ctrl.SetLogger(logr.Discard())
	c.OLMRequests = &requestCounter{n: map[string]int{}}
	olmConfig := c.OLMRequests.wrap(c.Config)
	skip := true
	mgr, err := ctrl.NewManager(olmConfig, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0", Controller: config.Controller{SkipNameValidation: &skip}})
	if err != nil {
		return fmt.Errorf("controller manager: %w", err)
	}
	ocr, err := operators.NewOperatorConditionReconciler(mgr.GetClient(), ctrl.Log.WithName("operatorcondition"), mgr.GetScheme())
	if err != nil {
		return err
	}
	if err := ocr.SetupWithManager(mgr); err != nil {
		return err
	}
	ocg, err := operators.NewOperatorConditionGeneratorReconciler(mgr.GetClient(), ctrl.Log.WithName("operatorcondition-generator"), mgr.GetScheme())
	if err != nil {
		return err
	}
	if err := ocg.SetupWithManager(mgr); err != nil {
		return err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintf(logOut, "controller manager ended: %v\n", err)
		}
	}()

	validating := olmClientConfig(olmConfig, mgr.GetScheme())
	opClient, err := operatorclient.NewClientFromRestConfig(validating)
	if err != nil {
		return err
	}
	crClient, err := versioned.NewForConfig(olmConfig)
	if err != nil {
		return err
	}
	metadataClient, err := metadata.NewForConfig(olmConfig)
	if err != nil {
		return err
	}
	op, err := olmoperator.NewOperator(ctx,
		olmoperator.WithLogger(logger),
		olmoperator.WithWatchedNamespaces(metav1.NamespaceAll),
		olmoperator.WithResyncPeriod(queueinformer.ResyncWithJitter(5*time.Minute, 0.2)),
		olmoperator.WithExternalClient(crClient),
		olmoperator.WithMetadataClient(metadataClient),
		olmoperator.WithOperatorClient(opClient),
		olmoperator.WithRestConfig(validating),
		olmoperator.WithOpenshiftConfigAPIExists(false),
	)
	if err != nil {
		return fmt.Errorf("olm.NewOperator: %w", err)
	}
	op.Run(ctx)
	select {
	case <-op.Ready():
	case <-time.After(2 * time.Minute):
		return fmt.Errorf("OLM was not ready after 2 minutes")
	}
	return nil
}

// namespace creates a namespace of its own for a test, with an
// OperatorGroup targeting it (a CSV installs only in a namespace that has
// one).
func (c *Cluster) namespace(t *testing.T, prefix string) string {
	t.Helper()
	ctx := context.Background()
	ns, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	og := &operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Name: "og", Namespace: ns.Name},
		Spec: operatorsv1.OperatorGroupSpec{TargetNamespaces: []string{ns.Name}}}
	if _, err := c.OLM.OperatorsV1().OperatorGroups(ns.Name).Create(ctx, og, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func crdGVR(crd *apiextv1.CustomResourceDefinition, version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}
}

// olmClientConfig is config as cmd/olm/main.go (OLM v0.46.0) gives it to
// OLM's operator client: through validatingroundtripper.Wrap, whose round
// tripper panics on any POST of an object without
// labels[olm.managed]=true (validating_round_tripper.go, RoundTrip).
// Wrap turns the check on only where the environment has CI set; here it
// is on always, so a run on a laptop checks what CI checks. One request
// passes it by: the TokenRequest that OLM's own
// scoped.BearerTokenRetriever POSTs through that client for an
// OperatorGroup's service account that has no token secret
// (pkg/lib/scoped/token_retriever.go, requestSAToken). A TokenRequest is
// no stored object and carries no labels, so with CI set OLM v0.46.0
// panics there without any patch of ours; OLM runs as a pod without CI
// set, where the check is off and the request goes through.
func olmClientConfig(config *rest.Config, scheme *runtime.Scheme) *rest.Config {
	if _, set := os.LookupEnv("CI"); !set {
		os.Setenv("CI", "true") //nolint:errcheck // only Wrap reads it, now
		defer os.Unsetenv("CI") //nolint:errcheck
	}
	check := validatingroundtripper.Wrap(&rest.Config{}, scheme).WrapTransport
	out := rest.CopyConfig(config)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return tokenRequestsUnchecked{plain: rt, checked: check(rt)}
	})
	return out
}

// tokenRequestsUnchecked sends POSTs of a service account's token
// subresource to plain, every other request to checked.
type tokenRequestsUnchecked struct{ plain, checked http.RoundTripper }

func (t tokenRequestsUnchecked) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && isTokenRequest(req.URL.Path) {
		return t.plain.RoundTrip(req)
	}
	return t.checked.RoundTrip(req)
}

// isTokenRequest: path is /api/v1/namespaces/NS/serviceaccounts/NAME/token.
func isTokenRequest(path string) bool {
	p := strings.Split(strings.Trim(path, "/"), "/")
	return len(p) == 7 && p[0] == "api" && p[1] == "v1" && p[2] == "namespaces" && p[4] == "serviceaccounts" && p[6] == "token"
}
