package plain

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/action"
	chartcommon "helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/kube"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	admregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/yaml"

	"github.com/statuscheck/statuscheck/internal/testutil"
)

const (
	bundleDir   = "testdata/bundles/protected"
	crdFile     = bundleDir + "/manifests/cool.operators.corp_cooloperators.yaml"
	gateImage   = "example.com/statuscheck:test"
	imageV1     = "example.com/cool-operator:v1"
	imageV2     = "example.com/cool-operator:v2"
	releaseName = "cool-operator"
	crName      = "cool-operator"
	// The names generate gives the hook's objects and the policy (after
	// the bundle's CSV).
	gateName  = "cool-operator.v0.2.0-upgrade-gate"
	guardName = "cool-operator.v0.2.0-upgrade-guard"
	// helmTimeout bounds each Helm action (a hook's wait, the rollback's).
	helmTimeout = time.Minute
)

var coolGVR = schema.GroupVersionResource{Group: "cool.operators.corp", Version: "v1beta1", Resource: "cooloperators"}

// TestHelmUpgrade upgrades the operator's chart with Helm's Go SDK while
// its status source says wait: held by the pre-upgrade hook generate
// writes (statuscheck gate in a Job) and by the admission policy it
// writes, with Upgradeable False, True for an older generation, and a
// fresh True.
func TestHelmUpgrade(t *testing.T) {
	c := get(t)
	ctx := context.Background()
	t.Logf("kube-apiserver ready in %s", c.Started.Round(time.Millisecond))
	begin := time.Now()
	_, err := c.InstallCRD(ctx, testutil.ReadCRD(t, crdFile))
	require.NoError(t, err)
	t.Logf("CRD served in %s", time.Since(begin).Round(time.Millisecond))

	t.Run("hook", func(t *testing.T) { testHook(t, c) })
	t.Run("policy", func(t *testing.T) { testPolicy(t, c) })
}

// testHook: the chart carries the pre-upgrade hook generate prints; the
// Job runs `statuscheck gate` (the real binary, as the Job's
// ServiceAccount with the hook's Role).
func testHook(t *testing.T, c *Cluster) {
	ctx := context.Background()
	ns := "plain-hook"
	createNamespace(t, c, ns)
	hooks := generate(t, "--upgrade-hook", gateImage, "--install-namespace", ns, bundleDir)
	ch := operatorChart(hooks)
	createCR(t, c, ns)
	setUpgradeable(t, c, ns, "False", 1, "MigrationRunning", "the storage migration is running")

	cfg := helmConfig(t, c, ns)
	install(t, cfg, ns, ch)
	assert.Empty(t, c.Jobs.RunsIn(ns), "a pre-upgrade hook does not run at install")

	// Held: Helm fails the release in the hook, before anything of v2 is
	// applied. Helm 4's default wait (hookOnly: kstatus) and Helm 3's
	// (legacy, still in Helm 4) word the Job's failure differently.
	holds := []struct {
		name     string
		strategy kube.WaitStrategy
		prepare  func(t *testing.T)
		want     []string
		gateSays string
	}{
		{
			name:     "False, hookOnly",
			strategy: kube.HookOnlyStrategy,
			want: []string{
				"pre-upgrade hooks failed: ",
				fmt.Sprintf("resource Job/%s/%s not ready. status: Failed, message: Job Failed. failed: 1/1", ns, gateName),
			},
			gateSays: "Upgradeable=False",
		},
		{
			name:     "False, legacy",
			strategy: kube.LegacyStrategy,
			want:     []string{fmt.Sprintf("pre-upgrade hooks failed: job %s failed: BackoffLimitExceeded", gateName)},
			gateSays: "Upgradeable=False",
		},
		{
			name:     "outdated True, hookOnly",
			strategy: kube.HookOnlyStrategy,
			prepare: func(t *testing.T) {
				// The spec changes (generation 2); the operator has not
				// answered it yet: its True is generation 1's.
				setSpec(t, c, ns, "MariaDB")
				setUpgradeable(t, c, ns, "True", 1, "Ready", "nothing in flight")
			},
			want: []string{
				"pre-upgrade hooks failed: ",
				fmt.Sprintf("resource Job/%s/%s not ready. status: Failed, message: Job Failed. failed: 1/1", ns, gateName),
			},
			gateSays: "generation 2",
		},
	}
	for _, h := range holds {
		t.Run(h.name, func(t *testing.T) {
			if h.prepare != nil {
				h.prepare(t)
			}
			before := len(c.Jobs.RunsIn(ns))
			err := upgrade(t, cfg, ns, ch, h.strategy, false)
			require.Error(t, err, "the hook holds the upgrade")
			t.Logf("helm upgrade (%s): %v", h.strategy, err)
			for _, w := range h.want {
				assert.Contains(t, err.Error(), w)
			}
			rel := status(t, cfg)
			t.Logf("release: revision %d status %q description %q", rel.Version, rel.Info.Status, rel.Info.Description)
			assert.Equal(t, "failed", rel.Info.Status.String())
			assert.Equal(t, imageV1, deploymentImage(t, c, ns), "nothing of v2 is applied")

			runs := c.Jobs.RunsIn(ns)
			require.Len(t, runs, before+1, "the hook's Job ran once")
			run := runs[len(runs)-1]
			assert.Equal(t, 1, run.ExitCode, "gate: held")
			assert.Contains(t, run.Output, h.gateSays)
			t.Logf("gate (exit %d): %s", run.ExitCode, strings.TrimSpace(run.Output))
		})
	}

	t.Run("fresh True", func(t *testing.T) {
		setUpgradeable(t, c, ns, "True", 2, "Ready", "nothing in flight")
		before := len(c.Jobs.RunsIn(ns))
		begin := time.Now()
		require.NoError(t, upgrade(t, cfg, ns, ch, kube.HookOnlyStrategy, false))
		t.Logf("upgrade through the hook in %s", time.Since(begin).Round(time.Millisecond))
		rel := status(t, cfg)
		assert.Equal(t, "deployed", rel.Info.Status.String())
		assert.Equal(t, imageV2, deploymentImage(t, c, ns))
		runs := c.Jobs.RunsIn(ns)
		require.Len(t, runs, before+1)
		assert.Equal(t, 0, runs[len(runs)-1].ExitCode)
		// hook-succeeded: Helm deletes the Job and its RBAC.
		_, err := c.Kube.BatchV1().Jobs(ns).Get(ctx, gateName, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "the succeeded hook Job is deleted: %v", err)
		_, err = c.Kube.RbacV1().Roles(ns).Get(ctx, gateName, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "the succeeded hook's Role is deleted: %v", err)
		assert.Equal(t, []string{"1 superseded", "2 failed", "3 failed", "4 failed", "5 deployed"}, history(t, cfg))
	})
}

// testPolicy: the chart is the operator alone; the policy and its
// binding generate prints are applied beside it, as the docs say
// (kubectl apply), not in the chart: they are cluster-scoped, must be in
// force before the upgrade they hold (a chart's own upgrade would apply
// a changed policy in the same run as the Deployment it guards), and
// must outlive a release that is rolled back or uninstalled.
func testPolicy(t *testing.T, c *Cluster) {
	ns := "plain-policy"
	createNamespace(t, c, ns)
	ch := operatorChart("")
	createCR(t, c, ns)
	setUpgradeable(t, c, ns, "False", 1, "MigrationRunning", "the storage migration is running")
	cfg := helmConfig(t, c, ns)
	install(t, cfg, ns, ch)

	applyPolicy(t, c, generate(t, "--admission-policy", "--install-namespace", ns, bundleDir))
	held := fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: the upgrade of Deployment %s/cool-operator is held: CoolOperator %s/cool-operator: ", guardName, guardName, ns, ns)
	begin := time.Now()
	waitGuard(t, c, ns, held+"Upgradeable=False")
	t.Logf("policy in force in %s", time.Since(begin).Round(time.Millisecond))

	t.Run("False", func(t *testing.T) {
		err := upgrade(t, cfg, ns, ch, kube.HookOnlyStrategy, false)
		require.Error(t, err, "the policy holds the upgrade")
		t.Logf("helm upgrade: %v", err)
		assert.Contains(t, err.Error(), held+"Upgradeable=False (observedGeneration 1, generation 1) reason MigrationRunning: the storage migration is running")
		rel := status(t, cfg)
		t.Logf("release: revision %d status %q description %q", rel.Version, rel.Info.Status, rel.Info.Description)
		assert.Equal(t, "failed", rel.Info.Status.String())
		assert.Equal(t, imageV1, deploymentImage(t, c, ns))
	})

	t.Run("False, rollback-on-failure", func(t *testing.T) {
		begin := time.Now()
		err := upgrade(t, cfg, ns, ch, kube.HookOnlyStrategy, true)
		require.Error(t, err)
		t.Logf("helm upgrade --rollback-on-failure (%s): %v", time.Since(begin).Round(time.Millisecond), err)
		assert.Contains(t, err.Error(), "release cool-operator failed, and has been rolled back due to rollback-on-failure being set: ")
		assert.Contains(t, err.Error(), held+"Upgradeable=False")
		assert.NotContains(t, err.Error(), "an error occurred while rolling back", "the rollback passes")
		rel := status(t, cfg)
		t.Logf("release: revision %d status %q description %q", rel.Version, rel.Info.Status, rel.Info.Description)
		assert.Equal(t, "deployed", rel.Info.Status.String())
		assert.Equal(t, "Rollback to 1", rel.Info.Description)
		assert.Equal(t, imageV1, deploymentImage(t, c, ns))
		assert.Equal(t, []string{"1 superseded", "2 failed", "3 failed", "4 deployed"}, history(t, cfg))
	})

	t.Run("outdated True", func(t *testing.T) {
		setSpec(t, c, ns, "MariaDB")
		setUpgradeable(t, c, ns, "True", 1, "Ready", "nothing in flight")
		waitGuard(t, c, ns, held+"Upgradeable=True (observedGeneration 1, generation 2)")
		err := upgrade(t, cfg, ns, ch, kube.HookOnlyStrategy, false)
		require.Error(t, err)
		t.Logf("helm upgrade: %v", err)
		assert.Contains(t, err.Error(), held+"Upgradeable=True (observedGeneration 1, generation 2) reason Ready: nothing in flight")
		assert.Equal(t, "failed", status(t, cfg).Info.Status.String())
		assert.Equal(t, imageV1, deploymentImage(t, c, ns))
	})

	t.Run("fresh True", func(t *testing.T) {
		setUpgradeable(t, c, ns, "True", 2, "Ready", "nothing in flight")
		waitGuard(t, c, ns, "")
		require.NoError(t, upgrade(t, cfg, ns, ch, kube.HookOnlyStrategy, false))
		assert.Equal(t, "deployed", status(t, cfg).Info.Status.String())
		assert.Equal(t, imageV2, deploymentImage(t, c, ns))
		assert.Equal(t, []string{"1 superseded", "2 failed", "3 failed", "4 superseded", "5 failed", "6 deployed"}, history(t, cfg))
	})
	assert.Empty(t, c.Jobs.RunsIn(ns), "no hook in this chart")
}

// operatorChart is the operator's chart: its Deployment (image from the
// values, v1 by default) and, when hooks is not empty, the manifests
// generate --upgrade-hook printed, verbatim, as one template.
func operatorChart(hooks string) *chartv2.Chart {
	const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: cool-operator
  namespace: {{ .Release.Namespace }}
spec:
  replicas: 1
  selector:
    matchLabels:
      app: cool-operator
  template:
    metadata:
      labels:
        app: cool-operator
    spec:
      containers:
      - name: operator
        image: {{ .Values.image }}
`
	ch := &chartv2.Chart{
		Metadata:  &chartv2.Metadata{APIVersion: chartv2.APIVersionV2, Name: "cool-operator", Version: "0.2.0", AppVersion: "0.2.0"},
		Templates: []*chartcommon.File{{Name: "templates/deployment.yaml", Data: []byte(deployment), ModTime: time.Now()}},
		Values:    map[string]any{"image": imageV1},
	}
	if hooks != "" {
		ch.Templates = append(ch.Templates, &chartcommon.File{Name: "templates/upgrade-gate.yaml", Data: []byte(hooks), ModTime: time.Now()})
	}
	return ch
}

// generate runs `statuscheck generate ARGS` from the repository's root.
func generate(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(testutil.Binary(t), append([]string{"generate"}, args...)...)
	cmd.Dir = testutil.RepoRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "statuscheck generate %v: %s", args, stderr.String())
	return string(out)
}

// helmConfig is Helm's action configuration for the namespace, as the
// CLI makes it (the kubeconfig, the secret driver); Helm's log goes to
// the test's log when PLAINTEST_VERBOSE=1.
func helmConfig(t *testing.T, c *Cluster, ns string) *action.Configuration {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	kubeconfig := c.Kubeconfig
	flags.KubeConfig = &kubeconfig
	flags.Namespace = &ns
	var logTo io.Writer = io.Discard
	if logOut != io.Discard {
		logTo = logOut
	}
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.NewTextHandler(logTo, &slog.HandlerOptions{Level: slog.LevelDebug})))
	require.NoError(t, cfg.Init(flags, ns, "secret"))
	return cfg
}

func install(t *testing.T, cfg *action.Configuration, ns string, ch *chartv2.Chart) {
	t.Helper()
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace = releaseName, ns
	in.WaitStrategy, in.Timeout = kube.HookOnlyStrategy, helmTimeout
	_, err := in.Run(ch, nil)
	require.NoError(t, err, "helm install")
	assert.Equal(t, "deployed", status(t, cfg).Info.Status.String())
}

// upgrade runs `helm upgrade` to v2 (no --wait: Helm 4's default
// strategy, hookOnly; --rollback-on-failure when rollback, which makes
// Helm wait with its status watcher).
func upgrade(t *testing.T, cfg *action.Configuration, ns string, ch *chartv2.Chart, strategy kube.WaitStrategy, rollback bool) error {
	t.Helper()
	up := action.NewUpgrade(cfg)
	up.Namespace = ns
	up.WaitStrategy, up.Timeout = strategy, helmTimeout
	up.RollbackOnFailure = rollback
	_, err := up.Run(releaseName, ch, map[string]any{"image": imageV2})
	return err
}

// status is the release as `helm status` reports it (its last revision).
func status(t *testing.T, cfg *action.Configuration) *releasev1.Release {
	t.Helper()
	r, err := action.NewStatus(cfg).Run(releaseName)
	require.NoError(t, err, "helm status")
	rel, ok := r.(*releasev1.Release)
	require.True(t, ok, "helm status returned a %T", r)
	return rel
}

// history is `helm history`: each revision's number and status.
func history(t *testing.T, cfg *action.Configuration) []string {
	t.Helper()
	h := action.NewHistory(cfg)
	h.Max = 256
	rs, err := h.Run(releaseName)
	require.NoError(t, err, "helm history")
	var out []string
	for _, r := range rs {
		rel, ok := r.(*releasev1.Release)
		require.True(t, ok, "helm history returned a %T", r)
		out = append(out, fmt.Sprintf("%d %s", rel.Version, rel.Info.Status))
	}
	return out
}

func createNamespace(t *testing.T, c *Cluster, ns string) {
	t.Helper()
	_, err := c.Kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func deploymentImage(t *testing.T, c *Cluster, ns string) string {
	t.Helper()
	d, err := c.Kube.AppsV1().Deployments(ns).Get(context.Background(), "cool-operator", metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, d.Spec.Template.Spec.Containers, 1)
	return d.Spec.Template.Spec.Containers[0].Image
}

func createCR(t *testing.T, c *Cluster, ns string) {
	t.Helper()
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cool.operators.corp/v1beta1", "kind": "CoolOperator",
		"metadata": map[string]any{"name": crName, "namespace": ns},
		"spec":     map[string]any{"storageLayer": "PostgreSQL"},
	}}
	_, err := c.Dyn.Resource(coolGVR).Namespace(ns).Create(context.Background(), cr, metav1.CreateOptions{})
	require.NoError(t, err)
}

// setSpec changes the CR's spec: its generation goes up.
func setSpec(t *testing.T, c *Cluster, ns, storage string) {
	t.Helper()
	ctx := context.Background()
	cr, err := c.Dyn.Resource(coolGVR).Namespace(ns).Get(ctx, crName, metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(cr.Object, storage, "spec", "storageLayer"))
	_, err = c.Dyn.Resource(coolGVR).Namespace(ns).Update(ctx, cr, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// setUpgradeable writes the CR's Upgradeable condition through /status,
// as the operator would.
func setUpgradeable(t *testing.T, c *Cluster, ns, value string, observed int64, reason, message string) {
	t.Helper()
	ctx := context.Background()
	cr, err := c.Dyn.Resource(coolGVR).Namespace(ns).Get(ctx, crName, metav1.GetOptions{})
	require.NoError(t, err)
	cond := map[string]any{
		"type": "Upgradeable", "status": value, "observedGeneration": observed,
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339), "reason": reason, "message": message,
	}
	require.NoError(t, unstructured.SetNestedSlice(cr.Object, []any{cond}, "status", "conditions"))
	_, err = c.Dyn.Resource(coolGVR).Namespace(ns).UpdateStatus(ctx, cr, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// applyPolicy creates the ValidatingAdmissionPolicy and its binding that
// generate --admission-policy printed; the test's cleanup deletes them.
func applyPolicy(t *testing.T, c *Cluster, manifests string) {
	t.Helper()
	ctx := context.Background()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifests), 4096)
	var kinds []string
	for {
		var raw map[string]any
		err := dec.Decode(&raw)
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		if raw == nil {
			continue
		}
		data, err := yaml.Marshal(raw)
		require.NoError(t, err)
		kind, _ := raw["kind"].(string)
		kinds = append(kinds, kind)
		switch kind {
		case "ValidatingAdmissionPolicy":
			var p admregv1.ValidatingAdmissionPolicy
			require.NoError(t, yaml.UnmarshalStrict(data, &p))
			_, err = c.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, &p, metav1.CreateOptions{})
			require.NoError(t, err)
			t.Cleanup(func() {
				_ = c.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(context.Background(), p.Name, metav1.DeleteOptions{})
			})
		case "ValidatingAdmissionPolicyBinding":
			var b admregv1.ValidatingAdmissionPolicyBinding
			require.NoError(t, yaml.UnmarshalStrict(data, &b))
			_, err = c.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, &b, metav1.CreateOptions{})
			require.NoError(t, err)
			t.Cleanup(func() {
				_ = c.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(context.Background(), b.Name, metav1.DeleteOptions{})
			})
		default:
			t.Fatalf("generate --admission-policy printed a %s", kind)
		}
	}
	require.Equal(t, []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}, kinds)
}

// waitGuard waits until a server-side dry run of the image update Helm
// makes is denied with a message that contains want (HTTP 422), or, with
// want empty, allowed: the apiserver judges against its informer's copy
// of the CR and learns a new paramKind and policy a moment after they
// are written (docs/without-olm.md, What it does not hold).
func waitGuard(t *testing.T, c *Cluster, ns, want string) {
	t.Helper()
	ctx := context.Background()
	var last error
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		d, err := c.Kube.AppsV1().Deployments(ns).Get(ctx, "cool-operator", metav1.GetOptions{})
		require.NoError(t, err)
		d.Spec.Template.Spec.Containers[0].Image = imageV2
		_, last = c.Kube.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		switch {
		case want == "" && last == nil:
			return
		case want != "" && last != nil && strings.Contains(last.Error(), want):
			assert.True(t, apierrors.IsInvalid(last), "the denial is HTTP 422: %v", last)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the guard did not say %q within 90s; last dry run: %v", want, last)
}
