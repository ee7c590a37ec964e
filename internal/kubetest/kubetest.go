// Package kubetest starts a real etcd and a real apiextensions-apiserver
// inside a test binary, on loopback only, so that a test can ask a cluster
// what it does instead of assuming it. Nothing is downloaded: etcd is
// embedded (k8s.io/apiserver pkg/storage/etcd3/testserver) and the
// apiserver is k8s.io/apiextensions-apiserver's test fixture, pointed at
// it. It serves CRDs and custom resources with the real strategies,
// pruning, defaulting, OpenAPI and CEL validation, finalizers and
// deletion; it serves no core kinds and runs no controllers (no garbage
// collector).
//
// One server per test binary: TestMain calls Main, the first test that
// calls Get starts the server (about a second), and Main stops it after
// the last test. Tests isolate themselves with a fresh namespace or a CRD
// of their own (InstallCRD gives each CRD a group of its own). The server
// is test-only; the statuscheck binary does not link etcd's server.
package kubetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	olmcrds "github.com/operator-framework/api/crds"
	clientv3 "go.etcd.io/etcd/client/v3"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apiextensions-apiserver/test/integration/fixtures"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/apiserver"
)

// Server is a running apiextensions-apiserver.
type Server struct {
	// Config reaches the server as a privileged (loopback) client.
	Config *rest.Config
	// Ext manages CustomResourceDefinitions.
	Ext clientset.Interface
	// Dynamic reads and writes custom resources.
	Dynamic dynamic.Interface
	// Kubeconfig is a kubeconfig file for the server, for a subprocess
	// (the real statuscheck binary).
	Kubeconfig string
	// Started is how long the server took to start.
	Started time.Duration

	etcd       *clientv3.Client
	etcdPrefix string
	olmOnce    sync.Once
	olmErr     error
}

var (
	mu       sync.Mutex
	server   *Server
	startErr error
	owner    *testutil.MainTB
	counter  atomic.Int64
)

// Main runs the tests of a binary and stops the server, if one was
// started, when they are done. Call it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }
func Main(m *testing.M) int {
	apiserver.SilenceLogs()
	code := m.Run()
	mu.Lock()
	defer mu.Unlock()
	if owner != nil {
		owner.Finish()
	}
	return code
}

// Get returns the server, starting it on first use. A server that cannot
// start fails the test: the real-server tests are never skipped.
func Get(t testing.TB) *Server {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if server == nil && startErr == nil {
		server, startErr = start()
	}
	if startErr != nil {
		t.Fatalf("starting the test apiserver: %v", startErr)
	}
	return server
}

func start() (s *Server, err error) {
	begin := time.Now()
	owner = testutil.NewMainTB("kubetest", logf)
	defer func() {
		if r := recover(); r != nil {
			if f, ok := r.(testutil.Fatal); ok {
				err = errors.New(string(f))
				return
			}
			panic(r)
		}
	}()
	cfg := testserver.NewTestConfig(owner)
	etcd := testserver.RunEtcd(owner, cfg)
	// fixtures reads the etcd address from the environment.
	if err := os.Setenv("KUBE_INTEGRATION_ETCD_URL", cfg.ListenClientUrls[0].String()); err != nil {
		return nil, err
	}
	tearDown, config, opts, err := fixtures.StartDefaultServer(owner)
	if err != nil {
		return nil, fmt.Errorf("starting apiextensions-apiserver: %w", err)
	}
	owner.Cleanup(tearDown)
	s = &Server{Config: config, etcd: etcd.Client, etcdPrefix: opts.RecommendedOptions.Etcd.StorageConfig.Prefix}
	if s.Ext, err = clientset.NewForConfig(config); err != nil {
		return nil, err
	}
	if s.Dynamic, err = dynamic.NewForConfig(config); err != nil {
		return nil, err
	}
	if s.Kubeconfig, err = testutil.WriteKubeconfig(config, owner.TempDir()); err != nil {
		return nil, err
	}
	s.Started = time.Since(begin)
	return s, nil
}

// Namespace returns a namespace name no other test uses. The server has no
// Namespace objects (it serves no core kinds), so nothing is created.
func Namespace(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, counter.Add(1))
}

// InstalledCRD is a CRD the server serves.
type InstalledCRD struct {
	CRD *apiextv1.CustomResourceDefinition
	// Group is the group the server serves it under (unique to the test).
	Group string
}

// GVR is the resource of a served version.
func (c *InstalledCRD) GVR(version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: c.Group, Version: version, Resource: c.CRD.Spec.Names.Plural}
}

// APIVersion is GROUP/VERSION as objects of the CRD spell it.
func (c *InstalledCRD) APIVersion(version string) string {
	return c.Group + "/" + version
}

// InstallCRD creates crd under a group of its own (a prefix is added, so
// two tests may install two variants of one CRD) and waits until it is
// Established and its resources answer. It returns the apiserver's error
// when the apiserver refuses the CRD. The CRD lives as long as the server,
// so tests may share it.
func (s *Server) InstallCRD(t testing.TB, crd *apiextv1.CustomResourceDefinition) (*InstalledCRD, error) {
	t.Helper()
	c := crd.DeepCopy()
	c.Status = apiextv1.CustomResourceDefinitionStatus{}
	group := ownGroup(&c.ObjectMeta, &c.Spec.Group, c.Spec.Names.Plural)
	ctx := context.Background()
	created, err := s.Ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, c, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	in := &InstalledCRD{CRD: created, Group: group}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := s.Ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextv1.Established && cond.Status == apiextv1.ConditionTrue {
				in.CRD = got
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("CRD %s not established: %w", created.Name, err)
	}
	// Established is set before the handler serves the resource: wait
	// until a list answers.
	if err := s.waitServed(in); err != nil {
		return nil, err
	}
	return in, nil
}

// ownGroup moves a copy of a CRD to a group no other test uses (tN.GROUP)
// and names it for that group, as a new object.
func ownGroup(meta *metav1.ObjectMeta, group *string, plural string) string {
	meta.ResourceVersion, meta.UID = "", ""
	*group = fmt.Sprintf("t%d.%s", counter.Add(1), *group)
	meta.Name = plural + "." + *group
	return *group
}

// InstallOLM installs OLM's ClusterServiceVersion and OperatorCondition
// CRDs (github.com/operator-framework/api/crds) under their own group,
// operators.coreos.com, as a cluster with OLM serves them: tools that
// read OLM's objects by their real names (statuscheck record) find them.
// It runs once per server; later calls return at once.
func (s *Server) InstallOLM(t testing.TB) {
	t.Helper()
	s.olmOnce.Do(func() {
		for _, c := range []*apiextv1.CustomResourceDefinition{olmcrds.ClusterServiceVersion(), olmcrds.OperatorCondition()} {
			created, err := s.Ext.ApiextensionsV1().CustomResourceDefinitions().Create(context.Background(), c, metav1.CreateOptions{})
			if err != nil {
				s.olmErr = fmt.Errorf("installing OLM's CRD %s: %w", c.Name, err)
				return
			}
			if err := s.waitServed(&InstalledCRD{CRD: created, Group: created.Spec.Group}); err != nil {
				s.olmErr = err
				return
			}
		}
	})
	if s.olmErr != nil {
		t.Fatal(s.olmErr)
	}
}

// InstallRemovedCRD puts an apiextensions.k8s.io/v1beta1 CRD on the
// server as a cluster that served v1beta1 (before Kubernetes 1.22) would
// have stored it: written to etcd directly
// (fixtures.CreateCRDUsingRemovedAPI), since the apiserver no longer
// serves that version. Its spec.preserveUnknownFields (true unless set to
// false) stays, as on such a cluster. Like InstallCRD, it gives the CRD a
// group of its own and waits until its resources answer. It gives the CRD
// a UID, as the apiserver gives a CRD it creates: the apiserver keeps a
// CRD's storage by its UID, and two CRDs without one would be served by
// whichever one's storage it made first.
func (s *Server) InstallRemovedCRD(t testing.TB, crd *apiextv1beta1.CustomResourceDefinition) (*InstalledCRD, error) {
	t.Helper()
	c := crd.DeepCopy()
	c.Status = apiextv1beta1.CustomResourceDefinitionStatus{}
	group := ownGroup(&c.ObjectMeta, &c.Spec.Group, c.Spec.Names.Plural)
	c.UID = uuid.NewUUID()
	created, err := fixtures.CreateCRDUsingRemovedAPI(s.etcd, s.etcdPrefix, c, s.Ext, s.Dynamic)
	if err != nil {
		return nil, err
	}
	in := &InstalledCRD{CRD: created, Group: group}
	if err := s.waitServed(in); err != nil {
		return nil, err
	}
	return in, nil
}

// waitServed waits until a list of each served version answers.
func (s *Server) waitServed(in *InstalledCRD) error {
	ctx := context.Background()
	for _, v := range in.CRD.Spec.Versions {
		if !v.Served {
			continue
		}
		gvr := in.GVR(v.Name)
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			var err error
			if in.CRD.Spec.Scope == apiextv1.NamespaceScoped {
				_, err = s.Dynamic.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{})
			} else {
				_, err = s.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{})
			}
			return err == nil, nil
		})
		if err != nil {
			return fmt.Errorf("resource %s not served: %w", gvr, err)
		}
	}
	return nil
}

// logf shows the server's setup log only with KUBETEST_VERBOSE=1.
func logf(format string, args ...interface{}) {
	if os.Getenv("KUBETEST_VERBOSE") != "1" {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	_, _ = io.WriteString(os.Stderr, msg)
}
