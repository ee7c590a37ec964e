package olm

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/internal/testutil/kubelet"
	"github.com/statuscheck/statuscheck/pkg/bridge"
	"github.com/statuscheck/statuscheck/pkg/bridge/controller"
	"github.com/statuscheck/statuscheck/pkg/bridge/sidecar"
)

// EnvImage names the statuscheck image the container tests run: `make
// olm` builds it (make image) and sets it.
const EnvImage = "STATUSCHECK_IMAGE"

func image(t *testing.T) string {
	t.Helper()
	img := os.Getenv(EnvImage)
	require.NotEmpty(t, img, "$%s names the statuscheck image to run: `make olm` builds it (make image) and sets it", EnvImage)
	out, err := exec.Command("podman", "image", "exists", img).CombinedOutput()
	require.NoError(t, err, "image %s is not in podman's store (make image IMAGE=%s; .ci/podman installs podman): %s", img, img, out)
	return img
}

// sidecarPod runs the bridge's container of the Deployment OLM made for
// v1, exactly as the Deployment says (read back from the cluster, OLM's
// OPERATOR_CONDITION_NAME in its env), under podman as the kubelet would
// (internal/testutil/kubelet: the downward API, the security context
// checked against the image's user, a read-only root, the service
// account's token, CA and namespace where client-go's in-cluster config
// reads them, the probes polled, SIGTERM with the pod's grace period).
func (w *world) sidecarPod(probePeriod time.Duration) *kubelet.Container {
	w.t.Helper()
	return w.sidecarPodOf(v1, probePeriod)
}

// sidecarPodOf is sidecarPod for the Deployment as OLM made it for the
// CSV named csv (OLM's OPERATOR_CONDITION_NAME is csv).
func (w *world) sidecarPodOf(csv string, probePeriod time.Duration) *kubelet.Container {
	w.t.Helper()
	ctx := context.Background()
	decl, err := sidecar.Declared(w.csv)
	require.NoError(w.t, err)
	require.NotNil(w.t, decl)
	dep, err := w.c.Kube.AppsV1().Deployments(w.ns).Get(ctx, decl.Deployment, metav1.GetOptions{})
	require.NoError(w.t, err, "the Deployment OLM made")
	i := slices.IndexFunc(dep.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == decl.Container })
	require.GreaterOrEqual(w.t, i, 0)
	ctr := dep.Spec.Template.Spec.Containers[i]
	require.True(w.t, slices.ContainsFunc(ctr.Env, func(e corev1.EnvVar) bool { return e.Name == controller.EnvOperatorConditionName && e.Value == csv }),
		"OLM injected %s=%s into the sidecar", controller.EnvOperatorConditionName, csv)

	pod := kubelet.FromTemplate(w.ns, dep.Name+"-"+csv, dep.Spec.Template)
	tr, err := w.c.Kube.CoreV1().ServiceAccounts(w.ns).CreateToken(ctx, pod.ServiceAccountName,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))}}, metav1.CreateOptions{})
	require.NoError(w.t, err, "a token of the deployment's service account %s", pod.ServiceAccountName)
	pod.Token = []byte(tr.Status.Token)
	u, err := url.Parse(w.c.Config.Host)
	require.NoError(w.t, err)
	pod.APIServer = u.Host
	pod.CA = servingCA(w.t, u.Host)
	pod.ProbePeriod = probePeriod
	// The binary's own peak memory on exit (internal/cli, PeakMemoryEnv).
	pod.ExtraEnv = []corev1.EnvVar{{Name: "STATUSCHECK_DEBUG_PEAK_MEMORY", Value: "1"}}
	c, err := kubelet.Run(ctx, w.t, pod, ctr)
	require.NoError(w.t, err, "the kubelet would start the sidecar")
	w.t.Cleanup(func() {
		if w.t.Failed() {
			w.t.Logf("the sidecar's logs:\n%s", c.Logs())
		}
	})
	return c
}

// bridgedWorld is a world for a copy of the freshness bundle that
// `generate --bridge IMAGE` wrote the sidecar into, the image the
// container tests run.
func bridgedWorld(t *testing.T) *world {
	t.Helper()
	dir := copyBundle(t, "none")
	out, err := exec.Command(testutil.Binary(t), "generate", "-w", "--bridge", image(t), dir).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return newWorldAt(t, dir)
}

// servingCA is what a pod's ca.crt holds for the test apiserver: the
// certificates its serving endpoint presents (the test server's serving
// certificate is self-signed, and the loopback client config's CA is
// another), for client-go's in-cluster config to verify it with.
func servingCA(t *testing.T, addr string) []byte {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reading the certificate to trust
	require.NoError(t, err)
	defer conn.Close()
	var out []byte
	for _, c := range conn.ConnectionState().PeerCertificates {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	require.NotEmpty(t, out, "the apiserver's serving certificate")
	return out
}

// TestBridgeContainerAsOLMDeploysIt is issue 26 on real OLM v0.46.0: a
// bundle `generate --bridge IMAGE` wrote is installed; its sidecar runs as
// a container of the statuscheck image, from the Deployment OLM made;
// OLM holds the replacement while the CR's condition is outdated or False
// and releases it on a fresh True; the container exits 0 on SIGTERM. With
// an image whose entrypoint is not statuscheck (the Dockerfile before
// issue 26: validate -o scorecard /bundle), a root or named user, or a
// binary that needs to write its root, it fails. It measures what a user
// weighs before adding the sidecar: start-up to ready, peak memory and
// CPU, and the latency OLM's decision gains through the bridge, beside
// the same decision when the operator writes its OperatorCondition itself,
// in the same run.
func TestBridgeContainerAsOLMDeploysIt(t *testing.T) {
	w := bridgedWorld(t)
	w.running(false)
	started := time.Now()
	c := w.sidecarPod(100 * time.Millisecond)
	stopped := false
	defer func() {
		if !stopped {
			_, _ = c.Stop()
		}
	}()
	ready, err := c.WaitReady(context.Background())
	require.NoError(t, err, "the sidecar's liveness probe answers; logs:\n%s", c.Logs())
	w.waitOCSpec(v1, metav1.ConditionTrue, bridge.ReasonUpgradeable)
	firstEntry := time.Since(started)

	gen := w.userSets("MariaDB") // the CR's True is outdated
	w.waitOCSpec(v1, metav1.ConditionFalse, bridge.ReasonOutdated)
	w.installCSV(v2, "0.2.0", v1)
	w.waitCSV(v2, operatorsv1alpha1.CSVPhasePending, operatorsv1alpha1.CSVReasonOperatorConditionNotUpgradeable)
	viaBridge := w.decisionLatency(func(reason string) { w.reports(metav1.ConditionFalse, reason, gen) })
	phase, _ := w.csvPhase(v2)
	assert.Equal(t, string(operatorsv1alpha1.CSVPhasePending), phase, "held while the CR says False")
	w.reports(metav1.ConditionTrue, "Idle", gen)
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
	assert.Zero(t, c.LivenessFailures(), "the liveness probe never failed")

	code, err := c.Stop()
	stopped = true
	require.NoError(t, err)
	assert.Equal(t, 0, code, "exit 0 on SIGTERM; logs:\n%s", c.Logs())
	peak, cpu, err := c.Usage()
	require.NoError(t, err)
	vmHWM := ""
	if m := regexp.MustCompile(`peak memory (\d+) kB`).FindStringSubmatch(c.Logs()); m != nil {
		kb, _ := strconv.Atoi(m[1])
		vmHWM = fmt.Sprintf(", the process's own VmHWM %d MiB", kb>>10)
	}

	// The anchor, in the same run: no bridge, the operator writes its
	// OperatorCondition's spec itself (what operator-lib's conditions.Set
	// means to do: meta.SetStatusCondition on spec.conditions).
	a := newWorld(t, "none")
	a.running(true)
	a.installCSV(v2, "0.2.0", v1)
	a.mirrors(v1, metav1.ConditionFalse, "Migrating")
	a.waitCSV(v2, operatorsv1alpha1.CSVPhasePending, operatorsv1alpha1.CSVReasonOperatorConditionNotUpgradeable)
	direct := a.decisionLatency(func(reason string) { a.mirrors(v1, metav1.ConditionFalse, reason) })

	ratio := float64(median(viaBridge)) / float64(median(direct))
	t.Logf("the bridge as a container: ready (first liveness success) %s after its start, its first entry %s after it; peak memory %d MiB (the container's cgroup)%s, CPU %s over %s; "+
		"from a status write to OLM's decision on %s, %d writes: through the bridge %s, the operator writing its OperatorCondition %s: %.2fx",
		ready.Round(time.Millisecond), firstEntry.Round(time.Millisecond), peak>>20, vmHWM, cpu.Round(time.Millisecond), time.Since(started).Round(time.Second),
		v2, len(viaBridge), stat(viaBridge), stat(direct), ratio)
}

// TestBridgeStartUpWindow measures the start-up window on real OLM
// v0.46.0 with the bridge as a container (docs/bridge.md, The start-up
// window): OLM makes each new CSV's OperatorCondition empty, an empty one
// allows, and nothing holds the next replacement until the new version's
// bridge has written its first entry. Down a chain v1 -> v2 -> v3, a
// poller notes, every 2 ms from the new CSV's creation, when the
// Deployment OLM rolled to it is Available, when the CSV is Succeeded and
// when its OperatorCondition has its first entry. The new version's
// bridge container starts only once the stand-in has made the Deployment
// Available (after the old one stops: the containers share the host's
// network), the latest a kubelet could start it: a pod whose bridge has no
// readiness probe is ready once its containers run, and a Deployment is
// Available only after that. So on a real cluster the container runs
// before OLM's Succeeded, and the window is at most the time from the
// container's start to its first entry, which the test measures, beside
// what this tier shows (Succeeded to the first entry). It fails unless
// each new version's bridge writes the CR's decision (Upgradeable=True,
// the CR reporting a fresh True) into its own OperatorCondition and each
// bridge exits 0 on SIGTERM.
func TestBridgeStartUpWindow(t *testing.T) {
	w := bridgedWorld(t)
	decl, err := sidecar.Declared(w.csv)
	require.NoError(t, err)
	w.running(false)
	prev := w.sidecarPodOf(v1, time.Second)
	w.waitOCSpec(v1, metav1.ConditionTrue, bridge.ReasonUpgradeable)

	ctx := context.Background()
	rolled := func(to string) bool {
		dep, err := w.c.Kube.AppsV1().Deployments(w.ns).Get(ctx, decl.Deployment, metav1.GetOptions{})
		if err != nil || dep.Status.ObservedGeneration < dep.Generation || dep.Status.AvailableReplicas < 1 {
			return false
		}
		return slices.ContainsFunc(dep.Spec.Template.Spec.Containers, func(c corev1.Container) bool {
			return c.Name == decl.Container && slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
				return e.Name == controller.EnvOperatorConditionName && e.Value == to
			})
		})
	}
	var report []string
	for _, step := range []struct{ from, to, version string }{{v1, v2, "0.2.0"}, {v2, v3, "0.3.0"}} {
		// One poller, every 2 ms from the new CSV's creation, notes when
		// each moment is first seen: the Deployment OLM rolled to the new
		// CSV made Available, the CSV Succeeded, the first entry.
		var mu sync.Mutex
		var available, succeeded, entry time.Duration
		emptyAtSucceeded := false
		seen := func() (a, s, e time.Duration) { mu.Lock(); defer mu.Unlock(); return available, succeeded, entry }
		begun := time.Now()
		w.installCSV(step.to, step.version, step.from)
		pollCtx, stopPolling := context.WithTimeout(ctx, 90*time.Second)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = wait.PollUntilContextCancel(pollCtx, 2*time.Millisecond, true, func(context.Context) (bool, error) {
				a, s, e := seen()
				if a == 0 && rolled(step.to) {
					a = time.Since(begun)
				}
				if s == 0 {
					if phase, _ := w.csvPhase(step.to); phase == string(operatorsv1alpha1.CSVPhaseSucceeded) {
						s = time.Since(begun)
						mu.Lock()
						emptyAtSucceeded = len(w.entries(step.to)) == 0
						mu.Unlock()
					}
				}
				if e == 0 && len(w.entries(step.to)) > 0 {
					e = time.Since(begun)
				}
				mu.Lock()
				available, succeeded, entry = a, s, e
				mu.Unlock()
				return a > 0 && s > 0 && e > 0, nil
			})
		}()
		w.waitUntil("OLM to roll "+decl.Deployment+" to "+step.to+" and the stand-in to make it Available", 90*time.Second, func() bool {
			a, _, _ := seen()
			return a > 0
		})
		// The rollout ends: the old pod goes. (It goes first here: the
		// containers share the host's network, so two bridges cannot
		// both listen; the new bridge's start does not depend on it.)
		code, err := prev.Stop()
		require.NoError(t, err)
		assert.Equal(t, 0, code, "%s's bridge exits 0 on SIGTERM; logs:\n%s", step.from, prev.Logs())

		starting := time.Since(begun)
		c := w.sidecarPodOf(step.to, time.Second)
		running := time.Since(begun)
		prev = c
		<-done
		stopPolling()
		available, succeeded, entry = seen()
		require.True(t, succeeded > 0 && entry > 0, "%s Succeeded and its bridge's first entry; CSVs: %s; logs:\n%s", step.to, w.describeCSVs(), c.Logs())
		got := w.entries(step.to)[0]
		assert.Equal(t, metav1.ConditionTrue, got.Status, "%s's bridge wrote the CR's decision", step.to)
		assert.Equal(t, bridge.ReasonUpgradeable, got.Reason)
		ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
		report = append(report, fmt.Sprintf("%s, from the CSV's creation: Available %s, Succeeded %s (OLM's Succeeded on an empty OperatorCondition: %t); "+
			"the bridge's container: podman run began %s and returned %s, the first entry %s; "+
			"the first entry came %s after podman run returned and %s after it began (the window's bound on a real cluster), %s after Succeeded here",
			step.to, ms(available), ms(succeeded), emptyAtSucceeded, ms(starting), ms(running), ms(entry),
			ms(entry-running), ms(entry-starting), ms(entry-succeeded)))
	}
	code, err := prev.Stop()
	require.NoError(t, err)
	assert.Equal(t, 0, code, "the last bridge exits 0 on SIGTERM; logs:\n%s", prev.Logs())
	t.Logf("the start-up window:\n  %s", strings.Join(report, "\n  "))
}

// decisionLatency holds v2 in Pending and times each of 20 writes (write
// makes one with the reason given) until OLM's decision on v2 shows it:
// v2's Pending message, which OLM writes from the condition it read.
func (w *world) decisionLatency(write func(reason string)) []time.Duration {
	w.t.Helper()
	ctx := context.Background()
	var out []time.Duration
	for i := 0; i < 20; i++ {
		reason := fmt.Sprintf("MigrationStep%d", i)
		start := time.Now()
		write(reason)
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
			csv, err := w.c.OLM.OperatorsV1alpha1().ClusterServiceVersions(w.ns).Get(ctx, v2, metav1.GetOptions{})
			return err == nil && csv.Status.Phase == operatorsv1alpha1.CSVPhasePending && strings.Contains(csv.Status.Message, reason), nil
		})
		require.NoError(w.t, err, "OLM's decision on %s for %s; CSVs: %s", v2, reason, w.describeCSVs())
		out = append(out, time.Since(start))
	}
	return out
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func stat(d []time.Duration) string {
	s := slices.Clone(d)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return fmt.Sprintf("median %s, worst %s", s[len(s)/2].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
}
