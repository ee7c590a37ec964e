// Package admission tests what statuscheck writes for clusters without OLM
// (docs/without-olm.md) on a real kube-apiserver: the admission guard that
// `statuscheck generate --admission-policy` prints (a
// ValidatingAdmissionPolicy and its binding) and the pre-upgrade check
// `statuscheck gate`, both run as the built binary.
//
// TestMain starts one kube-apiserver (test/plain/kubeapi: k8s.io/kubernetes
// cmd/kube-apiserver/app/testing, RBAC on) on an embedded etcd, offline and on
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
package admission

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"k8s.io/klog/v2"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/apiserver"
	"github.com/statuscheck/statuscheck/test/plain/kubeapi"
)

// srv is the running kube-apiserver.
var srv *kubeapi.Server

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
		srv, err = start(owner)
		if srv != nil {
			stop = srv.Stop
		}
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
// CRD.
func start(tb *testutil.MainTB) (*kubeapi.Server, error) {
	s, err := kubeapi.Start(tb, "/plaintest")
	if err != nil {
		return s, err
	}
	crd := testutil.ReadCRD(tb, "testdata/bundles/protected/manifests/cool.operators.corp_cooloperators.yaml")
	if _, err := s.InstallCRD(context.Background(), crd); err != nil {
		return s, err
	}
	return s, nil
}
