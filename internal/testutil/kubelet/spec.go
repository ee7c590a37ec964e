package kubelet

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// saDir is where the kubelet mounts the service account's projected
// volume and client-go's in-cluster config reads it.
const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// envVar is one resolved variable of the container's environment.
type envVar struct{ Name, Value string }

// plan is what Run does with a container: the podman run arguments that
// carry the spec (after the fixed ones Run adds: name, cgroup, network,
// mounts) and the image's command line, decided before anything runs.
type plan struct {
	env       []envVar
	command   []string // expanded; empty: the image's ENTRYPOINT
	args      []string // expanded; empty: the image's CMD (if command is empty too)
	flags     []string // security context and resources as podman flags
	liveness  *corev1.Probe
	readiness *corev1.Probe
	livePort  int // the probes' resolved ports
	readyPort int
	graceSecs int
}

// makePlan translates pod and c into a plan. imageUser is the image's
// USER (`podman image inspect --format {{.Config.User}}`), which
// runAsNonRoot is checked against. Every field the kubelet would act on
// and this helper does not honour is an error, so that a test never runs
// something other than what the kubelet would.
func makePlan(pod Pod, c corev1.Container, imageUser string) (*plan, error) {
	if err := unsupported(pod, c); err != nil {
		return nil, err
	}
	p := &plan{}
	eff := effectiveSecurityContext(pod.SecurityContext, c.SecurityContext)
	uid, username := userFromImage(imageUser)
	if err := verifyRunAsNonRoot(podDesc(pod), c.Name, eff, uid, username); err != nil {
		return nil, err
	}
	env, err := environment(pod, c)
	if err != nil {
		return nil, err
	}
	p.env = env
	p.command, p.args = expandCommandAndArgs(c, env)
	p.flags = append(securityFlags(pod.SecurityContext, eff, c.SecurityContext, imageUser), resourceFlags(c.Resources)...)
	if c.WorkingDir != "" {
		p.flags = append(p.flags, "--workdir", c.WorkingDir)
	}
	if p.liveness, p.livePort, err = probeSpec(c.LivenessProbe, c); err != nil {
		return nil, fmt.Errorf("liveness probe: %w", err)
	}
	if p.readiness, p.readyPort, err = probeSpec(c.ReadinessProbe, c); err != nil {
		return nil, fmt.Errorf("readiness probe: %w", err)
	}
	p.graceSecs = graceSeconds(pod.TerminationGracePeriod)
	return p, nil
}

// unsupported lists what the kubelet would do with pod and c that this
// helper does not.
func unsupported(pod Pod, c corev1.Container) error {
	var errs []error
	add := func(field string, set bool) {
		if set {
			errs = append(errs, fmt.Errorf("container %q: %s is not supported by this helper", c.Name, field))
		}
	}
	add("envFrom", len(c.EnvFrom) > 0)
	add("volumeMounts", len(c.VolumeMounts) > 0)
	add("volumeDevices", len(c.VolumeDevices) > 0)
	add("lifecycle", c.Lifecycle != nil)
	add("startupProbe", c.StartupProbe != nil)
	add("resources.claims", len(c.Resources.Claims) > 0)
	for name := range c.Resources.Limits {
		add("resources.limits."+string(name), strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix))
	}
	if sc := c.SecurityContext; sc != nil {
		add("securityContext.seLinuxOptions", sc.SELinuxOptions != nil)
		add("securityContext.windowsOptions", sc.WindowsOptions != nil)
		add("securityContext.procMount", sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount)
		add("securityContext.appArmorProfile", sc.AppArmorProfile != nil)
		add("securityContext.seccompProfile of type Localhost", sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeLocalhost)
	}
	if sc := pod.SecurityContext; sc != nil {
		add("the pod's securityContext.seLinuxOptions", sc.SELinuxOptions != nil)
		add("the pod's securityContext.windowsOptions", sc.WindowsOptions != nil)
		add("the pod's securityContext.sysctls", len(sc.Sysctls) > 0)
		add("the pod's securityContext.appArmorProfile", sc.AppArmorProfile != nil)
		add("the pod's securityContext.seccompProfile of type Localhost", sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeLocalhost)
	}
	return errors.Join(errs...)
}

// podDesc is the kubelet's name for a pod in its messages (kubernetes
// pkg/kubelet/util/format/pod.go, PodDesc).
func podDesc(pod Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// effectiveSecurityContext merges the pod's security context into the
// container's as kubernetes pkg/securitycontext/util.go,
// DetermineEffectiveSecurityContext, does: the pod gives runAsUser,
// runAsGroup and runAsNonRoot (securityContextFromPodSecurityContext), a
// field the container sets wins.
func effectiveSecurityContext(pod *corev1.PodSecurityContext, c *corev1.SecurityContext) *corev1.SecurityContext {
	eff := &corev1.SecurityContext{}
	if pod != nil {
		eff.RunAsUser, eff.RunAsGroup, eff.RunAsNonRoot = pod.RunAsUser, pod.RunAsGroup, pod.RunAsNonRoot
	}
	if c == nil {
		return eff
	}
	eff.Capabilities = c.Capabilities
	eff.Privileged = c.Privileged
	eff.ReadOnlyRootFilesystem = c.ReadOnlyRootFilesystem
	eff.AllowPrivilegeEscalation = c.AllowPrivilegeEscalation
	if c.RunAsUser != nil {
		eff.RunAsUser = c.RunAsUser
	}
	if c.RunAsGroup != nil {
		eff.RunAsGroup = c.RunAsGroup
	}
	if c.RunAsNonRoot != nil {
		eff.RunAsNonRoot = c.RunAsNonRoot
	}
	return eff
}

// userFromImage is how the container runtime reports an image's USER to
// the kubelet: containerd v1.7 pkg/cri/server/helpers.go,
// getUserFromImage (the group after a colon is dropped; a number is a
// uid, anything else a user name), then kubernetes
// pkg/kubelet/kuberuntime/helpers.go, getImageUser: an image with no USER
// runs as uid 0.
func userFromImage(user string) (*int64, string) {
	if user == "" {
		return new(int64), ""
	}
	user, _, _ = strings.Cut(user, ":")
	uid, err := strconv.ParseInt(user, 10, 64)
	if err != nil {
		return nil, user
	}
	return &uid, ""
}

// verifyRunAsNonRoot is kubernetes
// pkg/kubelet/kuberuntime/security_context_others.go, verifyRunAsNonRoot,
// with its messages: runAsNonRoot refuses runAsUser 0, or without
// runAsUser an image user that is root or not a number.
func verifyRunAsNonRoot(podDesc, container string, sc *corev1.SecurityContext, uid *int64, username string) error {
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		return nil
	}
	if sc.RunAsUser != nil {
		if *sc.RunAsUser == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", podDesc, container)
		}
		return nil
	}
	switch {
	case uid == nil && len(username) > 0:
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", username, podDesc, container)
	case uid != nil:
		if *uid == 0 {
			return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podDesc, container)
		}
		if errs := validation.IsValidUserID(*uid); len(errs) > 0 {
			return fmt.Errorf("container has runAsNonRoot and image has an invalid user id (%d). (Must be 1-(%d)): %s (pod: %q, container: %s)",
				*uid, math.MaxInt32, strings.Join(errs, "; "), podDesc, container)
		}
	}
	return nil
}

// environment is the container's environment as kubernetes
// pkg/kubelet/kubelet_pods.go, makeEnvironmentVariables, makes it: each
// variable of env (then pod.ExtraEnv) in order, a non-empty value
// expanded against the variables before it and the service variables, else
// its valueFrom resolved; then the service variables the container did not
// set. Only the kubernetes service's variables exist here (from
// pod.APIServer), as if the pod's namespace had no services.
func environment(pod Pod, c corev1.Container) ([]envVar, error) {
	service, serviceNames := serviceEnv(pod.APIServer)
	tmp := map[string]string{}
	var order []string
	mapping := mappingFuncFor(tmp, service)
	for _, e := range append(slices.Clone(c.Env), pod.ExtraEnv...) {
		val := e.Value
		if val != "" {
			val = expand(val, mapping)
		} else if e.ValueFrom != nil {
			if e.ValueFrom.FieldRef == nil {
				return nil, fmt.Errorf("env %s: only valueFrom.fieldRef is supported by this helper", e.Name)
			}
			v, err := podField(pod, e.ValueFrom.FieldRef)
			if err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
			val = v
		}
		if _, seen := tmp[e.Name]; !seen {
			order = append(order, e.Name)
		}
		tmp[e.Name] = val
	}
	out := make([]envVar, 0, len(order)+len(serviceNames))
	for _, n := range order {
		out = append(out, envVar{n, tmp[n]})
	}
	for _, n := range serviceNames {
		if _, set := tmp[n]; !set {
			out = append(out, envVar{n, service[n]})
		}
	}
	return out, nil
}

// serviceEnv is the kubernetes service's variables for an apiserver at
// hostPort, as kubernetes pkg/kubelet/envvars/envvars.go, FromServices
// and makeLinkVariables, make them for its one port, named https.
func serviceEnv(hostPort string) (map[string]string, []string) {
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return map[string]string{}, nil
	}
	url := "tcp://" + net.JoinHostPort(host, port)
	link := "KUBERNETES_PORT_" + port + "_TCP"
	vars := [][2]string{
		{"KUBERNETES_SERVICE_HOST", host},
		{"KUBERNETES_SERVICE_PORT", port},
		{"KUBERNETES_SERVICE_PORT_HTTPS", port},
		{"KUBERNETES_PORT", url},
		{link, url},
		{link + "_PROTO", "tcp"},
		{link + "_PORT", port},
		{link + "_ADDR", host},
	}
	m := make(map[string]string, len(vars))
	names := make([]string, 0, len(vars))
	for _, v := range vars {
		m[v[0]] = v[1]
		names = append(names, v[0])
	}
	return m, names
}

// podField is the downward API's value of fs: kubernetes
// pkg/kubelet/kubelet_pods.go, podFieldSelectorRuntimeValue, through
// pkg/apis/core/pods/helpers.go, ConvertDownwardAPIFieldLabel, and
// pkg/fieldpath/fieldpath.go, ExtractFieldPathAsString. The fields a pod
// here does not have (node, IPs, phase) are an error, never empty.
func podField(pod Pod, fs *corev1.ObjectFieldSelector) (string, error) {
	// An empty apiVersion is "v1" (pkg/apis/core/v1/defaults.go,
	// SetDefaults_ObjectFieldSelector): the kubelet only sees defaulted pods.
	if fs.APIVersion != "" && fs.APIVersion != "v1" {
		return "", fmt.Errorf("unsupported pod version: %s", fs.APIVersion)
	}
	if path, key, ok := splitMaybeSubscriptedPath(fs.FieldPath); ok {
		switch path {
		case "metadata.annotations":
			if errs := validation.IsQualifiedName(strings.ToLower(key)); len(errs) != 0 {
				return "", fmt.Errorf("invalid key subscript in %s: %s", fs.FieldPath, strings.Join(errs, ";"))
			}
			return pod.Annotations[key], nil
		case "metadata.labels":
			if errs := validation.IsQualifiedName(key); len(errs) != 0 {
				return "", fmt.Errorf("invalid key subscript in %s: %s", fs.FieldPath, strings.Join(errs, ";"))
			}
			return pod.Labels[key], nil
		}
		return "", fmt.Errorf("field label does not support subscript: %s", fs.FieldPath)
	}
	switch fs.FieldPath {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "spec.serviceAccountName":
		return pod.ServiceAccountName, nil
	case "metadata.uid":
		if pod.UID == "" {
			return "", errors.New("fieldRef metadata.uid: the Pod has no UID (set Pod.UID)")
		}
		return pod.UID, nil
	}
	return "", fmt.Errorf("fieldRef %s is not supported by this helper", fs.FieldPath)
}

// splitMaybeSubscriptedPath is kubernetes pkg/fieldpath/fieldpath.go,
// SplitMaybeSubscriptedPath: "metadata.annotations['k']" to
// ("metadata.annotations", "k", true).
func splitMaybeSubscriptedPath(fieldPath string) (string, string, bool) {
	s, ok := strings.CutSuffix(fieldPath, "']")
	if !ok {
		return fieldPath, "", false
	}
	path, key, ok := strings.Cut(s, "['")
	if !ok || path == "" {
		return fieldPath, "", false
	}
	return path, key, true
}

// formatMap is kubernetes pkg/fieldpath/fieldpath.go, FormatMap: sorted
// key="quoted value" lines.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	lines := make([]string, 0, len(keys))
	for _, k := range keys {
		lines = append(lines, k+"="+strconv.Quote(m[k]))
	}
	return strings.Join(lines, "\n")
}

// expandCommandAndArgs is kubernetes pkg/kubelet/container/helpers.go,
// ExpandContainerCommandAndArgs: `$(VAR)` in command and args against the
// container's final environment.
func expandCommandAndArgs(c corev1.Container, env []envVar) (command, args []string) {
	m := make(map[string]string, len(env))
	for _, e := range env {
		m[e.Name] = e.Value
	}
	mapping := mappingFuncFor(m)
	for _, s := range c.Command {
		command = append(command, expand(s, mapping))
	}
	for _, s := range c.Args {
		args = append(args, expand(s, mapping))
	}
	return command, args
}

// imageArgs is the tail of `podman run`: the image and, as the container
// runtime applies the kubelet's command and args (containerd
// pkg/cri/opts/spec.go WithProcessArgs; the Kubernetes documentation's
// "Define a Command and Arguments for a Container"), a command that
// replaces ENTRYPOINT and drops CMD, args that replace CMD.
func (p *plan) imageArgs(image string) []string {
	var out []string
	if len(p.command) > 0 {
		ep, _ := json.Marshal(p.command)
		out = append(out, "--entrypoint", string(ep))
	}
	out = append(out, image)
	return append(out, p.args...)
}

// securityFlags are the podman flags of the effective security context
// eff (and the container's own c for seccomp, which the kubelet reads
// from the container, then the pod: pkg/kubelet/kuberuntime/helpers.go,
// getSeccompProfile).
func securityFlags(pod *corev1.PodSecurityContext, eff, c *corev1.SecurityContext, imageUser string) []string {
	var f []string
	switch {
	case eff.RunAsUser != nil && eff.RunAsGroup != nil:
		f = append(f, "--user", fmt.Sprintf("%d:%d", *eff.RunAsUser, *eff.RunAsGroup))
	case eff.RunAsUser != nil:
		f = append(f, "--user", strconv.FormatInt(*eff.RunAsUser, 10))
	case eff.RunAsGroup != nil:
		user, _, _ := strings.Cut(imageUser, ":")
		if user == "" {
			user = "0"
		}
		f = append(f, "--user", fmt.Sprintf("%s:%d", user, *eff.RunAsGroup))
	}
	if pod != nil {
		// The kubelet passes fsGroup and supplementalGroups to the runtime
		// as the process's supplementary groups
		// (pkg/kubelet/kuberuntime/security_context.go,
		// determineEffectiveSecurityContext).
		groups := slices.Clone(pod.SupplementalGroups)
		if pod.FSGroup != nil {
			groups = append(groups, *pod.FSGroup)
		}
		for _, g := range groups {
			f = append(f, "--group-add", strconv.FormatInt(g, 10))
		}
	}
	if eff.Privileged != nil && *eff.Privileged {
		f = append(f, "--privileged")
	}
	if eff.ReadOnlyRootFilesystem != nil && *eff.ReadOnlyRootFilesystem {
		// Podman mounts tmpfs on /tmp, /run and /var/tmp of a read-only
		// container unless told not to; the kubelet mounts nothing there.
		f = append(f, "--read-only", "--read-only-tmpfs=false")
	}
	if eff.Capabilities != nil {
		for _, cp := range eff.Capabilities.Drop {
			f = append(f, "--cap-drop", string(cp))
		}
		for _, cp := range eff.Capabilities.Add {
			f = append(f, "--cap-add", string(cp))
		}
	}
	// pkg/securitycontext/util.go, AddNoNewPrivileges: only an explicit
	// allowPrivilegeEscalation: false sets no_new_privs.
	if eff.AllowPrivilegeEscalation != nil && !*eff.AllowPrivilegeEscalation {
		f = append(f, "--security-opt", "no-new-privileges")
	}
	// pkg/kubelet/kuberuntime/helpers.go, getSeccompProfile: the
	// container's profile, else the pod's, else Unconfined (the kubelet's
	// --seccomp-default is off by default); RuntimeDefault is podman's
	// default profile.
	var prof *corev1.SeccompProfile
	if c != nil && c.SeccompProfile != nil {
		prof = c.SeccompProfile
	} else if pod != nil {
		prof = pod.SeccompProfile
	}
	if prof == nil || prof.Type != corev1.SeccompProfileTypeRuntimeDefault {
		f = append(f, "--security-opt", "seccomp=unconfined")
	}
	return f
}

// resourceFlags are the cgroup settings the kubelet gives a container
// (pkg/kubelet/kuberuntime/kuberuntime_container_linux.go,
// calculateLinuxResources; pkg/kubelet/cm/helpers_linux.go,
// MilliCPUToShares and MilliCPUToQuota): the memory limit with no swap on
// top, CPU shares from the request (the limit when there is no request,
// as API defaulting makes it; 2 without either), a CFS quota over 100ms
// from the CPU limit. Ephemeral storage is enforced by eviction, not at
// start, and is ignored.
func resourceFlags(r corev1.ResourceRequirements) []string {
	var f []string
	if mem, ok := r.Limits[corev1.ResourceMemory]; ok {
		b := strconv.FormatInt(mem.Value(), 10)
		f = append(f, "--memory", b, "--memory-swap", b)
	}
	reqCPU, ok := r.Requests[corev1.ResourceCPU]
	if !ok {
		reqCPU, ok = r.Limits[corev1.ResourceCPU]
	}
	shares := int64(2)
	if ok {
		shares = max(reqCPU.MilliValue()*1024/1000, 2)
	}
	f = append(f, "--cpu-shares", strconv.FormatInt(shares, 10))
	if lim, ok := r.Limits[corev1.ResourceCPU]; ok && lim.MilliValue() > 0 {
		const period = 100000
		quota := max(lim.MilliValue()*period/1000, 1000)
		f = append(f, "--cpu-period", strconv.Itoa(period), "--cpu-quota", strconv.FormatInt(quota, 10))
	}
	return f
}

// probeSpec defaults p as the apiserver does (pkg/apis/core/v1/defaults.go,
// SetDefaults_Probe, SetDefaults_HTTPGetAction) and resolves its port
// (pkg/probe/util.go, ResolveContainerPort: a port number, a name of the
// container's ports, or a number written as a string). Only httpGet and
// tcpSocket handlers are supported.
func probeSpec(p *corev1.Probe, c corev1.Container) (*corev1.Probe, int, error) {
	if p == nil {
		return nil, 0, nil
	}
	p = p.DeepCopy()
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	var port intstr.IntOrString
	switch {
	case p.HTTPGet != nil:
		if p.HTTPGet.Path == "" {
			p.HTTPGet.Path = "/"
		}
		if p.HTTPGet.Scheme == "" {
			p.HTTPGet.Scheme = corev1.URISchemeHTTP
		}
		port = p.HTTPGet.Port
	case p.TCPSocket != nil:
		port = p.TCPSocket.Port
	default:
		return nil, 0, errors.New("only httpGet and tcpSocket probes are supported by this helper")
	}
	n := port.IntValue()
	if port.Type == intstr.String {
		i := slices.IndexFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == port.StrVal })
		switch v, err := strconv.Atoi(port.StrVal); {
		case i >= 0:
			n = int(c.Ports[i].ContainerPort)
		case err != nil:
			return nil, 0, fmt.Errorf("port %s not found", port.StrVal)
		default:
			n = v
		}
	}
	if n <= 0 || n >= 65536 {
		return nil, 0, fmt.Errorf("invalid port number: %v", n)
	}
	return p, n, nil
}

// graceSeconds is the pod's grace period in whole seconds (30 when
// unset, the API's default), at least the kubelet's minimum of 2
// (pkg/kubelet/kuberuntime/kuberuntime_container.go, killContainer;
// minimumGracePeriodInSeconds).
func graceSeconds(d time.Duration) int {
	s := int(math.Ceil(d.Seconds()))
	if s == 0 {
		s = 30
	}
	return max(s, 2)
}
