package conformance

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/kubetest"
	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/bridge"
	"github.com/statuscheck/statuscheck/pkg/bridge/controller"
)

// startBridge runs a bridge for the cluster's CR and its OperatorCondition
// cool.v1 until the test ends; it returns the runner and its registry.
func startBridge(t *testing.T, c *cluster, src *v1alpha1.StatusSource, mutate func(*controller.Options)) (*controller.Runner, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	opts := controller.Options{Source: src, Resource: c.cool.in.GVR("v1beta1"), Namespaced: true, Namespace: c.ns, ConditionName: "cool.v1",
		Resync: 200 * time.Millisecond, Log: testr.New(t), Registerer: reg}
	if mutate != nil {
		mutate(&opts)
	}
	r, err := controller.NewWithClient(c.dyn, opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err, "a graceful stop")
		case <-time.After(10 * time.Second):
			t.Error("the bridge did not stop")
		}
	})
	return r, reg
}

// ocEntry waits until the OperatorCondition's Upgradeable entry has the
// status and reason, and returns the OperatorCondition.
func (c *cluster) ocEntry(status, reason string) *unstructured.Unstructured {
	c.t.Helper()
	var last interface{}
	var got *unstructured.Unstructured
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		oc, err := c.dyn.Resource(ocGVR).Namespace(c.ns).Get(ctx, "cool.v1", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(oc.Object, "spec", "conditions")
		for _, e := range conds {
			m := e.(map[string]interface{})
			if m["type"] == "Upgradeable" {
				last = m
				if m["status"] == status && m["reason"] == reason {
					got = oc
					return true, nil
				}
			}
		}
		return false, nil
	})
	require.NoError(c.t, err, "waiting for Upgradeable=%s (%s); last %v", status, reason, last)
	return got
}

func coolSource(c *cluster) *v1alpha1.StatusSource {
	return &v1alpha1.StatusSource{APIVersion: c.cool.in.APIVersion("v1beta1"), Kind: "CoolOperator", Name: c.name}
}

// TestBridgeOnARealServer runs the bridge's runner against a real
// apiserver serving the CR's CRD and OLM's OperatorCondition: it writes
// the Upgradeable entry from the CR's condition as the operator reports
// it (fresh True, outdated after a spec change, the operator's False),
// keeps every other entry another writer put there, and counts.
func TestBridgeOnARealServer(t *testing.T) {
	cool := installCool(t)
	c := setUp(t, cool) // the CR at generation 1, Upgradeable=True for 1
	_, reg := startBridge(t, c, coolSource(c), nil)

	c.ocEntry("True", bridge.ReasonUpgradeable)
	// An entry of another type in what the bridge writes stays (another
	// manager's writes make it yield: TestDefect4AnotherWriterIsNotOverwritten).
	oc, err := c.dyn.Resource(ocGVR).Namespace(c.ns).Get(context.Background(), "cool.v1", metav1.GetOptions{})
	require.NoError(t, err)
	conds, _, _ := unstructured.NestedSlice(oc.Object, "spec", "conditions")
	conds = append(conds, map[string]interface{}{"type": "Ready", "status": "True", "reason": "Ready", "message": "", "lastTransitionTime": "2024-01-01T00:00:00Z"})
	require.NoError(t, unstructured.SetNestedSlice(oc.Object, conds, "spec", "conditions"))
	_, err = c.dyn.Resource(ocGVR).Namespace(c.ns).Update(context.Background(), oc, metav1.UpdateOptions{FieldManager: bridge.FieldManager})
	require.NoError(t, err)

	c.userSetsStorage("MariaDB") // generation 2: the True is outdated
	c.ocEntry("False", bridge.ReasonOutdated)
	c.operatorReports("False", "MigrationInProgress", 2)
	got := c.ocEntry("False", "MigrationInProgress")
	c.operatorReports("True", "Idle", 2)
	got = c.ocEntry("True", bridge.ReasonUpgradeable)
	conds, _, _ = unstructured.NestedSlice(got.Object, "spec", "conditions")
	var types []string
	for _, e := range conds {
		types = append(types, e.(map[string]interface{})["type"].(string))
	}
	assert.ElementsMatch(t, []string{"Upgradeable", "Ready"}, types, "the other entry kept")
	// The runner counts a write once the apiserver has answered it, which
	// may be after this test has read the written entry: wait for it.
	assert.Eventually(t, func() bool { return metricSum(t, reg, "statuscheck_bridge_operatorcondition_writes_total") >= 4 }, 10*time.Second, 20*time.Millisecond,
		"four writes counted: %v", metricSum(t, reg, "statuscheck_bridge_operatorcondition_writes_total"))
}

// metricSum adds the counters of a metric family.
func metricSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

// TestBridgeRequestAckOnARealServer is lock flow B: no request while no
// CSV replaces the running one; when one appears the request is written
// to the CR (a spec write: generation moves) and the entry is True only
// on the operator's fresh answer; a spec change after the answer is
// deferred, so it stays True.
func TestBridgeRequestAckOnARealServer(t *testing.T) {
	cool := installCool(t)
	c := setUp(t, cool)
	src := coolSource(c)
	src.Handshake = &v1alpha1.Handshake{Mode: v1alpha1.HandshakeRequestAck, Request: &v1alpha1.HandshakeRequest{SpecPath: ".spec.upgradeRequest"}}
	startBridge(t, c, src, nil)

	c.ocEntry("False", bridge.ReasonNoRequest)
	c.createCSV("cool.v2", "cool.v1")
	c.ocEntry("False", bridge.ReasonUnanswered)
	cr, err := c.cr().Get(context.Background(), c.name, metav1.GetOptions{})
	require.NoError(t, err)
	token, _, _ := unstructured.NestedString(cr.Object, "spec", "upgradeRequest")
	assert.Equal(t, "1", token, "the request, in the CR's spec")
	assert.Equal(t, int64(2), cr.GetGeneration(), "a spec write: generation moved")
	c.operatorReports("True", "UpgradeRequestAccepted", 2)
	c.ocEntry("True", bridge.ReasonAnswered)
	c.userSetsStorage("MariaDB")
	time.Sleep(600 * time.Millisecond) // three resyncs
	c.ocEntry("True", bridge.ReasonAnswered)
}

// TestBridgeNeverCrashesOverAMissingFeature: without
// OPERATOR_CONDITION_NAME it is idle and ready; with a kind the server
// does not serve it keeps retrying, counts the errors and stops cleanly.
func TestBridgeNeverCrashesOverAMissingFeature(t *testing.T) {
	srv := kubetest.Get(t)
	srv.InstallOLM(t)
	t.Run("no OperatorCondition name", func(t *testing.T) {
		r, err := controller.NewWithClient(srv.Dynamic, controller.Options{Source: &v1alpha1.StatusSource{APIVersion: "a.io/v1", Kind: "A", Name: "a"}, Registerer: prometheus.NewRegistry(), Log: testr.New(t)})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		assert.NoError(t, r.Start(ctx))
		assert.True(t, r.Ready())
	})
	t.Run("a kind the server does not serve", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		ns := kubetest.Namespace("bridge")
		oc := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "operators.coreos.com/v2", "kind": "OperatorCondition",
			"metadata": map[string]interface{}{"name": "x.v1", "namespace": ns}}}
		_, err := srv.Dynamic.Resource(ocGVR).Namespace(ns).Create(context.Background(), oc, metav1.CreateOptions{})
		require.NoError(t, err)
		r, err := controller.NewWithClient(srv.Dynamic, controller.Options{Source: &v1alpha1.StatusSource{APIVersion: "not.served.io/v1", Kind: "Nope", Name: "n"},
			Resource: schema.GroupVersionResource{Group: "not.served.io", Version: "v1", Resource: "nopes"}, Namespaced: true, Namespace: ns, ConditionName: "x.v1",
			Resync: 50 * time.Millisecond, Registerer: reg, Log: testr.New(t)})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		assert.NoError(t, r.Start(ctx), "no error that would stop the manager")
		assert.False(t, r.Ready())
		assert.GreaterOrEqual(t, metricSum(t, reg, "statuscheck_bridge_sync_errors_total"), 1.0)
	})
}

// TestBridgeCommand runs `statuscheck bridge` as a separate process, as
// the sidecar runs: it writes the entry, serves /readyz and its metrics
// on controller-runtime's registry, and stops on SIGTERM with exit 0.
func TestBridgeCommand(t *testing.T) {
	cool := installCool(t)
	c := setUp(t, cool)
	metricsAddr, probeAddr := testutil.FreeAddr(t), testutil.FreeAddr(t)
	ref := cool.in.APIVersion("v1beta1") + "/CoolOperator/" + c.name
	cmd := exec.Command(testutil.Binary(t), "bridge", "--kubeconfig", kubetest.Get(t).Kubeconfig, "-n", c.ns,
		"--operator-condition-name", "cool.v1", "--crd", cool.file, "--source", ref, "--resync", "200ms",
		"--metrics-bind-address", metricsAddr, "--health-probe-bind-address", probeAddr)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "STATUSCHECK_DEBUG_PEAK_MEMORY=1")
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	}()

	c.ocEntry("True", bridge.ReasonUpgradeable)
	c.userSetsStorage("MariaDB")
	c.ocEntry("False", bridge.ReasonOutdated)
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	code, _ := get("http://" + probeAddr + "/readyz")
	assert.Equal(t, http.StatusOK, code)
	// A write is counted once the apiserver has answered it, which may
	// be after this test read the entry: wait for the count.
	var body string
	assert.Eventually(t, func() bool {
		code, body = get("http://" + metricsAddr + "/metrics")
		return code == http.StatusOK && strings.Contains(body, `statuscheck_bridge_operatorcondition_writes_total{status="False"}`)
	}, 10*time.Second, 50*time.Millisecond, "the False write counted at /metrics: %s", body)
	assert.Contains(t, body, "statuscheck_bridge_write_lag_seconds_bucket")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		assert.NoError(t, err, "exit 0 on SIGTERM: %s", stderr.String())
		// The binary's own VmHWM: a child's rusage counts the test
		// process's pages too (see internal/cli, PeakMemoryEnv).
		if m := regexp.MustCompile(`peak memory (\d+) kB`).FindStringSubmatch(stderr.String()); m != nil {
			kb, _ := strconv.Atoi(m[1])
			t.Logf("statuscheck bridge: CPU %s, peak RSS %d MiB", (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Round(time.Millisecond), kb>>10)
			assert.Less(t, kb, 128<<10, "a sidecar's memory")
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("no exit after SIGTERM: %s", stderr.String())
	}
	assert.Contains(t, stderr.String(), "wrote Upgradeable")
}

// TestBridgeSurvivesACutApiserver cuts the bridge's connections while
// the user changes the spec and the operator reports False: it writes
// nothing it has not read (the entry stays as it was) and converges to
// the CR's False once the server is back.
func TestBridgeSurvivesACutApiserver(t *testing.T) {
	cool := installCool(t)
	c := setUp(t, cool)
	host := strings.TrimPrefix(kubetest.Get(t).Config.Host, "https://")
	px := testutil.NewProxy(t, host)
	cfg, err := clientcmd.BuildConfigFromFlags("", testutil.KubeconfigVia(t, kubetest.Get(t).Kubeconfig, px.Addr()))
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	r, err := controller.New(cfg, controller.Options{Source: coolSource(c), Resource: c.cool.in.GVR("v1beta1"), Namespaced: true, Namespace: c.ns,
		ConditionName: "cool.v1", Resync: 200 * time.Millisecond, Log: testr.New(t), Registerer: reg})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	defer func() { cancel(); assert.NoError(t, <-done) }()

	c.ocEntry("True", bridge.ReasonUpgradeable)
	px.Cut()
	c.userSetsStorage("MariaDB")
	c.operatorReports("False", "MigrationInProgress", 2)
	time.Sleep(1500 * time.Millisecond)
	c.ocEntry("True", bridge.ReasonUpgradeable) // nothing written while cut off
	px.Restore()
	c.ocEntry("False", "MigrationInProgress")
}
