package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/kubetest"
	"github.com/statuscheck/statuscheck/pkg/bridge"
	"github.com/statuscheck/statuscheck/pkg/bridge/controller"
)

// Issue 25's defects, each on a real apiserver with the runner as
// statuscheck bridge runs it. Each test fails on the bridge before the
// issue (the runner kept its RequestAck request in memory, copied a fresh
// Unknown, wrote over another writer, set only the first of duplicate
// entries, left a True when it stopped) and passes after.

// newRunner is a runner the test syncs by hand (no watches, no resync),
// so each defect's interleaving is played exactly.
func newRunner(t *testing.T, c *cluster, src *v1alpha1.StatusSource) (*controller.Runner, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	r, err := controller.New(kubeConfig(t), controller.Options{Source: src, Resource: c.cool.in.GVR("v1beta1"), Namespaced: true, Namespace: c.ns,
		ConditionName: "cool.v1", Log: testr.New(t), Registerer: reg})
	require.NoError(t, err)
	return r, reg
}

func sync1(t *testing.T, r *controller.Runner) {
	t.Helper()
	require.NoError(t, r.Sync(context.Background(), time.Time{}))
}

// entry is the OperatorCondition's Upgradeable entries, as read now.
func (c *cluster) entries() []map[string]interface{} {
	c.t.Helper()
	oc, err := c.dyn.Resource(ocGVR).Namespace(c.ns).Get(context.Background(), "cool.v1", metav1.GetOptions{})
	require.NoError(c.t, err)
	conds, _, _ := unstructured.NestedSlice(oc.Object, "spec", "conditions")
	var out []map[string]interface{}
	for _, e := range conds {
		if m := e.(map[string]interface{}); m["type"] == "Upgradeable" {
			out = append(out, m)
		}
	}
	return out
}

func (c *cluster) entryIs(status, reason string) {
	c.t.Helper()
	es := c.entries()
	require.Len(c.t, es, 1, "one Upgradeable entry")
	assert.Equal(c.t, status, es[0]["status"], "%v", es[0])
	assert.Equal(c.t, reason, es[0]["reason"], "%v", es[0])
}

// writeOC writes the OperatorCondition's spec.conditions as manager.
func (c *cluster) writeOC(manager string, conds ...map[string]interface{}) {
	c.t.Helper()
	oc, err := c.dyn.Resource(ocGVR).Namespace(c.ns).Get(context.Background(), "cool.v1", metav1.GetOptions{})
	require.NoError(c.t, err)
	list := make([]interface{}, len(conds))
	for i := range conds {
		list[i] = conds[i]
	}
	require.NoError(c.t, unstructured.SetNestedSlice(oc.Object, list, "spec", "conditions"))
	_, err = c.dyn.Resource(ocGVR).Namespace(c.ns).Update(context.Background(), oc, metav1.UpdateOptions{FieldManager: manager})
	require.NoError(c.t, err)
}

func ocCond(status, reason string) map[string]interface{} {
	return map[string]interface{}{"type": "Upgradeable", "status": status, "reason": reason, "message": "", "lastTransitionTime": "2026-11-30T12:00:00Z"}
}

func requestAck(c *cluster, specPath string) *v1alpha1.StatusSource {
	src := coolSource(c)
	src.Handshake = &v1alpha1.Handshake{Mode: v1alpha1.HandshakeRequestAck, Request: &v1alpha1.HandshakeRequest{SpecPath: specPath}}
	return src
}

func (c *cluster) token() (string, bool) {
	c.t.Helper()
	cr, err := c.cr().Get(context.Background(), c.name, metav1.GetOptions{})
	require.NoError(c.t, err)
	s, ok, _ := unstructured.NestedString(cr.Object, "spec", "upgradeRequest")
	return s, ok
}

// TestDefect1FreshUnknownHolds: HCO reports a fresh Upgradeable=Unknown
// on start-up; OLM's isOperatorUpgradeable lets Unknown through, so the
// bridge writes False.
func TestDefect1FreshUnknownHolds(t *testing.T) {
	c := setUp(t, installCool(t))
	r, _ := newRunner(t, c, coolSource(c))
	c.operatorReports("Unknown", "Starting", 1)
	sync1(t, r)
	c.entryIs("False", "Starting")
}

// TestDefect2RequestThatDidNotMoveGenerationIsNeverAnswered: a spec
// request at a field the CRD prunes leaves generation where it was, so
// the operator's old fresh True is no answer to it.
func TestDefect2RequestThatDidNotMoveGenerationIsNeverAnswered(t *testing.T) {
	c := setUp(t, installCool(t))
	r, _ := newRunner(t, c, requestAck(c, ".spec.notInTheSchema"))
	c.createCSV("cool.v2", "cool.v1")
	sync1(t, r) // the request: pruned, generation stays 1
	cr, err := c.cr().Get(context.Background(), c.name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, int64(1), cr.GetGeneration(), "the apiserver pruned the request")
	c.operatorReports("True", "StillIdle", 1)
	for i := 0; i < 3; i++ {
		sync1(t, r)
		c.entryIs("False", bridge.ReasonNotObservable)
	}
}

// TestDefect3RequestStateLivesInTheCluster: a revert of the request plus
// a spec change, the CR made again, a restart and a second replica are
// all decided on what the CR holds.
func TestDefect3RequestStateLivesInTheCluster(t *testing.T) {
	answer := func(c *cluster) {
		cr, err := c.cr().Get(context.Background(), c.name, metav1.GetOptions{})
		require.NoError(t, err)
		c.operatorReports("True", "Answered"+cr.GetResourceVersion(), cr.GetGeneration())
	}
	t.Run("a revert and a spec change", func(t *testing.T) {
		c := setUp(t, installCool(t))
		r, _ := newRunner(t, c, requestAck(c, ".spec.upgradeRequest"))
		c.createCSV("cool.v2", "cool.v1")
		sync1(t, r)
		answer(c)
		sync1(t, r)
		c.entryIs("True", bridge.ReasonAnswered)
		// GitOps puts the spec back (no request), then a user changes it;
		// the operator's True is for the reverted spec.
		cr, err := c.cr().Get(context.Background(), c.name, metav1.GetOptions{})
		require.NoError(t, err)
		unstructured.RemoveNestedField(cr.Object, "spec", "upgradeRequest")
		_, err = c.cr().Update(context.Background(), cr, metav1.UpdateOptions{FieldManager: "argocd-controller"})
		require.NoError(t, err)
		c.userSetsStorage("MariaDB")
		sync1(t, r)
		c.entryIs("False", bridge.ReasonRequested)
		tok, _ := c.token()
		assert.Equal(t, "2", tok, "asked again, with a new token")
	})
	t.Run("the CR made again", func(t *testing.T) {
		c := setUp(t, installCool(t))
		r, _ := newRunner(t, c, requestAck(c, ".spec.upgradeRequest"))
		c.createCSV("cool.v2", "cool.v1")
		sync1(t, r)
		require.NoError(t, c.cr().Delete(context.Background(), c.name, metav1.DeleteOptions{}))
		obj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": c.cool.in.APIVersion("v1beta1"), "kind": "CoolOperator",
			"metadata": map[string]interface{}{"name": c.name, "namespace": c.ns}, "spec": map[string]interface{}{"storageLayer": "PostgreSQL"}}}
		_, err := c.cr().Create(context.Background(), obj, metav1.CreateOptions{})
		require.NoError(t, err)
		c.userSetsStorage("MariaDB") // generation 2, the old request's
		c.operatorReports("True", "Idle", 2)
		sync1(t, r)
		c.entryIs("False", bridge.ReasonRequested)
	})
	t.Run("a restart", func(t *testing.T) {
		c := setUp(t, installCool(t))
		src := requestAck(c, ".spec.upgradeRequest")
		r, _ := newRunner(t, c, src)
		c.createCSV("cool.v2", "cool.v1")
		sync1(t, r)
		answer(c)
		restarted, _ := newRunner(t, c, src)
		sync1(t, restarted)
		c.entryIs("True", bridge.ReasonAnswered)
		tok, _ := c.token()
		assert.Equal(t, "1", tok, "the restarted bridge asked nothing again")
	})
	t.Run("two replicas make one request and the entry does not flip", func(t *testing.T) {
		c := setUp(t, installCool(t))
		src := requestAck(c, ".spec.upgradeRequest")
		a, regA := newRunner(t, c, src)
		b, regB := newRunner(t, c, src)
		c.createCSV("cool.v2", "cool.v1")
		var wg sync.WaitGroup
		for _, r := range []*controller.Runner{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 5; i++ {
					assert.NoError(t, r.Sync(context.Background(), time.Time{}))
				}
			}()
		}
		wg.Wait()
		assert.Equal(t, 1.0, metricSum(t, regA, "statuscheck_bridge_upgrade_requests_total")+metricSum(t, regB, "statuscheck_bridge_upgrade_requests_total"), "one request")
		tok, _ := c.token()
		assert.Equal(t, "1", tok)
		answer(c)
		for i := 0; i < 3; i++ {
			sync1(t, a)
			sync1(t, b)
			c.entryIs("True", bridge.ReasonAnswered)
		}
		assert.Equal(t, 1.0, metricSum(t, regA, "statuscheck_bridge_upgrade_requests_total")+metricSum(t, regB, "statuscheck_bridge_upgrade_requests_total"), "still one request")
	})
}

// TestDefect4AnotherWriterIsNotOverwritten: an operator that still writes
// its own OperatorCondition (operator-lib's conditions.Set, as HCO does)
// keeps the entry; the bridge says so and writes nothing.
func TestDefect4AnotherWriterIsNotOverwritten(t *testing.T) {
	c := setUp(t, installCool(t))
	r, reg := newRunner(t, c, coolSource(c))
	c.writeOC("hyperconverged-cluster-operator", ocCond("True", "ReconcileCompleted"))
	c.operatorReports("False", "Migrating", 1)
	sync1(t, r)
	c.entryIs("True", "ReconcileCompleted")
	assert.Equal(t, 0.0, metricSum(t, reg, "statuscheck_bridge_operatorcondition_writes_total"), "nothing written")
	assert.ErrorContains(t, r.Readiness(), "hyperconverged-cluster-operator")
}

// TestDefect5DuplicateEntriesAreFolded: OLM's status copy lets the last
// of duplicate entries win, meta.SetStatusCondition sets the first; the
// bridge leaves one.
func TestDefect5DuplicateEntriesAreFolded(t *testing.T) {
	c := setUp(t, installCool(t))
	r, _ := newRunner(t, c, coolSource(c))
	c.writeOC(bridge.FieldManager, ocCond("False", "Old"), ocCond("True", "Stale"))
	c.operatorReports("False", "Migrating", 1)
	sync1(t, r)
	c.entryIs("False", "Migrating")
}

// TestDefect6StopWithdrawsTrue: on a graceful stop the bridge withdraws
// the True it wrote; nothing keeps it equal to the CR any more.
func TestDefect6StopWithdrawsTrue(t *testing.T) {
	c := setUp(t, installCool(t))
	reg := prometheus.NewRegistry()
	r, err := controller.New(kubeConfig(t), controller.Options{Source: coolSource(c), Resource: c.cool.in.GVR("v1beta1"), Namespaced: true, Namespace: c.ns,
		ConditionName: "cool.v1", Resync: 100 * time.Millisecond, Log: testr.New(t), Registerer: reg})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	c.ocEntry("True", bridge.ReasonUpgradeable)
	cancel()
	require.NoError(t, <-done)
	c.entryIs("False", bridge.ReasonStopped)
}

// TestDefect8RequestWithdrawnWhenItsCSVGoes: the operator defers
// migrations while a request stands; when the replacing CSV goes, the
// request goes, and its count stays.
func TestDefect8RequestWithdrawnWhenItsCSVGoes(t *testing.T) {
	c := setUp(t, installCool(t))
	r, _ := newRunner(t, c, requestAck(c, ".spec.upgradeRequest"))
	c.createCSV("cool.v2", "cool.v1")
	sync1(t, r)
	_, ok := c.token()
	require.True(t, ok)
	require.NoError(t, c.csvs().Delete(context.Background(), "cool.v2", metav1.DeleteOptions{}))
	sync1(t, r)
	_, ok = c.token()
	assert.False(t, ok, "the request is withdrawn")
	c.entryIs("False", bridge.ReasonNoRequest)
	cr, err := c.cr().Get(context.Background(), c.name, metav1.GetOptions{})
	require.NoError(t, err)
	var rec bridge.RequestRecord
	require.NoError(t, json.Unmarshal([]byte(cr.GetAnnotations()[bridge.AnnotationRequest]), &rec))
	assert.Equal(t, bridge.RequestRecord{Token: 1}, rec, "the count is kept")
	c.createCSV("cool.v3", "cool.v1")
	sync1(t, r)
	tok, _ := c.token()
	assert.Equal(t, "2", tok, "a new request never repeats a token")
}

func kubeConfig(t *testing.T) *rest.Config { return kubetest.Get(t).Config }

// refusePatches fails every PATCH the runner sends (an operator's own
// admission webhook down, RBAC, a CEL rule refusing the request).
type refusePatches struct{ next http.RoundTripper }

func (r refusePatches) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPatch {
		return nil, errors.New("webhook unavailable")
	}
	return r.next.RoundTrip(req)
}

// TestReviewRefusedRequestLeavesNoTrue: the entry is written before the
// request, so a request (here its withdrawal) the cluster refuses does
// not leave the True of the answered request behind for the next CSV.
func TestReviewRefusedRequestLeavesNoTrue(t *testing.T) {
	c := setUp(t, installCool(t))
	src := requestAck(c, ".spec.upgradeRequest")
	r, _ := newRunner(t, c, src)
	c.createCSV("cool.v2", "cool.v1")
	sync1(t, r)
	cr, err := c.cr().Get(context.Background(), c.name, metav1.GetOptions{})
	require.NoError(t, err)
	c.operatorReports("True", "Answered", cr.GetGeneration())
	sync1(t, r)
	c.entryIs("True", bridge.ReasonAnswered)

	cfg := rest.CopyConfig(kubeConfig(t))
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return refusePatches{rt} }
	refused, err := controller.New(cfg, controller.Options{Source: src, Resource: c.cool.in.GVR("v1beta1"), Namespaced: true, Namespace: c.ns,
		ConditionName: "cool.v1", Log: testr.New(t), Registerer: prometheus.NewRegistry()})
	require.NoError(t, err)
	require.NoError(t, c.csvs().Delete(context.Background(), "cool.v2", metav1.DeleteOptions{}))
	assert.ErrorContains(t, refused.Sync(context.Background(), time.Time{}), "webhook unavailable", "the withdrawal is refused")
	c.entryIs("False", bridge.ReasonNoRequest)
	c.createCSV("cool.v3", "cool.v1")
	assert.Error(t, refused.Sync(context.Background(), time.Time{}))
	c.entryIs("False", bridge.ReasonRequested)
}

// TestReviewUnreadableCRIsFalse: when the OperatorCondition can be read
// and the CR cannot (its kind no longer served here, RBAC, a conversion
// webhook), the True the bridge wrote does not stay.
func TestReviewUnreadableCRIsFalse(t *testing.T) {
	c := setUp(t, installCool(t))
	r, _ := newRunner(t, c, coolSource(c))
	sync1(t, r)
	c.entryIs("True", bridge.ReasonUpgradeable)
	gone, err := controller.New(kubeConfig(t), controller.Options{Source: coolSource(c), Resource: schema.GroupVersionResource{Group: "cool.operators.corp", Version: "v9", Resource: "cooloperators"},
		Namespaced: true, Namespace: c.ns, ConditionName: "cool.v1", Log: testr.New(t), Registerer: prometheus.NewRegistry()})
	require.NoError(t, err)
	assert.Error(t, gone.Sync(context.Background(), time.Time{}))
	c.entryIs("False", bridge.ReasonUnreadable)
}
