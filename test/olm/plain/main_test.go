// Package plain tests what statuscheck writes for clusters without OLM
// (docs/without-olm.md) on a real kube-apiserver: the admission guard that
// `statuscheck generate --admission-policy` prints (a
// ValidatingAdmissionPolicy and its binding) and the pre-upgrade check
// `statuscheck gate`, both run as the built binary.
//
// TestMain starts one kube-apiserver (k8s.io/kubernetes
// cmd/kube-apiserver/app/testing) on an embedded etcd, offline and on
// loopback, without OLM, and installs the CRD of the repository's bundle
// testdata/bundles/protected. There is no kubelet and no controller
// manager: a Deployment is a stored object, which is all admission needs,
// and a deleted namespace is never emptied, so the tests leave theirs.
//
// Each test works in a namespace of its own, with the bundle's
// Deployment (from its CSV's install strategy) and its own copy of the
// generated policy and binding (renamed after the namespace: the names
// generate prints are cluster-wide). Admission judges against the
// apiserver's informer cache of the CR, so after a write the tests poll
// until the expected answer and log how long it took (the lag).
package plain

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/apiserver"
)

// server is the running kube-apiserver.
type server struct {
	// cfg reaches it as its loopback superuser, in JSON (custom
	// resources have no protobuf).
	cfg  *rest.Config
	kube kubernetes.Interface
	dyn  dynamic.Interface
	ext  apiextclient.Interface
	// kubeconfig is a kubeconfig file for the statuscheck binary.
	kubeconfig string
}

var srv *server

var logOut io.Writer = io.Discard

func TestMain(m *testing.M) {
	if os.Getenv("PLAINTEST_VERBOSE") == "1" {
		logOut = os.Stderr
	}
	apiserver.SilenceLogs()
	klog.SetOutput(logOut)
	owner := testutil.NewMainTB("plain", func(format string, args ...interface{}) { fmt.Fprintf(logOut, format+"\n", args...) })
	begin := time.Now()
	var (
		stop func()
		err  error
	)
	func() {
		defer func() {
			if r := recover(); r != nil {
				f, ok := r.(testutil.Fatal)
				if !ok {
					panic(r)
				}
				err = fmt.Errorf("%s", string(f))
			}
		}()
		srv, stop, err = start(owner)
	}()
	code := 1
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting kube-apiserver: %v\n", err)
	} else {
		fmt.Fprintf(os.Stderr, "kube-apiserver ready in %v\n", time.Since(begin).Round(time.Millisecond))
		code = m.Run()
	}
	if stop != nil {
		stop()
	}
	owner.Finish()
	testutil.RemoveBinary()
	os.Exit(code)
}

// start runs etcd and kube-apiserver and installs the protected bundle's
// CRD; stop tears the apiserver down (etcd stops with the owner's
// cleanups).
func start(tb *testutil.MainTB) (*server, func(), error) {
	etcdCfg := testserver.NewTestConfig(tb)
	testserver.RunEtcd(tb, etcdCfg)
	storage := storagebackend.NewDefaultConfig("/plaintest", nil)
	storage.Transport.ServerList = []string{etcdCfg.ListenClientUrls[0].String()}
	ts := kubeapiservertesting.StartTestServerOrDie(tb, nil, nil, storage)
	stop := ts.TearDownFn

	cfg := rest.CopyConfig(ts.ClientConfig)
	cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
	s := &server{cfg: cfg}
	var err error
	if s.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, stop, fmt.Errorf("kube client: %w", err)
	}
	if s.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, stop, fmt.Errorf("dynamic client: %w", err)
	}
	if s.ext, err = apiextclient.NewForConfig(cfg); err != nil {
		return nil, stop, fmt.Errorf("apiextensions client: %w", err)
	}
	if s.kubeconfig, err = testutil.WriteKubeconfig(cfg, tb.TempDir()); err != nil {
		return nil, stop, fmt.Errorf("writing kubeconfig: %w", err)
	}
	crd := testutil.ReadCRD(tb, "testdata/bundles/protected/manifests/cool.operators.corp_cooloperators.yaml")
	if _, err := s.installCRD(context.Background(), crd); err != nil {
		return nil, stop, err
	}
	return s, stop, nil
}

// installCRD creates a CRD and waits until it is Established and its
// resource answers a list; it returns when that was.
func (s *server) installCRD(ctx context.Context, crd *apiextv1.CustomResourceDefinition) (time.Time, error) {
	if _, err := s.ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return time.Time{}, fmt.Errorf("creating CRD %s: %w", crd.Name, err)
	}
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: crd.Spec.Versions[0].Name, Resource: crd.Spec.Names.Plural}
	var ready time.Time
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := s.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("reading CRD %s: %w", crd.Name, err)
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextv1.Established && c.Status == apiextv1.ConditionTrue {
				if _, err := s.dyn.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{}); err != nil {
					return false, nil
				}
				ready = time.Now()
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("waiting for CRD %s: %w", crd.Name, err)
	}
	return ready, nil
}
