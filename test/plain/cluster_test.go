// Package plain is statuscheck's tier without OLM: real Helm upgrades,
// through Helm's Go SDK (helm.sh/helm/v4), against a real kube-apiserver
// (k8s.io/kubernetes cmd/kube-apiserver/app/testing, RBAC on) on an
// embedded etcd, offline and on loopback. The chart is an operator's
// Deployment plus what `statuscheck generate` writes for a cluster
// without OLM: the pre-upgrade hook (a Job running `statuscheck gate`,
// its ServiceAccount, Role and RoleBinding) and, applied beside the
// chart, the ValidatingAdmissionPolicy that holds the Deployment's image.
//
// There is no kubelet, controller manager or garbage collector: a Job is
// run by a stand-in (jobs_test.go) that runs the Job's container, the
// real statuscheck binary, as a subprocess with the Job's ServiceAccount
// (impersonated) and writes the Job's status as the job controller does;
// a Deployment is made Available by a stand-in that writes its status as
// the deployment controller would once its pods run (only Helm's
// rollback waits on it).
//
// The tier is a module of its own so that k8s.io/kubernetes and Helm stay
// out of statuscheck's go.mod and binary.
package plain

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
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

// Cluster is a running kube-apiserver with the stand-ins.
type Cluster struct {
	// Config reaches the server as its loopback superuser, in JSON (the
	// custom resources have no protobuf).
	Config *rest.Config
	Kube   kubernetes.Interface
	Dyn    dynamic.Interface
	Ext    apiextclient.Interface
	// Kubeconfig is a kubeconfig file for Helm (the superuser).
	Kubeconfig string
	// Jobs is the job controller's stand-in.
	Jobs *JobRunner
	// Started is how long the server took to be ready.
	Started time.Duration
}

var (
	once     sync.Once
	cluster  *Cluster
	startErr error
	owner    *testutil.MainTB
	logOut   io.Writer = io.Discard
)

// TestMain starts nothing: the first test that calls get starts the
// cluster, which lives as long as the binary.
func TestMain(m *testing.M) {
	if os.Getenv("PLAINTEST_VERBOSE") == "1" {
		logOut = os.Stderr
	}
	apiserver.SilenceLogs()
	klog.SetOutput(logOut)
	// Helm's legacy waiter logs through slog's default logger.
	slog.SetDefault(slog.New(slog.NewTextHandler(logOut, nil)))
	code := m.Run()
	testutil.RemoveBinary()
	os.Exit(code)
}

// get returns the cluster, starting it on first use; a cluster that
// cannot start fails the test (this tier is never skipped).
func get(t testing.TB) *Cluster {
	t.Helper()
	bin := testutil.Binary(t)
	once.Do(func() {
		owner = testutil.NewMainTB("plain", func(format string, args ...interface{}) { fmt.Fprintf(logOut, format+"\n", args...) })
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
			cluster, startErr = start(owner, bin)
		}()
	})
	if startErr != nil {
		t.Fatalf("starting kube-apiserver: %v", startErr)
	}
	return cluster
}

func start(tb *testutil.MainTB, bin string) (*Cluster, error) {
	begin := time.Now()
	etcdCfg := testserver.NewTestConfig(tb)
	testserver.RunEtcd(tb, etcdCfg)
	storage := storagebackend.NewDefaultConfig("/plaintest", nil)
	storage.Transport.ServerList = []string{etcdCfg.ListenClientUrls[0].String()}
	srv := kubeapiservertesting.StartTestServerOrDie(tb, nil, []string{"--authorization-mode=RBAC"}, storage)

	cfg := rest.CopyConfig(srv.ClientConfig)
	cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
	c := &Cluster{Config: cfg}
	var err error
	if c.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("kube client: %w", err)
	}
	if c.Dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	if c.Ext, err = apiextclient.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("apiextensions client: %w", err)
	}
	dir := tb.TempDir()
	if c.Kubeconfig, err = testutil.WriteKubeconfig(cfg, dir); err != nil {
		return nil, fmt.Errorf("writing kubeconfig: %w", err)
	}
	ctx := context.Background()
	c.Jobs = &JobRunner{Kube: c.Kube, Config: cfg, Binary: bin, Dir: dir, Logf: tb.Logf}
	go c.Jobs.Run(ctx)
	go deploymentStandIn(ctx, c.Kube)
	c.Started = time.Since(begin)
	return c, nil
}

// installCRD creates a CRD (unless it exists) and waits until its
// resources answer.
func (c *Cluster) installCRD(ctx context.Context, crd *apiextv1.CustomResourceDefinition) error {
	if _, err := c.Ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
	}
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := c.Ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type != apiextv1.Established || cond.Status != apiextv1.ConditionTrue {
				continue
			}
			for _, v := range got.Spec.Versions {
				if !v.Served {
					continue
				}
				gvr := schema.GroupVersionResource{Group: got.Spec.Group, Version: v.Name, Resource: got.Spec.Names.Plural}
				if _, err := c.Dyn.Resource(gvr).List(ctx, metav1.ListOptions{}); err != nil {
					return false, nil
				}
			}
			return true, nil
		}
		return false, nil
	})
}
