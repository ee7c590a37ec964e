package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/kubetest"
	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/record"
	"github.com/statuscheck/statuscheck/pkg/simulate"
	"github.com/statuscheck/statuscheck/pkg/source"
	"github.com/statuscheck/statuscheck/pkg/trace"
)

var (
	csvGVR = contract.CSVResource
	ocGVR  = contract.OperatorConditionResource
)

// coolCRD is the good bundle's CRD, installed on the server under a group
// of its own, and written to a file as the recorder's --crd.
type coolCRD struct {
	in   *kubetest.InstalledCRD
	file string
}

func installCool(t *testing.T) coolCRD {
	t.Helper()
	in := install(t, testutil.ReadCRD(t, goodCRD))
	c := in.CRD.DeepCopy()
	c.APIVersion, c.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
	c.ManagedFields, c.Status = nil, apiextv1.CustomResourceDefinitionStatus{}
	out, err := yaml.Marshal(c)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "crd.yaml")
	require.NoError(t, os.WriteFile(file, out, 0o644))
	return coolCRD{in: in, file: file}
}

// cluster is what the scenario writes through: the CR as the user (spec)
// and the operator (/status), the CSVs as OLM.
type cluster struct {
	t    *testing.T
	dyn  dynamic.Interface
	ns   string
	cool coolCRD
	name string
}

func (c *cluster) cr() dynamic.ResourceInterface {
	return c.dyn.Resource(c.cool.in.GVR("v1beta1")).Namespace(c.ns)
}

func (c *cluster) csvs() dynamic.ResourceInterface { return c.dyn.Resource(csvGVR).Namespace(c.ns) }

func upgradeable(status, reason string, og int64) map[string]interface{} {
	return map[string]interface{}{"conditions": []interface{}{map[string]interface{}{
		"type": "Upgradeable", "status": status, "reason": reason, "message": "", "lastTransitionTime": "2026-11-30T12:00:00Z", "observedGeneration": og}}}
}

// userSetsStorage is a user's spec write (kubectl edit).
func (c *cluster) userSetsStorage(v string) *unstructured.Unstructured {
	c.t.Helper()
	obj, err := c.cr().Get(context.Background(), c.name, metav1.GetOptions{})
	require.NoError(c.t, err)
	require.NoError(c.t, unstructured.SetNestedField(obj.Object, v, "spec", "storageLayer"))
	obj, err = c.cr().Update(context.Background(), obj, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
	require.NoError(c.t, err)
	return obj
}

// operatorReports is the operator's /status write. A write that changes
// nothing is no write to the apiserver (no new resourceVersion, no watch
// event), so each report here says something new in its reason.
func (c *cluster) operatorReports(status, reason string, og int64) *unstructured.Unstructured {
	c.t.Helper()
	obj, err := c.cr().Get(context.Background(), c.name, metav1.GetOptions{})
	require.NoError(c.t, err)
	obj.Object["status"] = upgradeable(status, reason, og)
	obj, err = c.cr().UpdateStatus(context.Background(), obj, metav1.UpdateOptions{FieldManager: "cool-operator"})
	require.NoError(c.t, err)
	return obj
}

func (c *cluster) createCSV(name, replaces string) *unstructured.Unstructured {
	c.t.Helper()
	spec := map[string]interface{}{
		"displayName": "Cool Operator", "install": map[string]interface{}{"strategy": "deployment"},
		"customresourcedefinitions": map[string]interface{}{"owned": []interface{}{map[string]interface{}{
			"name": c.cool.in.CRD.Name, "kind": "CoolOperator", "version": "v1beta1"}}},
	}
	if replaces != "" {
		spec["replaces"] = replaces
	}
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
		"metadata": map[string]interface{}{"name": name, "namespace": c.ns}, "spec": spec}}
	obj, err := c.csvs().Create(context.Background(), obj, metav1.CreateOptions{FieldManager: "olm"})
	require.NoError(c.t, err)
	return obj
}

// olmSetsPhase is OLM's CSV status write, with the reasons OLM gives
// (transitionCSVState); the real OLM plays these in test/olm, this server
// has only its CRDs.
func (c *cluster) olmSetsPhase(name, phase, reason string) *unstructured.Unstructured {
	c.t.Helper()
	obj, err := c.csvs().Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(c.t, err)
	obj.Object["status"] = map[string]interface{}{"phase": phase, "reason": reason, "message": "set by the test"}
	obj, err = c.csvs().UpdateStatus(context.Background(), obj, metav1.UpdateOptions{FieldManager: "olm"})
	require.NoError(c.t, err)
	return obj
}

// setUp creates what runs before the recording: the CR at generation 1
// reporting a fresh Upgradeable=True, the running CSV (Succeeded) and its
// OperatorCondition.
func setUp(t *testing.T, cool coolCRD) *cluster {
	t.Helper()
	srv := kubetest.Get(t)
	srv.InstallOLM(t)
	c := &cluster{t: t, dyn: srv.Dynamic, ns: kubetest.Namespace("record"), cool: cool, name: "cool-operator"}
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": cool.in.APIVersion("v1beta1"), "kind": "CoolOperator",
		"metadata": map[string]interface{}{"name": c.name, "namespace": c.ns},
		"spec":     map[string]interface{}{"storageLayer": "PostgreSQL"}}}
	_, err := c.cr().Create(context.Background(), obj, metav1.CreateOptions{FieldManager: "kubectl-create"})
	require.NoError(t, err)
	c.operatorReports("True", "Idle", 1)
	c.createCSV("cool.v1", "")
	c.olmSetsPhase("cool.v1", "Succeeded", "InstallSucceeded")
	oc := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "operators.coreos.com/v2", "kind": "OperatorCondition",
		"metadata": map[string]interface{}{"name": "cool.v1", "namespace": c.ns},
		"spec":     map[string]interface{}{"deployments": []interface{}{"cool-operator"}}}}
	_, err = c.dyn.Resource(ocGVR).Namespace(c.ns).Create(context.Background(), oc, metav1.CreateOptions{FieldManager: "olm"})
	require.NoError(t, err)
	return c
}

// scenario plays issue 13's run, with the CSV writes OLM makes, and
// returns the resourceVersion of each write a step must come from, in
// order, and that of the upgrade: a user changes the spec, the operator
// reports an outdated Upgradeable=True, then a fresh False; a CSV
// replacing the running one appears, enters Pending (no gate yet), is
// held by OLM's gate, the running one enters Replacing, and the new one
// is committed (InstallReady) and replaces the operator (Installing)
// while the condition is still False. between runs before write i
// (1-based).
func (c *cluster) scenario(between func(i int)) (stepRVs []string, upgradeRV string) {
	writes := []struct {
		write func() *unstructured.Unstructured
		step  bool
	}{
		{func() *unstructured.Unstructured { return c.userSetsStorage("MariaDB") }, true},
		{func() *unstructured.Unstructured { return c.operatorReports("True", "StillIdle", 1) }, true},
		{func() *unstructured.Unstructured { return c.operatorReports("False", "Migrating", 2) }, true},
		{func() *unstructured.Unstructured { return c.createCSV("cool.v2", "cool.v1") }, false},
		{func() *unstructured.Unstructured { return c.olmSetsPhase("cool.v2", "Pending", "RequirementsUnknown") }, false},
		{func() *unstructured.Unstructured {
			return c.olmSetsPhase("cool.v2", "Pending", "OperatorConditionNotUpgradeable")
		}, true},
		{func() *unstructured.Unstructured { return c.olmSetsPhase("cool.v1", "Replacing", "BeingReplaced") }, false},
		{func() *unstructured.Unstructured { return c.olmSetsPhase("cool.v2", "InstallReady", "RequirementsMet") }, true},
		{func() *unstructured.Unstructured { return c.olmSetsPhase("cool.v2", "Installing", "InstallSucceeded") }, true},
	}
	for i, w := range writes {
		if between != nil {
			between(i + 1)
		}
		obj := w.write()
		if w.step {
			stepRVs = append(stepRVs, obj.GetResourceVersion())
		}
	}
	return stepRVs, stepRVs[len(stepRVs)-1]
}

// startRecorder runs statuscheck record on the scenario's CR, with its
// CRD file as --crd.
func startRecorder(t *testing.T, kubeconfig string, c *cluster) *testutil.Recorder {
	t.Helper()
	return testutil.StartRecorder(t, "--kubeconfig", kubeconfig, "-n", c.ns,
		"--crd", c.cool.file, "--source", c.cool.in.APIVersion("v1beta1")+"/CoolOperator/"+c.name)
}

// replayed is a trace replayed under every policy, row by row.
type replayed struct {
	sum  *simulate.Summary
	rows []simulate.Row
}

func replayFile(t *testing.T, path string, ctx *source.Context) replayed {
	t.Helper()
	opts := trace.OpenOptions{Limits: trace.DefaultLimits}
	if ctx != nil {
		opts.Source, opts.Plural = ctx.Source, ctx.Plural
	}
	tr, err := trace.Open(path, opts)
	require.NoError(t, err)
	defer tr.Close()
	cfg, _, err := simulate.NewConfig(ctx, tr, contract.Policies(), contract.PolicyOLM)
	require.NoError(t, err)
	var out replayed
	out.sum, err = simulate.Replay(tr, cfg, func(r simulate.Row) error { out.rows = append(out.rows, r); return nil })
	require.NoError(t, err)
	return out
}

// verdictsAt gives, per resourceVersion of a CR step, the gate's verdicts
// and the violations found there.
func (r replayed) verdictsAt() map[string]string {
	out := map[string]string{}
	for _, row := range r.rows {
		if row.Step.Target != v1alpha1.TargetSource || row.Step.Actor == v1alpha1.ActorOLM {
			continue
		}
		var parts []string
		for i, d := range row.Outcome.Verdicts {
			parts = append(parts, fmt.Sprintf("%s=%s", contract.Policies()[i], d.Verdict))
		}
		for _, v := range row.Outcome.Violations {
			parts = append(parts, fmt.Sprintf("%s[%s]", v.Rule, v.Policy))
		}
		out[row.Step.ResourceVersion] = strings.Join(parts, " ")
	}
	return out
}

// snapshotStream writes what kubectl get -w -o json prints for the CR
// from rv on: the object at rv, then each version the watch gives, until
// stop is closed.
func snapshotStream(t *testing.T, c *cluster, stop <-chan struct{}) (path string, wait func()) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "snapshots.json")
	f, err := os.Create(path)
	require.NoError(t, err)
	obj, err := c.cr().Get(context.Background(), c.name, metav1.GetOptions{})
	require.NoError(t, err)
	enc := json.NewEncoder(f)
	enc.SetIndent("", "    ")
	require.NoError(t, enc.Encode(obj.Object))
	w, err := c.cr().Watch(context.Background(), metav1.ListOptions{FieldSelector: "metadata.name=" + c.name, ResourceVersion: obj.GetResourceVersion()})
	require.NoError(t, err)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		defer f.Close()
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				if u, ok := ev.Object.(*unstructured.Unstructured); ok {
					_ = enc.Encode(u.Object)
				}
			case <-stop:
				w.Stop()
				return
			}
		}
	}()
	return path, func() { <-finished }
}

// TestRecordEndToEnd runs the built statuscheck record against the test
// server while the scenario plays, ends it with SIGINT, and replays the
// recording: upgrade-while-blocked under olm at the step where the new
// CSV left Pending, and at every CR step the same verdicts as a
// kubectl get -w -o json stream of the same object gives.
func TestRecordEndToEnd(t *testing.T) {
	t.Parallel()
	cool := installCool(t)
	c := setUp(t, cool)
	srv := kubetest.Get(t)
	stop := make(chan struct{})
	snaps, waitSnaps := snapshotStream(t, c, stop)
	rec := startRecorder(t, srv.Kubeconfig, c)
	stepRVs, upgradeRV := c.scenario(nil)
	rec.WaitSteps(len(stepRVs))
	time.Sleep(200 * time.Millisecond) // a step more would be a double
	assert.Equal(t, 0, rec.StopWith(syscall.SIGINT), "SIGINT ends the recording with 0; stderr:\n%s", rec.Stderr)
	assert.Contains(t, rec.Stderr.String(), fmt.Sprintf("statuscheck: recorded %d steps of CoolOperator cool-operator to %s", len(stepRVs), rec.Trace))
	close(stop)
	waitSnaps()

	trace := rec.Read()
	t.Logf("recording:\n%s", trace)
	assert.Contains(t, trace, "# cool.v1 entered Replacing")
	got := replayFile(t, rec.Trace, nil)
	var rvs []string
	for _, row := range got.rows {
		rvs = append(rvs, row.Step.ResourceVersion)
	}
	assert.Equal(t, stepRVs, rvs, "one step per write, in order, each with its resourceVersion")
	var upgradeStep int
	for _, row := range got.rows {
		if row.Step.Verb == v1alpha1.VerbUpgrade {
			upgradeStep = row.Outcome.Step
			assert.Equal(t, upgradeRV, row.Step.ResourceVersion, "the upgrade is the new CSV moving to Installing")
		}
	}
	require.NotZero(t, upgradeStep)
	found := false
	for _, v := range got.sum.Violations {
		if v.Rule == simulate.RuleUpgradeWhileBlocked && v.Policy == contract.PolicyOLM {
			assert.Equal(t, upgradeStep, v.Step)
			found = true
		}
	}
	assert.True(t, found, "upgrade-while-blocked under olm; violations: %+v", got.sum.Violations)

	// The binary says the same, with exit code 1.
	out, err := exec.Command(testutil.Binary(t), "simulate", "--policy", "all", rec.Trace).CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, string(out))
	assert.Equal(t, 1, ee.ExitCode(), string(out))
	assert.Contains(t, string(out), "upgrade-while-blocked", string(out))

	// The snapshot stream of the same CR: the same verdicts at every CR
	// step.
	sctx, err := source.FromCRD(cool.file, cool.in.APIVersion("v1beta1")+"/CoolOperator/"+c.ns+"/"+c.name)
	require.NoError(t, err)
	snap := replayFile(t, snaps, sctx)
	recorded := replayFile(t, rec.Trace, sctx)
	assert.Equal(t, snap.verdictsAt(), recorded.verdictsAt(), "verdicts per CR write: snapshots vs recording")
	assert.Len(t, snap.verdictsAt(), 3, "the snapshot stream holds the three CR writes")
}

// TestRecordSurvivesACutWatch cuts every connection of the recorder in
// the middle of the scenario and keeps the server out of its reach while
// three writes happen; the watches resume from the last version they
// gave, and the recording loses no step and doubles none. Then SIGKILL:
// what is on disk replays.
func TestRecordSurvivesACutWatch(t *testing.T) {
	t.Parallel()
	cool := installCool(t)
	c := setUp(t, cool)
	host := strings.TrimPrefix(kubetest.Get(t).Config.Host, "https://")
	px := testutil.NewProxy(t, host)
	rec := startRecorder(t, testutil.KubeconfigVia(t, kubetest.Get(t).Kubeconfig, px.Addr()), c)
	stepRVs, _ := c.scenario(func(i int) {
		switch i {
		case 3: // after the outdated True: cut
			rec.WaitSteps(2)
			px.Cut()
		case 7: // the False, the new CSV and its Pending syncs happened unseen
			px.Restore()
		}
	})
	rec.WaitSteps(len(stepRVs))
	time.Sleep(200 * time.Millisecond)
	require.Equal(t, -1, rec.StopWith(syscall.SIGKILL), "killed")
	got := replayFile(t, rec.Trace, nil)
	var rvs []string
	for _, row := range got.rows {
		rvs = append(rvs, row.Step.ResourceVersion)
	}
	assert.Equal(t, stepRVs, rvs, "every write once, in order, although the watches were cut; trace:\n%s", rec.Read())
	blocked := 0
	for _, v := range got.sum.Violations {
		if v.Rule == simulate.RuleUpgradeWhileBlocked && v.Policy == contract.PolicyOLM {
			blocked++
		}
	}
	assert.Equal(t, 1, blocked, "violations: %+v", got.sum.Violations)
}

// TestRecordKindNotServed: the real server's answer for a kind it does
// not serve becomes one line that says so, exit 2.
func TestRecordKindNotServed(t *testing.T) {
	t.Parallel()
	srv := kubetest.Get(t)
	crdFile := filepath.Join(testutil.RepoRoot(), goodCRD)
	cmd := exec.Command(testutil.Binary(t), "record", "--kubeconfig", srv.Kubeconfig,
		"--crd", crdFile, "--source", "cool.operators.corp/v1beta1/CoolOperator/cool-operator")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, stderr.String())
	assert.Equal(t, 2, ee.ExitCode())
	assert.Equal(t, "statuscheck: the cluster does not serve cooloperators.cool.operators.corp version v1beta1 (is its CRD installed?)\n", stderr.String())
	assert.Empty(t, stdout.String())
}

// TestRecordDuration: --duration ends the recording by itself, with 0;
// a CR that does not exist yet starts the trace at initial: null, and
// its creation is a step.
func TestRecordDuration(t *testing.T) {
	t.Parallel()
	recordOneCreate(t, "--duration", "3s")
}

// TestRecordStopsOnSIGTERM: SIGTERM, as kubectl delete or a CI job's
// timeout sends it, ends the recording with 0 and a whole trace.
func TestRecordStopsOnSIGTERM(t *testing.T) {
	t.Parallel()
	recordOneCreate(t)
}

// recordOneCreate records the creation of the CR, ended by args
// (--duration) or, without them, by SIGTERM once the step is written.
func recordOneCreate(t *testing.T, args ...string) {
	cool := installCool(t)
	srv := kubetest.Get(t)
	srv.InstallOLM(t)
	ns := kubetest.Namespace("duration")
	trace := filepath.Join(t.TempDir(), "trace.yaml")
	cmd := exec.Command(testutil.Binary(t), append([]string{"record", "--kubeconfig", srv.Kubeconfig, "-n", ns,
		"--crd", cool.file, "--source", cool.in.APIVersion("v1beta1") + "/CoolOperator/cool-operator", "-o", trace}, args...)...)
	stderr := &testutil.SyncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	deadline := time.Now().Add(20 * time.Second)
	for {
		data, _ := os.ReadFile(trace)
		if strings.Contains(string(data), "\nsteps:\n") {
			break
		}
		require.True(t, time.Now().Before(deadline), "no header; stderr: %s", stderr.String())
		time.Sleep(20 * time.Millisecond)
	}
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": cool.in.APIVersion("v1beta1"), "kind": "CoolOperator",
		"metadata": map[string]interface{}{"name": "cool-operator", "namespace": ns},
		"spec":     map[string]interface{}{"storageLayer": "PostgreSQL"}}}
	_, err := srv.Dynamic.Resource(cool.in.GVR("v1beta1")).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{FieldManager: "kubectl-create"})
	require.NoError(t, err)
	if len(args) == 0 {
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if data, _ := os.ReadFile(trace); strings.Contains(string(data)[strings.Index(string(data), "\nsteps:\n")+1:], "create") {
				break
			}
			require.True(t, time.Now().Before(deadline), "no step; stderr: %s", stderr.String())
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	}
	require.NoError(t, cmd.Wait(), stderr.String())
	assert.Contains(t, stderr.String(), "recorded 1 step of CoolOperator cool-operator to "+trace)
	data, err := os.ReadFile(trace)
	require.NoError(t, err)
	assert.Contains(t, string(data), "\ninitial: null\n")
	got := replayFile(t, trace, nil)
	require.Len(t, got.rows, 1, string(data))
	assert.Equal(t, v1alpha1.VerbCreate, got.rows[0].Step.Verb)
	assert.Equal(t, "kubectl-create", got.rows[0].Step.Who)
}

// countingWriter counts the steps a recorder writes.
type countingWriter struct {
	mu     sync.Mutex
	header bool
	steps  int
}

// Write takes the header in one write, then one step per write.
func (w *countingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if bytes.HasPrefix(p, []byte("- {")) {
		w.steps++
	} else if bytes.Contains(p, []byte("\nsteps:\n")) {
		w.header = true
	}
	return len(p), nil
}

func (w *countingWriter) started() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.header
}

func (w *countingWriter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.steps
}

// BenchmarkRecordLiveStatusWrites: the recorder, in this process, watches
// the test server while four writers make b.N status writes as fast as
// the server takes them; each op is one write, recorded. writes/s is the
// rate the server and the recorder together kept; every write must be a
// step.
func BenchmarkRecordLiveStatusWrites(b *testing.B) {
	srv := kubetest.Get(b)
	in, err := srv.InstallCRD(b, testutil.ReadCRD(b, goodCRD))
	require.NoError(b, err)
	ns := kubetest.Namespace("bench")
	res := srv.Dynamic.Resource(in.GVR("v1beta1")).Namespace(ns)
	const writers = 4
	for w := 0; w < writers; w++ {
		obj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": in.APIVersion("v1beta1"), "kind": "CoolOperator",
			"metadata": map[string]interface{}{"name": fmt.Sprintf("cool-%d", w), "namespace": ns}, "spec": map[string]interface{}{"storageLayer": "MariaDB"}}}
		_, err := res.Create(context.Background(), obj, metav1.CreateOptions{})
		require.NoError(b, err)
	}
	// Record cool-0, which writer 0 writes; the others load the server.
	src, problems := contract.Parse(fmt.Sprintf(`{"apiVersion":%q,"kind":"CoolOperator","name":"cool-0","namespace":%q}`, in.APIVersion("v1beta1"), ns))
	require.Empty(b, problems)
	out := &countingWriter{}
	rec := record.New(record.Options{Source: src, StatusSubresource: true, Out: out, Server: srv.Config.Host})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- record.Run(ctx, srv.Config, record.Target{Resource: in.GVR("v1beta1"), Namespaced: true, Namespace: ns}, rec, func(string, ...interface{}) {})
	}()
	for !out.started() {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // the watch is up
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	var mine int
	for w := 0; w < writers; w++ {
		n := b.N / writers
		if w == 0 {
			n += b.N % writers
			mine = n
		}
		wg.Add(1)
		go func(w, n int) {
			defer wg.Done()
			obj, err := res.Get(context.Background(), fmt.Sprintf("cool-%d", w), metav1.GetOptions{})
			if err != nil {
				b.Error(err)
				return
			}
			for i := 0; i < n; i++ {
				obj.Object["status"] = upgradeable([]string{"True", "False"}[i%2], fmt.Sprintf("Write%d", i), 1)
				if obj, err = res.UpdateStatus(context.Background(), obj, metav1.UpdateOptions{FieldManager: "cool-operator"}); err != nil {
					b.Error(err)
					return
				}
			}
		}(w, n)
	}
	wg.Wait()
	elapsed := time.Since(start)
	deadline := time.Now().Add(30 * time.Second)
	for out.count() < mine && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	lag := time.Since(start) - elapsed
	b.StopTimer()
	cancel()
	require.NoError(b, <-done)
	require.Equal(b, mine, out.count(), "every write of cool-0 is a step")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "writes/s")
	// How long after the last write its step was written: the merger's
	// settle time plus the recorder's backlog.
	b.ReportMetric(float64(lag.Milliseconds()), "lag-ms")
}
