// Package kubeapi starts a real kube-apiserver (k8s.io/kubernetes
// cmd/kube-apiserver/app/testing, RBAC on) on an embedded etcd, offline
// and on loopback, for the tests of the tier without OLM (test/plain):
// one server per test binary, with clients for it and a kubeconfig file
// for the statuscheck binary and Helm. It runs no kubelet and no
// controller manager. Test-only: it lives in test/plain's module, so
// k8s.io/kubernetes stays out of statuscheck's go.mod and binary.
package kubeapi

import (
	"context"
	"fmt"
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
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"

	"github.com/statuscheck/statuscheck/internal/testutil"
)

// Server is a running kube-apiserver.
type Server struct {
	// Config reaches it as its loopback superuser, in JSON (custom
	// resources have no protobuf).
	Config *rest.Config
	Kube   kubernetes.Interface
	Dyn    dynamic.Interface
	Ext    apiextclient.Interface
	// Kubeconfig is a kubeconfig file for the superuser, for the
	// statuscheck binary and Helm.
	Kubeconfig string
	// Started is how long the server took to be ready.
	Started time.Duration
	// Stop tears the apiserver down (etcd stops with tb's cleanups).
	Stop func()
}

// Start runs etcd and kube-apiserver under tb, storing under prefix.
func Start(tb *testutil.MainTB, prefix string) (*Server, error) {
	begin := time.Now()
	etcdCfg := testserver.NewTestConfig(tb)
	testserver.RunEtcd(tb, etcdCfg)
	storage := storagebackend.NewDefaultConfig(prefix, nil)
	storage.Transport.ServerList = []string{etcdCfg.ListenClientUrls[0].String()}
	ts := kubeapiservertesting.StartTestServerOrDie(tb, nil, []string{"--authorization-mode=RBAC"}, storage)

	cfg := rest.CopyConfig(ts.ClientConfig)
	cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
	s := &Server{Config: cfg, Stop: ts.TearDownFn}
	var err error
	if s.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return s, fmt.Errorf("kube client: %w", err)
	}
	if s.Dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return s, fmt.Errorf("dynamic client: %w", err)
	}
	if s.Ext, err = apiextclient.NewForConfig(cfg); err != nil {
		return s, fmt.Errorf("apiextensions client: %w", err)
	}
	if s.Kubeconfig, err = testutil.WriteKubeconfig(cfg, tb.TempDir()); err != nil {
		return s, fmt.Errorf("writing kubeconfig: %w", err)
	}
	s.Started = time.Since(begin)
	return s, nil
}

// InstallCRD creates a CRD and waits until it is Established and every
// served version's resource answers a list; it returns when that was.
func (s *Server) InstallCRD(ctx context.Context, crd *apiextv1.CustomResourceDefinition) (time.Time, error) {
	if _, err := s.Ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return time.Time{}, fmt.Errorf("creating CRD %s: %w", crd.Name, err)
	}
	var ready time.Time
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := s.Ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("reading CRD %s: %w", crd.Name, err)
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
				if _, err := s.Dyn.Resource(gvr).List(ctx, metav1.ListOptions{}); err != nil {
					return false, nil
				}
			}
			ready = time.Now()
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("waiting for CRD %s: %w", crd.Name, err)
	}
	return ready, nil
}
