// Package kubelet runs one container of a pod spec under podman as the
// kubelet would, for tests on a machine without a kubelet.
//
// A test hands Run the corev1.Container it read back from the apiserver
// (the Deployment OLM created, say) and the pod around it; Run starts it
// with podman on the host network and the pod's service account mounted,
// and then probes it. What the kubelet decides, this package decides the
// same way, with the kubelet's code cited where it is (kubernetes
// v1.36.2): the command line (command replaces the image's ENTRYPOINT,
// args its CMD, `$(VAR)` expanded), the environment (values, the downward
// API's fieldRefs, the kubernetes service's variables), the security
// context (runAsNonRoot checked against runAsUser or the image's USER and
// refused with the kubelet's message, runAsUser/runAsGroup,
// readOnlyRootFilesystem, capabilities, allowPrivilegeEscalation,
// seccomp), resource limits, httpGet and tcpSocket liveness and readiness
// probes with their periods and thresholds, and termination (the image's
// stop signal, SIGKILL after the pod's grace period). A field the kubelet
// would act on and this package does not (volumes, envFrom, lifecycle
// hooks, startup probes, ...) is an error from Run, never ignored.
//
// It differs from a kubelet on purpose: nothing is pulled (the image must
// be in podman's store, as with imagePullPolicy: Never); a liveness probe
// that fails past its threshold is counted instead of restarting the
// container, and a container that exits is not restarted (the test
// decides); the container shares the host's network, so that it reaches
// a test apiserver on 127.0.0.1 (two containers cannot listen on one
// port, as they could in two pods); and probes go to 127.0.0.1, where a
// kubelet would use the pod's address (a process that listens only on
// loopback passes here and would fail there).
//
// The container runs in a cgroup of its own pod (as the kubelet's
// kubepods/pod<UID>), which outlives it, so that Usage reads its peak
// memory and CPU time after it has stopped. Podman must run as root with
// the cgroupfs manager and runc: .ci/podman installs and configures it.
package kubelet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Pod is what the kubelet knows of the pod around the container.
type Pod struct {
	// Namespace, Name and UID are the pod's (the downward API's
	// metadata.namespace, metadata.name, metadata.uid; UID is optional).
	Namespace, Name, UID string
	// Annotations and Labels are the pod template's: the downward API
	// reads them.
	Annotations, Labels map[string]string
	// ServiceAccountName is spec.serviceAccountName.
	ServiceAccountName string
	// SecurityContext is the pod's (runAsUser, runAsGroup, runAsNonRoot,
	// supplementalGroups, fsGroup, seccompProfile are honoured).
	SecurityContext *corev1.PodSecurityContext
	// Token and CA are mounted read-only with the namespace at
	// /var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt,namespace},
	// where client-go's in-cluster config reads them; nothing is mounted
	// when both are empty.
	Token, CA []byte
	// APIServer is the apiserver's host:port, given to the container as
	// the kubernetes service's variables (KUBERNETES_SERVICE_HOST,
	// KUBERNETES_SERVICE_PORT, ...); the container shares the host's
	// network, so 127.0.0.1 reaches a test apiserver.
	APIServer string
	// TerminationGracePeriod is how long Stop waits after SIGTERM before
	// SIGKILL: 30s when zero, at least 2s (the kubelet's minimum), whole
	// seconds.
	TerminationGracePeriod time.Duration
	// ExtraEnv are test-only variables resolved after the container's own
	// (so they may refer to them, and win over them).
	ExtraEnv []corev1.EnvVar
	// ProbePeriod, when set, replaces every probe's periodSeconds, so that
	// a test need not wait the real periods; thresholds, timeouts and
	// initial delays are kept.
	ProbePeriod time.Duration
}

// FromTemplate is the pod a controller would create from tmpl (a
// Deployment's spec.template): its annotations, labels, service account
// ("default" when unset, as the ServiceAccount admission plugin makes it),
// security context and grace period. Token, CA and APIServer are the
// caller's to set.
func FromTemplate(namespace, name string, tmpl corev1.PodTemplateSpec) Pod {
	p := Pod{
		Namespace:          namespace,
		Name:               name,
		Annotations:        tmpl.Annotations,
		Labels:             tmpl.Labels,
		ServiceAccountName: tmpl.Spec.ServiceAccountName,
		SecurityContext:    tmpl.Spec.SecurityContext,
	}
	if p.ServiceAccountName == "" {
		p.ServiceAccountName = "default"
	}
	if g := tmpl.Spec.TerminationGracePeriodSeconds; g != nil {
		// 0 asks for no grace at all, which the kubelet raises to its
		// minimum: keep it from meaning "unset" here.
		p.TerminationGracePeriod = time.Duration(max(*g, 1)) * time.Second
	}
	return p
}

// Container is a running container. Its methods are safe for concurrent
// use.
type Container struct {
	// Name is podman's name for it.
	Name string

	t       testing.TB
	spec    corev1.Container
	plan    *plan
	cgroup  string // the pod's cgroup, relative to each hierarchy's root
	started time.Time
	cancel  context.CancelFunc
	probes  sync.WaitGroup
	exited  chan struct{} // closed when `podman wait` returns
	ready   chan struct{} // closed on the first readiness

	mu         sync.Mutex
	isReady    bool
	readyAfter time.Duration
	liveFails  int
	exitCode   int // after exited: what `podman wait` said
	stopOnce   sync.Once
	stopCode   int
	stopErr    error
	logs       string
	stopped    bool
}

// Run starts c as the kubelet would start it in pod, with
// `podman run --pull never`, and polls its probes until Stop (ctx bounds
// the start, not the probes). It returns
// an error, and starts nothing, where the kubelet would refuse the
// container (runAsNonRoot, an image that is not present, a fieldRef that
// does not resolve) or where c asks for what this package does not do.
// The container is stopped and removed when the test ends if the test has
// not stopped it.
func Run(ctx context.Context, t testing.TB, pod Pod, c corev1.Container) (*Container, error) {
	t.Helper()
	if _, err := exec.LookPath("podman"); err != nil {
		return nil, fmt.Errorf("podman not found on PATH (run .ci/podman as root: it installs podman and runc and configures them for these machines): %w", err)
	}
	user, err := podman(ctx, "image", "inspect", "--format", "{{.Config.User}}", c.Image)
	if err != nil {
		if strings.Contains(err.Error(), "image not known") {
			// pkg/kubelet/images/image_manager.go, EnsureImageExists.
			return nil, fmt.Errorf("container image %q is not present with pull policy of Never: %w", c.Image, err)
		}
		return nil, fmt.Errorf("read the image's user: %w", err)
	}
	p, err := makePlan(pod, c, strings.TrimSpace(user))
	if err != nil {
		return nil, err
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	id := hex.EncodeToString(suffix)
	ct := &Container{
		Name:   fmt.Sprintf("k8s_%s_%s_%s_%s", c.Name, pod.Name, pod.Namespace, id),
		t:      t,
		spec:   c,
		plan:   p,
		cgroup: "/statuscheck-testpod-" + id,
		exited: make(chan struct{}),
		ready:  make(chan struct{}),
	}
	args := []string{"run", "--detach", "--pull", "never", "--name", ct.Name,
		"--network", "host",
		// The pod's cgroup holds only the container (conmon stays in the
		// caller's), so its counters are the container's and survive it.
		"--cgroups", "no-conmon", "--cgroup-parent", ct.cgroup,
	}
	for _, e := range p.env {
		args = append(args, "--env", e.Name+"="+e.Value)
	}
	if len(pod.Token) > 0 || len(pod.CA) > 0 {
		dir, err := serviceAccountDir(t, pod)
		if err != nil {
			return nil, err
		}
		args = append(args, "--volume", dir+":"+saDir+":ro")
	}
	args = append(args, p.flags...)
	args = append(args, p.imageArgs(c.Image)...)

	ct.started = time.Now()
	if _, err := podman(ctx, args...); err != nil {
		// podman may have created the container, and runc the cgroup.
		_, _ = podman(context.Background(), "rm", "--force", ct.Name)
		_ = removeCgroup(ct.cgroup)
		return nil, fmt.Errorf("start container %s (podman and runc configured by .ci/podman?): %w", c.Name, err)
	}
	t.Cleanup(ct.cleanup)
	t.Logf("kubelet: started %s (%s) in %v", c.Name, ct.Name, time.Since(ct.started).Round(time.Millisecond))

	go ct.watchExit()
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ct.cancel = cancel
	period := func(pr *corev1.Probe) time.Duration {
		if pod.ProbePeriod > 0 {
			return pod.ProbePeriod
		}
		return time.Duration(pr.PeriodSeconds) * time.Second
	}
	if p.liveness != nil {
		ct.startProbe(pctx, liveness, p.liveness, p.livePort, period(p.liveness))
	}
	if p.readiness != nil {
		ct.startProbe(pctx, readiness, p.readiness, p.readyPort, period(p.readiness))
	}
	if p.liveness == nil && p.readiness == nil {
		// Without probes the kubelet reports a running container ready.
		ct.markReady()
	}
	return ct, nil
}

// serviceAccountDir writes the service account volume: token, ca.crt and
// namespace, readable by any user (the projected volume's defaultMode is
// 0644), in a directory of the test's.
func serviceAccountDir(t testing.TB, pod Pod) (string, error) {
	dir := filepath.Join(t.TempDir(), "serviceaccount")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("service account volume: %w", err)
	}
	for name, data := range map[string][]byte{"token": pod.Token, "ca.crt": pod.CA, "namespace": []byte(pod.Namespace)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return "", fmt.Errorf("service account volume: %w", err)
		}
	}
	return dir, nil
}

// watchExit waits for the container to exit and records its exit code.
func (c *Container) watchExit() {
	defer close(c.exited)
	out, err := podman(context.Background(), "wait", c.Name)
	code, perr := strconv.Atoi(strings.TrimSpace(out))
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil || perr != nil {
		c.exitCode = -1
		return
	}
	c.exitCode = code
}

// Ready reports whether the container is ready now: its readiness probe's
// verdict; without one, whether its liveness probe has succeeded (the
// kubelet would call it ready once running); without probes, true.
func (c *Container) Ready() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.isReady
}

// ReadyAfter is how long after Run began starting the container it was
// first ready (see Ready), or 0 while it has not been.
func (c *Container) ReadyAfter() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readyAfter
}

// WaitReady waits until the container is first ready and returns
// ReadyAfter, or fails when ctx ends or the container exits first.
func (c *Container) WaitReady(ctx context.Context) (time.Duration, error) {
	select {
	case <-c.ready:
		return c.ReadyAfter(), nil
	case <-c.exited:
		c.mu.Lock()
		code := c.exitCode
		c.mu.Unlock()
		return 0, fmt.Errorf("container %s exited (code %d) before it was ready; its log:\n%s", c.spec.Name, code, c.Logs())
	case <-ctx.Done():
		return 0, fmt.Errorf("container %s not ready: %w; its log:\n%s", c.spec.Name, ctx.Err(), c.Logs())
	}
}

// LivenessFailures is how many times the liveness probe failed
// failureThreshold times in a row: each is a restart the kubelet would
// have made. Probing goes on after one (on the same container).
func (c *Container) LivenessFailures() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.liveFails
}

// Stop stops the container as the kubelet kills it: `podman stop -t
// GRACE` sends the image's stop signal (SIGTERM unless it says otherwise)
// and SIGKILL after the grace period. It returns the exit code (137 after
// SIGKILL), keeps the log for Logs and removes the container; the pod's
// cgroup stays for Usage until the test ends. Probing stops first, as the
// kubelet stops liveness probes of a pod being deleted. Stop may be called
// again and returns the same.
func (c *Container) Stop() (exitCode int, err error) {
	c.stopOnce.Do(func() {
		c.stopCode, c.stopErr = c.stop()
	})
	return c.stopCode, c.stopErr
}

func (c *Container) stop() (int, error) {
	if c.cancel != nil {
		c.cancel()
	}
	c.probes.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(c.plan.graceSecs)*time.Second+time.Minute)
	defer cancel()
	var errs []error
	began := time.Now()
	if _, err := podman(ctx, "stop", "--time", strconv.Itoa(c.plan.graceSecs), c.Name); err != nil {
		errs = append(errs, fmt.Errorf("stop container %s: %w", c.spec.Name, err))
	}
	stopTook := time.Since(began)
	code := -1
	out, err := podman(ctx, "inspect", "--format", "{{.State.ExitCode}}", c.Name)
	if err == nil {
		code, err = strconv.Atoi(strings.TrimSpace(out))
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("exit code of %s: %w", c.spec.Name, err))
	}
	logs, err := podmanCombined(ctx, "logs", c.Name)
	if err != nil {
		errs = append(errs, fmt.Errorf("logs of %s: %w", c.spec.Name, err))
	}
	if _, err := podman(ctx, "rm", "--force", c.Name); err != nil {
		errs = append(errs, fmt.Errorf("remove container %s: %w", c.spec.Name, err))
	}
	select {
	case <-c.exited:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("wait for %s to exit: %w", c.spec.Name, ctx.Err()))
	}
	c.mu.Lock()
	c.logs, c.stopped = logs, true
	c.mu.Unlock()
	c.t.Logf("kubelet: stopped %s in %v (grace %ds): exit code %d", c.spec.Name, stopTook.Round(time.Millisecond), c.plan.graceSecs, code)
	return code, errors.Join(errs...)
}

// Logs is the container's output so far (stdout and stderr), or all of
// it after Stop.
func (c *Container) Logs() string {
	c.mu.Lock()
	if c.stopped {
		defer c.mu.Unlock()
		return c.logs
	}
	c.mu.Unlock()
	out, err := podmanCombined(context.Background(), "logs", c.Name)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return out
}

// Usage is the container's peak memory and CPU time so far, from its
// pod's cgroup: cgroup v1's memory.max_usage_in_bytes and cpuacct.usage,
// or v2's memory.peak and cpu.stat usage_usec. The peak counts what the
// kernel charges the container: its resident memory and the page cache
// it touched (its executable, the files it read). It may be called
// before or after Stop, until the test ends.
func (c *Container) Usage() (peakMemoryBytes int64, cpu time.Duration, err error) {
	m, err := readCgroupMounts()
	if err != nil {
		return 0, 0, err
	}
	return cgroupUsage(m, c.cgroup)
}

// cleanup stops the container if the test did not, and removes the
// pod's cgroup.
func (c *Container) cleanup() {
	if _, err := c.Stop(); err != nil {
		c.t.Errorf("kubelet: %v", err)
	}
	if err := removeCgroup(c.cgroup); err != nil {
		c.t.Errorf("kubelet: %v", err)
	}
}

// podman runs podman and returns its standard output; an error carries
// its standard error.
func podman(ctx context.Context, args ...string) (string, error) {
	var stdout, stderr strings.Builder
	cmd := exec.CommandContext(ctx, "podman", args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("podman %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// podmanCombined runs podman and returns its standard output and error
// together (a container's log is both).
func podmanCombined(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "podman", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("podman %s: %w: %s", args[0], err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
