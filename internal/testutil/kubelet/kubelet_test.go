//go:build podman

package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/bridge/sidecar"
)

// The test images: envprobe (testdata/envprobe) FROM scratch with an
// empty /tmp, ENTRYPOINT ["/envprobe","entrypoint"], CMD ["cmd-default"]
// and these USERs.
var imageUsers = map[string]string{
	"nonroot": "65532:65532",
	"root":    "", // no USER: root
	"uid0":    "0:0",
	"named":   "nobody",
}

var built struct {
	once sync.Once
	tags map[string]string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, tag := range built.tags {
		_, _ = podman(context.Background(), "rmi", "--force", tag)
	}
	os.Exit(code)
}

// envprobeImage is the test image with the variant's USER, built once,
// offline, from envprobe compiled here.
func envprobeImage(t *testing.T, variant string) string {
	t.Helper()
	built.once.Do(func() { built.tags, built.err = buildImages() })
	require.NoError(t, built.err)
	return built.tags[variant]
}

func buildImages() (map[string]string, error) {
	if _, err := exec.LookPath("podman"); err != nil {
		return nil, fmt.Errorf("these tests run containers with podman, which is not on PATH: run .ci/podman as root (it installs podman and runc and configures them for these machines): %w", err)
	}
	dir, err := os.MkdirTemp("", "envprobe")
	if err != nil {
		return nil, fmt.Errorf("build context: %w", err)
	}
	defer os.RemoveAll(dir)
	gobuild := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "envprobe"), "./testdata/envprobe")
	gobuild.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := gobuild.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build envprobe: %w: %s", err, out)
	}
	if err := os.Mkdir(filepath.Join(dir, "tmp"), 0o777); err != nil {
		return nil, fmt.Errorf("build context: %w", err)
	}
	tags := map[string]string{}
	for variant, user := range imageUsers {
		file := "FROM scratch\nCOPY envprobe /envprobe\nCOPY tmp /tmp\n"
		if user != "" {
			file += "USER " + user + "\n"
		}
		file += `ENTRYPOINT ["/envprobe","entrypoint"]` + "\n" + `CMD ["cmd-default"]` + "\n"
		cf := filepath.Join(dir, "Containerfile."+variant)
		if err := os.WriteFile(cf, []byte(file), 0o644); err != nil {
			return tags, fmt.Errorf("containerfile: %w", err)
		}
		tag := fmt.Sprintf("localhost/statuscheck-kubelet-envprobe:%s-%d", variant, os.Getpid())
		if _, err := podman(context.Background(), "build", "--quiet", "--pull=never", "-f", cf, "-t", tag, dir); err != nil {
			return tags, fmt.Errorf("build the %s test image: %w", variant, err)
		}
		tags[variant] = tag
	}
	return tags, nil
}

// seen is envprobe's report.
type seen struct {
	Argv                        []string
	UID, GID                    int
	Groups                      []int
	Env, Files                  map[string]string
	RootWrite, TmpWrite         string
	NoNewPrivs, CapEff, Seccomp string
}

func reportIn(t *testing.T, logs string) seen {
	t.Helper()
	for _, line := range strings.Split(logs, "\n") {
		if strings.HasPrefix(line, `{"argv"`) {
			var s seen
			require.NoError(t, json.Unmarshal([]byte(line), &s))
			return s
		}
	}
	t.Fatalf("no envprobe report in the log:\n%s", logs)
	return seen{}
}

// runToExit runs c in pod and waits for it to exit by itself.
func runToExit(t *testing.T, pod Pod, c corev1.Container) (int, seen) {
	t.Helper()
	ct, err := Run(context.Background(), t, pod, c)
	require.NoError(t, err)
	select {
	case <-ct.exited:
	case <-time.After(time.Minute):
		t.Fatalf("%s did not exit; its log:\n%s", c.Name, ct.Logs())
	}
	code, err := ct.Stop()
	require.NoError(t, err)
	return code, reportIn(t, ct.Logs())
}

// eventually waits up to d for cond.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("not within %v: %s", d, what)
		}
	}
}

func TestCommandAndArgs(t *testing.T) {
	image := envprobeImage(t, "nonroot")
	tests := []struct {
		name          string
		command, args []string
		want          []string
	}{
		{name: "neither: the image's ENTRYPOINT and CMD",
			want: []string{"/envprobe", "entrypoint", "cmd-default"}},
		{name: "args replace CMD",
			args: []string{"bridge", "--x"},
			want: []string{"/envprobe", "entrypoint", "bridge", "--x"}},
		{name: "command replaces ENTRYPOINT and drops CMD",
			command: []string{"/envprobe", "own"},
			want:    []string{"/envprobe", "own"}},
		{name: "command and args",
			command: []string{"/envprobe", "own"}, args: []string{"a"},
			want: []string{"/envprobe", "own", "a"}},
		{name: "$(VAR) expanded against the final environment, $$ escapes, unknown kept",
			command: []string{"/envprobe"},
			args:    []string{"$(POD_NAMESPACE)", "$$(POD_NAMESPACE)", "$(NOPE)", "$(KUBERNETES_SERVICE_PORT)", "--ns=$(POD_NAMESPACE"},
			want:    []string{"/envprobe", "ns1", "$(POD_NAMESPACE)", "$(NOPE)", "6443", "--ns=$(POD_NAMESPACE"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := corev1.Container{Name: "probe", Image: image, Command: tt.command, Args: tt.args,
				Env: []corev1.EnvVar{fieldRef("POD_NAMESPACE", "metadata.namespace")}}
			code, got := runToExit(t, testPod(), c)
			assert.Equal(t, 0, code)
			assert.Equal(t, tt.want, got.Argv)
		})
	}
}

func TestEnvironmentAndServiceAccount(t *testing.T) {
	pod := testPod()
	pod.Token, pod.CA = []byte("token-abc"), []byte("-----BEGIN CERTIFICATE-----\nca\n")
	pod.ExtraEnv = []corev1.EnvVar{
		{Name: "STATUSCHECK_DEBUG_PEAK_MEMORY", Value: "1"},
		{Name: "PLAIN", Value: "extra-$(PLAIN)"},
	}
	c := corev1.Container{Name: "probe", Image: envprobeImage(t, "nonroot"), Env: []corev1.EnvVar{
		{Name: "PLAIN", Value: "v"},
		fieldRef("POD_NAMESPACE", "metadata.namespace"),
		fieldRef("POD_NAME", "metadata.name"),
		fieldRef("POD_UID", "metadata.uid"),
		fieldRef("SOURCE", "metadata.annotations['operatorframework.io/status-source']"),
		fieldRef("ABSENT", "metadata.annotations['not-there']"),
		fieldRef("APP", "metadata.labels['app']"),
		fieldRef("LABELS", "metadata.labels"),
		fieldRef("SA", "spec.serviceAccountName"),
		{Name: "COMBINED", Value: "$(POD_NAMESPACE)/$(POD_NAME)"},
		{Name: "FORWARD", Value: "$(LATER)"},
		{Name: "LATER", Value: "x"},
		{Name: "KUBERNETES_SERVICE_PORT", Value: "1234"},
	}}
	code, got := runToExit(t, pod, c)
	require.Equal(t, 0, code)

	tests := []struct{ name, variable, want string }{
		{name: "a value", variable: "PLAIN", want: "extra-v"},
		{name: "metadata.namespace", variable: "POD_NAMESPACE", want: "ns1"},
		{name: "metadata.name", variable: "POD_NAME", want: "pod1"},
		{name: "metadata.uid", variable: "POD_UID", want: "uid-1"},
		{name: "an annotation", variable: "SOURCE", want: `{"kind":"HyperConverged"}`},
		{name: "an annotation the pod does not have is empty, as in the kubelet", variable: "ABSENT", want: ""},
		{name: "a label", variable: "APP", want: "cool"},
		{name: "all labels, formatted", variable: "LABELS", want: "app=\"cool\"\ntier=\"op\""},
		{name: "spec.serviceAccountName", variable: "SA", want: "sa1"},
		{name: "expanded from earlier variables", variable: "COMBINED", want: "ns1/pod1"},
		{name: "a later variable is not expanded", variable: "FORWARD", want: "$(LATER)"},
		{name: "the container's variable wins over the service's", variable: "KUBERNETES_SERVICE_PORT", want: "1234"},
		{name: "service host", variable: "KUBERNETES_SERVICE_HOST", want: "127.0.0.1"},
		{name: "service link", variable: "KUBERNETES_PORT_6443_TCP", want: "tcp://127.0.0.1:6443"},
		{name: "test-only extra", variable: "STATUSCHECK_DEBUG_PEAK_MEMORY", want: "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, ok := got.Env[tt.variable]
			assert.True(t, ok, "%s is not set", tt.variable)
			assert.Equal(t, tt.want, v)
		})
	}
	t.Run("service account volume, readable by the image's non-root user", func(t *testing.T) {
		assert.Equal(t, 65532, got.UID)
		assert.Equal(t, map[string]string{"token": "token-abc", "ca.crt": string(pod.CA), "namespace": "ns1"}, got.Files)
	})
}

func TestRunAsNonRoot(t *testing.T) {
	msg := func(format string) string { return fmt.Sprintf(format, `"pod1_ns1(uid-1)"`) }
	tests := []struct {
		name      string
		image     string
		container *corev1.SecurityContext
		pod       *corev1.PodSecurityContext
		wantErr   string
		wantUID   int
		wantGID   int
		wantIn    []int // supplementary groups
	}{
		{name: "numeric non-root image user", image: "nonroot",
			container: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)}, wantUID: 65532, wantGID: 65532},
		{name: "image without USER is root", image: "root",
			container: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)},
			wantErr:   msg("container has runAsNonRoot and image will run as root (pod: %s, container: probe)")},
		{name: "image USER 0", image: "uid0",
			container: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)},
			wantErr:   msg("container has runAsNonRoot and image will run as root (pod: %s, container: probe)")},
		{name: "non-numeric image user", image: "named",
			container: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)},
			wantErr:   msg("container has runAsNonRoot and image has non-numeric user (nobody), cannot verify user is non-root (pod: %s, container: probe)")},
		{name: "runAsUser decides over a non-numeric image user", image: "named",
			container: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000)}, wantUID: 1000},
		{name: "runAsUser 0", image: "nonroot",
			container: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](0)},
			wantErr:   msg("container's runAsUser breaks non-root policy (pod: %s, container: probe)")},
		{name: "the pod's runAsNonRoot", image: "root",
			pod:     &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
			wantErr: msg("container has runAsNonRoot and image will run as root (pod: %s, container: probe)")},
		{name: "the container's runAsNonRoot: false wins over the pod's", image: "root",
			pod:       &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
			container: &corev1.SecurityContext{RunAsNonRoot: ptr.To(false)}, wantUID: 0},
		{name: "without runAsNonRoot root runs", image: "root", wantUID: 0},
		{name: "runAsUser, runAsGroup, supplementalGroups and fsGroup", image: "nonroot",
			pod:       &corev1.PodSecurityContext{RunAsGroup: ptr.To[int64](3000), SupplementalGroups: []int64{4000}, FSGroup: ptr.To[int64](5000)},
			container: &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000)},
			wantUID:   1000, wantGID: 3000, wantIn: []int{4000, 5000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod()
			pod.SecurityContext = tt.pod
			c := corev1.Container{Name: "probe", Image: envprobeImage(t, tt.image), SecurityContext: tt.container}
			if tt.wantErr != "" {
				_, err := Run(context.Background(), t, pod, c)
				require.Error(t, err)
				assert.Equal(t, tt.wantErr, err.Error())
				names, err := podman(context.Background(), "ps", "--all", "--format", "{{.Names}}")
				require.NoError(t, err)
				assert.NotContains(t, names, "k8s_probe_pod1_ns1_", "a refused container was created")
				return
			}
			code, got := runToExit(t, pod, c)
			assert.Equal(t, 0, code)
			assert.Equal(t, tt.wantUID, got.UID)
			assert.Equal(t, tt.wantGID, got.GID)
			for _, g := range tt.wantIn {
				assert.Contains(t, got.Groups, g)
			}
		})
	}
}

func TestSecurityContext(t *testing.T) {
	const readOnly = "read-only file system"
	tests := []struct {
		name                        string
		image                       string
		container                   *corev1.SecurityContext
		pod                         *corev1.PodSecurityContext
		wantRootWrite, wantTmpWrite string // substrings of the error; "" is a working write
		wantNoNewPrivs, wantSeccomp string
		wantCapEff                  string // "" is "not zero"
	}{
		{name: "restricted, as generate --bridge writes it", image: "nonroot",
			container: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				ReadOnlyRootFilesystem:   ptr.To(true),
				RunAsNonRoot:             ptr.To(true),
			},
			pod:           &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			wantRootWrite: readOnly, wantTmpWrite: readOnly, // no tmpfs on /tmp, unlike podman's --read-only alone
			wantNoNewPrivs: "1", wantSeccomp: "2", wantCapEff: "0000000000000000"},
		{name: "no security context: writable root, seccomp unconfined, privileges may escalate", image: "root",
			wantNoNewPrivs: "0", wantSeccomp: "0"},
		{name: "drop ALL, add one: root without CAP_DAC_OVERRIDE cannot write to /", image: "root",
			container:     &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}}},
			wantRootWrite: "permission denied", wantNoNewPrivs: "0", wantSeccomp: "0", wantCapEff: "0000000000000400"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod()
			pod.SecurityContext = tt.pod
			c := corev1.Container{Name: "probe", Image: envprobeImage(t, tt.image), SecurityContext: tt.container}
			code, got := runToExit(t, pod, c)
			assert.Equal(t, 0, code)
			for _, w := range []struct{ what, got, want string }{
				{"write to /", got.RootWrite, tt.wantRootWrite},
				{"write to /tmp", got.TmpWrite, tt.wantTmpWrite},
			} {
				if w.want == "" {
					assert.Empty(t, w.got, w.what)
				} else {
					assert.Contains(t, w.got, w.want, w.what)
				}
			}
			assert.Equal(t, tt.wantNoNewPrivs, got.NoNewPrivs, "NoNewPrivs")
			assert.Equal(t, tt.wantSeccomp, got.Seccomp, "Seccomp")
			if tt.wantCapEff == "" {
				assert.NotEqual(t, "0000000000000000", got.CapEff, "CapEff")
			} else {
				assert.Equal(t, tt.wantCapEff, got.CapEff, "CapEff")
			}
		})
	}
}

func TestStop(t *testing.T) {
	tests := []struct {
		name        string
		onTerm      string
		grace       time.Duration
		wantCode    int
		wantLog     string
		wantAtLeast time.Duration
	}{
		{name: "SIGTERM handled, exit 0", onTerm: "exit:0", grace: 10 * time.Second, wantCode: 0, wantLog: "envprobe: SIGTERM"},
		{name: "SIGTERM handled, exit 3", onTerm: "exit:3", grace: 10 * time.Second, wantCode: 3, wantLog: "envprobe: SIGTERM"},
		{name: "SIGTERM ignored: SIGKILL after the grace period, at least the kubelet's 2s", onTerm: "ignore", grace: time.Second,
			wantCode: 137, wantAtLeast: 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod()
			pod.TerminationGracePeriod = tt.grace
			c := corev1.Container{Name: "probe", Image: envprobeImage(t, "nonroot"), Env: []corev1.EnvVar{
				{Name: "ENVPROBE_STAY", Value: "1"}, {Name: "ENVPROBE_ON_TERM", Value: tt.onTerm}}}
			ct, err := Run(context.Background(), t, pod, c)
			require.NoError(t, err)
			eventually(t, 30*time.Second, "the report", func() bool { return strings.Contains(ct.Logs(), `{"argv"`) })
			began := time.Now()
			code, err := ct.Stop()
			took := time.Since(began)
			require.NoError(t, err)
			assert.Equal(t, tt.wantCode, code)
			assert.GreaterOrEqual(t, took, tt.wantAtLeast)
			assert.Contains(t, ct.Logs(), tt.wantLog, "the log is kept after removal")
			_, err = podman(context.Background(), "container", "exists", ct.Name)
			assert.Error(t, err, "the container is removed")
			again, err := ct.Stop()
			assert.NoError(t, err)
			assert.Equal(t, code, again, "a second Stop returns the same")
		})
	}
}

func TestProbes(t *testing.T) {
	httpProbe := func(path string, port intstr.IntOrString, threshold, delay int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: port}},
			FailureThreshold: threshold, InitialDelaySeconds: delay}
	}
	tests := []struct {
		name                string
		env                 map[string]string
		liveness, readiness *corev1.Probe
		// wait for this many liveness failures (0: for readiness)
		wantLivenessFailures int
		// during this time, no liveness failure and not ready
		quietFor          time.Duration
		wantReadyAfterMin time.Duration
	}{
		{name: "httpGet liveness on a named port: ready at its first success",
			liveness: httpProbe("/healthz", intstr.FromString("health"), 0, 0)},
		{name: "tcpSocket liveness",
			liveness: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("health")}}}},
		{name: "readiness after the container says so; liveness apart",
			env:               map[string]string{"ENVPROBE_READY_AFTER": "1s"},
			liveness:          httpProbe("/healthz", intstr.FromString("health"), 0, 0),
			readiness:         httpProbe("/readyz", intstr.FromString("health"), 0, 0),
			quietFor:          700 * time.Millisecond,
			wantReadyAfterMin: time.Second},
		{name: "failing liveness is counted at each failureThreshold",
			env:                  map[string]string{"ENVPROBE_HEALTHZ": "500"},
			liveness:             httpProbe("/healthz", intstr.FromString("health"), 2, 0),
			wantLivenessFailures: 2},
		{name: "no probe during initialDelaySeconds",
			env:                  map[string]string{"ENVPROBE_HEALTHZ": "500"},
			liveness:             httpProbe("/healthz", intstr.FromInt32(0), 1, 2),
			quietFor:             1500 * time.Millisecond,
			wantLivenessFailures: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			port, err := strconv.Atoi(strings.TrimPrefix(testutil.FreeAddr(t), "127.0.0.1:"))
			require.NoError(t, err)
			for _, p := range []*corev1.Probe{tt.liveness, tt.readiness} {
				if p != nil && p.HTTPGet != nil && p.HTTPGet.Port.Type == intstr.Int {
					p.HTTPGet.Port = intstr.FromInt(port)
				}
			}
			env := []corev1.EnvVar{{Name: "ENVPROBE_LISTEN", Value: strconv.Itoa(port)}}
			for k, v := range tt.env {
				env = append(env, corev1.EnvVar{Name: k, Value: v})
			}
			c := corev1.Container{Name: "probe", Image: envprobeImage(t, "nonroot"), Env: env,
				Ports:         []corev1.ContainerPort{{Name: "health", ContainerPort: int32(port)}},
				LivenessProbe: tt.liveness, ReadinessProbe: tt.readiness}
			ct, err := Run(context.Background(), t, testPod(), c)
			require.NoError(t, err)
			if tt.quietFor > 0 {
				time.Sleep(tt.quietFor)
				assert.Zero(t, ct.LivenessFailures(), "liveness failures within %v", tt.quietFor)
				assert.False(t, ct.Ready(), "ready within %v", tt.quietFor)
			}
			if tt.wantLivenessFailures > 0 {
				eventually(t, 30*time.Second, fmt.Sprintf("%d liveness failures", tt.wantLivenessFailures),
					func() bool { return ct.LivenessFailures() >= tt.wantLivenessFailures })
				assert.False(t, ct.Ready())
				assert.Zero(t, ct.ReadyAfter())
			} else {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				after, err := ct.WaitReady(ctx)
				require.NoError(t, err)
				assert.True(t, ct.Ready())
				assert.GreaterOrEqual(t, after, tt.wantReadyAfterMin)
				assert.Equal(t, after, ct.ReadyAfter())
				t.Logf("ready after %v", after)
				time.Sleep(500 * time.Millisecond) // five more periods
				assert.Zero(t, ct.LivenessFailures())
			}
			code, err := ct.Stop()
			require.NoError(t, err)
			assert.Equal(t, 0, code)
		})
	}
}

func TestWaitReadyWhenTheContainerExits(t *testing.T) {
	c := corev1.Container{Name: "probe", Image: envprobeImage(t, "nonroot"),
		Ports:         []corev1.ContainerPort{{Name: "health", ContainerPort: 1}},
		LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("health")}}}}
	ct, err := Run(context.Background(), t, testPod(), c)
	require.NoError(t, err)
	_, err = ct.WaitReady(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exited (code 0) before it was ready")
	assert.Contains(t, err.Error(), `{"argv"`, "the error carries the log")
}

func TestUsage(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name        string
		env         map[string]string
		limit       string
		wantCode    int
		wantPeakMin int64
		wantPeakMax int64
		wantCPUMin  time.Duration
	}{
		{name: "64 MiB and 300ms of CPU under a 128Mi limit",
			env:   map[string]string{"ENVPROBE_ALLOC_MIB": "64", "ENVPROBE_SPIN": "300ms", "ENVPROBE_STAY": "1"},
			limit: "128Mi", wantCode: 0, wantPeakMin: 64 * mib, wantPeakMax: 128 * mib, wantCPUMin: 300 * time.Millisecond},
		{name: "over the memory limit: OOM-killed at it",
			env: map[string]string{"ENVPROBE_ALLOC_MIB": "200", "ENVPROBE_STAY": "1"},
			// The v1 watermark may pass the limit by the kernel's charge
			// batch (measured: 256 KiB).
			limit: "64Mi", wantCode: 137, wantPeakMin: 60 * mib, wantPeakMax: 65 * mib},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var env []corev1.EnvVar
			for k, v := range tt.env {
				env = append(env, corev1.EnvVar{Name: k, Value: v})
			}
			c := corev1.Container{Name: "probe", Image: envprobeImage(t, "nonroot"), Env: env,
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(tt.limit)}}}
			ct, err := Run(context.Background(), t, testPod(), c)
			require.NoError(t, err)
			eventually(t, 30*time.Second, "allocated, spun, or killed", func() bool {
				select {
				case <-ct.exited:
					return true
				default:
				}
				logs := ct.Logs()
				return strings.Contains(logs, "allocated") && (tt.env["ENVPROBE_SPIN"] == "" || strings.Contains(logs, "spun"))
			})
			code, err := ct.Stop()
			require.NoError(t, err)
			assert.Equal(t, tt.wantCode, code)
			peak, cpu, err := ct.Usage()
			require.NoError(t, err, "usage after Stop")
			t.Logf("peak %.1f MiB, CPU %v", float64(peak)/mib, cpu)
			assert.GreaterOrEqual(t, peak, tt.wantPeakMin)
			assert.LessOrEqual(t, peak, tt.wantPeakMax)
			assert.GreaterOrEqual(t, cpu, tt.wantCPUMin)
			assert.Positive(t, cpu)
		})
	}
}

// TestBridgeSidecarSpec runs the container `generate --bridge` writes,
// from envprobe, in the pod OLM would make from the CSV: what the
// bridge would see.
func TestBridgeSidecarSpec(t *testing.T) {
	port, err := strconv.Atoi(strings.TrimPrefix(testutil.FreeAddr(t), "127.0.0.1:"))
	require.NoError(t, err)
	c := sidecar.Container(sidecar.Options{Image: envprobeImage(t, "nonroot"), MetricsPort: sidecar.MetricsPort, ProbePort: port})
	tmpl := corev1.PodTemplateSpec{}
	tmpl.Annotations = map[string]string{"operatorframework.io/status-source": `{"apiVersion":"cool.operators.corp/v1","kind":"Cool","name":"cool"}`}
	tmpl.Spec.ServiceAccountName = "cool-operator"
	tmpl.Spec.TerminationGracePeriodSeconds = ptr.To[int64](10)
	tmpl.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	pod := FromTemplate("cool-system", "cool-operator-abc", tmpl)
	pod.Token, pod.CA, pod.APIServer, pod.ProbePeriod = []byte("t"), []byte("ca"), "127.0.0.1:6443", 200*time.Millisecond
	pod.ExtraEnv = []corev1.EnvVar{{Name: "ENVPROBE_LISTEN", Value: strconv.Itoa(port)}}

	ct, err := Run(context.Background(), t, pod, c)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	after, err := ct.WaitReady(ctx)
	require.NoError(t, err)
	t.Logf("ready (first liveness success) after %v", after)
	code, err := ct.Stop()
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Zero(t, ct.LivenessFailures())
	got := reportIn(t, ct.Logs())
	assert.Equal(t, append([]string{"/envprobe", "entrypoint"}, c.Args...), got.Argv)
	assert.Equal(t, tmpl.Annotations["operatorframework.io/status-source"], got.Env[sidecar.EnvStatusSource])
	assert.Equal(t, "cool-system", got.Env[sidecar.EnvPodNamespace])
	assert.Equal(t, 65532, got.UID)
	assert.Contains(t, got.RootWrite, "read-only file system")
	assert.Equal(t, "0000000000000000", got.CapEff)
	assert.Equal(t, "1", got.NoNewPrivs)
	assert.Equal(t, "cool-system", got.Files["namespace"])
	peak, cpu, err := ct.Usage()
	require.NoError(t, err)
	t.Logf("peak %.1f MiB, CPU %v", float64(peak)/(1<<20), cpu)
	assert.Positive(t, peak)
	assert.Positive(t, cpu)
}

// TestStatuscheckImage runs `statuscheck version` from the image `make
// image` builds, with the sidecar's security context: its entrypoint, its
// user and a read-only root must let the bridge's container run.
func TestStatuscheckImage(t *testing.T) {
	envprobeImage(t, "nonroot") // podman is there
	image := os.Getenv("STATUSCHECK_IMAGE")
	if image == "" {
		image = "localhost/statuscheck:test"
	}
	if _, err := podman(context.Background(), "image", "exists", image); err != nil {
		t.Skipf("image %s not in podman's store: build it with `make image IMAGE=%s` (or set STATUSCHECK_IMAGE)", image, image)
	}
	c := sidecar.Container(sidecar.Options{Image: image, MetricsPort: sidecar.MetricsPort, ProbePort: sidecar.ProbePort})
	c.Args, c.LivenessProbe = []string{"version"}, nil
	ct, err := Run(context.Background(), t, testPod(), c)
	require.NoError(t, err)
	select {
	case <-ct.exited:
	case <-time.After(time.Minute):
		t.Fatal("statuscheck version did not exit")
	}
	code, err := ct.Stop()
	require.NoError(t, err)
	assert.Equal(t, 0, code, ct.Logs())
	assert.True(t, slices.ContainsFunc(strings.Split(ct.Logs(), "\n"), func(l string) bool { return strings.HasPrefix(l, "statuscheck ") }),
		"no version line in:\n%s", ct.Logs())
}
