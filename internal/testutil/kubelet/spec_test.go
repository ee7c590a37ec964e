package kubelet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// These tests need no podman: they check what Run decides before it
// starts anything.

func TestExpand(t *testing.T) {
	vars := map[string]string{"VAR_A": "A", "VAR_EMPTY": ""}
	tests := []struct{ name, in, want string }{
		{name: "reference", in: "$(VAR_A)", want: "A"},
		{name: "inside text", in: "x-$(VAR_A)-y", want: "x-A-y"},
		{name: "empty value", in: "[$(VAR_EMPTY)]", want: "[]"},
		{name: "unknown kept", in: "$(NOPE)", want: "$(NOPE)"},
		{name: "escaped", in: "$$(VAR_A)", want: "$(VAR_A)"},
		{name: "double escape then reference", in: "$$$(VAR_A)", want: "$A"},
		{name: "unterminated", in: "$(VAR_A", want: "$(VAR_A"},
		{name: "operator alone", in: "$VAR_A", want: "$VAR_A"},
		{name: "trailing operator", in: "a$", want: "a$"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, expand(tt.in, mappingFuncFor(vars)))
		})
	}
}

func TestPlanRefuses(t *testing.T) {
	ok := corev1.Container{Name: "c", Image: "img"}
	with := func(f func(c *corev1.Container)) corev1.Container {
		c := *ok.DeepCopy()
		f(&c)
		return c
	}
	ref := func(path string) func(c *corev1.Container) {
		return func(c *corev1.Container) { c.Env = []corev1.EnvVar{fieldRef("X", path)} }
	}
	tests := []struct {
		name      string
		pod       func(p *Pod)
		container corev1.Container
		imageUser string
		wantErr   string
	}{
		{name: "status.podIP, which a pod here has not", container: with(ref("status.podIP")),
			wantErr: "env X: fieldRef status.podIP is not supported by this helper"},
		{name: "spec.nodeName", container: with(ref("spec.nodeName")),
			wantErr: "env X: fieldRef spec.nodeName is not supported by this helper"},
		{name: "a field the kubelet does not know", container: with(ref("spec.containers")),
			wantErr: "env X: fieldRef spec.containers is not supported by this helper"},
		{name: "subscript on a field without keys", container: with(ref("metadata.name['x']")),
			wantErr: "env X: field label does not support subscript: metadata.name['x']"},
		{name: "invalid annotation key", container: with(ref("metadata.annotations['a b']")),
			wantErr: "env X: invalid key subscript in metadata.annotations['a b']"},
		{name: "apiVersion other than v1", container: with(func(c *corev1.Container) {
			c.Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v2", FieldPath: "metadata.name"}}}}
		}), wantErr: "env X: unsupported pod version: v2"},
		{name: "metadata.uid of a pod without UID", pod: func(p *Pod) { p.UID = "" }, container: with(ref("metadata.uid")),
			wantErr: "env X: fieldRef metadata.uid: the Pod has no UID (set Pod.UID)"},
		{name: "configMapKeyRef", container: with(func(c *corev1.Container) {
			c.Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "k"}}}}
		}), wantErr: "env X: only valueFrom.fieldRef is supported by this helper"},
		{name: "envFrom", container: with(func(c *corev1.Container) {
			c.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{}}}
		}), wantErr: `container "c": envFrom is not supported by this helper`},
		{name: "volumeMounts", container: with(func(c *corev1.Container) {
			c.VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/v"}}
		}), wantErr: `container "c": volumeMounts is not supported by this helper`},
		{name: "preStop hook", container: with(func(c *corev1.Container) {
			c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{}}
		}), wantErr: `container "c": lifecycle is not supported by this helper`},
		{name: "startupProbe", container: with(func(c *corev1.Container) { c.StartupProbe = &corev1.Probe{} }),
			wantErr: `container "c": startupProbe is not supported by this helper`},
		{name: "exec probe", container: with(func(c *corev1.Container) {
			c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
		}), wantErr: "liveness probe: only httpGet and tcpSocket probes are supported by this helper"},
		{name: "a probe's named port the container does not have", container: with(func(c *corev1.Container) {
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("health")}}}
		}), wantErr: "readiness probe: port health not found"},
		{name: "a Localhost seccomp profile", pod: func(p *Pod) {
			p.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost}}
		}, container: ok, wantErr: "the pod's securityContext.seccompProfile of type Localhost is not supported by this helper"},
		{name: "an image user beyond int32", container: with(func(c *corev1.Container) {
			c.SecurityContext = &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)}
		}), imageUser: "4294967296", wantErr: "container has runAsNonRoot and image has an invalid user id (4294967296)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod()
			if tt.pod != nil {
				tt.pod(&pod)
			}
			_, err := makePlan(pod, tt.container, tt.imageUser)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestResourceFlags(t *testing.T) {
	list := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	tests := []struct {
		name      string
		resources corev1.ResourceRequirements
		want      []string
	}{
		{name: "none: the BestEffort pod's 2 shares", want: []string{"--cpu-shares", "2"}},
		{name: "the bridge's: memory limit without swap, shares from the request",
			resources: corev1.ResourceRequirements{Requests: list("cpu", "10m", "memory", "64Mi"), Limits: list("memory", "128Mi")},
			want:      []string{"--memory", "134217728", "--memory-swap", "134217728", "--cpu-shares", "10"}},
		{name: "a CPU limit is a quota over 100ms, and the request when there is none",
			resources: corev1.ResourceRequirements{Limits: list("cpu", "500m")},
			want:      []string{"--cpu-shares", "512", "--cpu-period", "100000", "--cpu-quota", "50000"}},
		{name: "ephemeral storage is not a cgroup setting",
			resources: corev1.ResourceRequirements{Limits: list("ephemeral-storage", "1Gi")},
			want:      []string{"--cpu-shares", "2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, resourceFlags(tt.resources))
		})
	}
}

func TestFromTemplate(t *testing.T) {
	tests := []struct {
		name      string
		tmpl      corev1.PodTemplateSpec
		wantSA    string
		wantGrace int
	}{
		{name: "defaults: the default service account, 30s", wantSA: "default", wantGrace: 30},
		{name: "the template's", tmpl: corev1.PodTemplateSpec{Spec: corev1.PodSpec{ServiceAccountName: "op", TerminationGracePeriodSeconds: ptr.To[int64](5)}},
			wantSA: "op", wantGrace: 5},
		{name: "below the kubelet's minimum", tmpl: corev1.PodTemplateSpec{Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](1)}},
			wantSA: "default", wantGrace: 2},
		{name: "0 is the kubelet's minimum, not the default", tmpl: corev1.PodTemplateSpec{Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0)}},
			wantSA: "default", wantGrace: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := FromTemplate("ns", "name", tt.tmpl)
			assert.Equal(t, tt.wantSA, p.ServiceAccountName)
			assert.Equal(t, tt.wantGrace, graceSeconds(p.TerminationGracePeriod))
		})
	}
	assert.Equal(t, 3, graceSeconds(2500*time.Millisecond), "whole seconds, rounded up")
}

func TestCgroupUsage(t *testing.T) {
	const hybrid = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	const v2 = `25 1 0:22 / / rw - ext4 /dev/sda1 rw
35 24 0:30 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate
`
	tests := []struct {
		name      string
		mountinfo string
		files     map[string]string // by mount point, then file
		wantAll   []string
		wantPeak  int64
		wantCPU   time.Duration
	}{
		{name: "cgroup v1 (the hybrid layout here)", mountinfo: hybrid,
			files: map[string]string{
				"/sys/fs/cgroup/memory/pod/memory.max_usage_in_bytes": "4603904\n",
				"/sys/fs/cgroup/cpuacct/pod/cpuacct.usage":            "34077523\n",
			},
			wantAll:  []string{"/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified"},
			wantPeak: 4603904, wantCPU: 34077523},
		{name: "cgroup v2", mountinfo: v2,
			files: map[string]string{
				"/sys/fs/cgroup/pod/memory.peak": "8192\n",
				"/sys/fs/cgroup/pod/cpu.stat":    "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n",
			},
			wantAll:  []string{"/sys/fs/cgroup"},
			wantPeak: 8192, wantCPU: 1500 * time.Microsecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := parseCgroupMounts(strings.NewReader(tt.mountinfo))
			require.NoError(t, err)
			assert.Equal(t, tt.wantAll, m.all)
			// The same layout under a temporary root.
			root := t.TempDir()
			for file, content := range tt.files {
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, file)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(root, file), []byte(content), 0o644))
			}
			for k, v := range m.v1 {
				m.v1[k] = filepath.Join(root, v)
			}
			if m.v2 != "" {
				m.v2 = filepath.Join(root, m.v2)
			}
			peak, cpu, err := cgroupUsage(m, "/pod")
			require.NoError(t, err)
			assert.Equal(t, tt.wantPeak, peak)
			assert.Equal(t, tt.wantCPU, cpu)
		})
	}
}

func fieldRef(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

func testPod() Pod {
	return Pod{
		Namespace:          "ns1",
		Name:               "pod1",
		UID:                "uid-1",
		Annotations:        map[string]string{"operatorframework.io/status-source": `{"kind":"HyperConverged"}`},
		Labels:             map[string]string{"app": "cool", "tier": "op"},
		ServiceAccountName: "sa1",
		APIServer:          "127.0.0.1:6443",
		ProbePeriod:        100 * time.Millisecond,
	}
}
