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

	"k8s.io/klog/v2"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/apiserver"
	"github.com/statuscheck/statuscheck/test/plain/kubeapi"
)

// Cluster is a running kube-apiserver with the stand-ins.
type Cluster struct {
	*kubeapi.Server
	// Jobs is the job controller's stand-in.
	Jobs *JobRunner
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
	srv, err := kubeapi.Start(tb, "/plaintest")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Server: srv}
	ctx := context.Background()
	c.Jobs = &JobRunner{Kube: c.Kube, Config: c.Config, Binary: bin, Dir: tb.TempDir(), Logf: tb.Logf}
	go c.Jobs.Run(ctx)
	go testutil.DeploymentStandIn(ctx, c.Kube) // Helm waits on Deployments (kstatus)
	return c, nil
}
