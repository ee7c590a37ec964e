package plain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// JobRun is one run of a Job's container by the stand-in.
type JobRun struct {
	Namespace, Name string
	UID             types.UID
	Args            []string
	ExitCode        int
	// Output is the container's stdout and stderr (its log).
	Output string
}

// JobRunner plays the job controller and the kubelet for the Jobs Helm
// creates as hooks. For each new Job it writes the status the job
// controller writes once the pod exists (startTime, active 1), runs the
// Job's one container as the real statuscheck binary with the container's
// arguments plus --kubeconfig (the pod's in-cluster credentials do not
// exist here: the kubeconfig impersonates the Job's ServiceAccount, so
// the Role the hook brings is what the gate runs with), and then writes
// the terminal status as the job controller of Kubernetes 1.36 does for
// a Job with backoffLimit 0 and one pod: first the interim condition
// (SuccessCriteriaMet, or FailureTarget with BackoffLimitExceeded) and
// then, the pod's finalizer being gone, the terminal one (Complete with
// completionTime, or Failed), with the succeeded or failed count. The
// apiserver's Job status validation (JobManagedBy on: the strict
// transition rules) accepts only that order.
type JobRunner struct {
	Kube   kubernetes.Interface
	Config *rest.Config
	Binary string
	Dir    string
	Logf   func(format string, args ...interface{})

	mu   sync.Mutex
	seen map[types.UID]bool
	runs []JobRun
}

// Runs is every run so far, in order.
func (r *JobRunner) Runs() []JobRun {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]JobRun(nil), r.runs...)
}

// RunsIn is every run of a Job in the namespace so far, in order.
func (r *JobRunner) RunsIn(ns string) []JobRun {
	var out []JobRun
	for _, run := range r.Runs() {
		if run.Namespace == ns {
			out = append(out, run)
		}
	}
	return out
}

// Run watches Jobs in every namespace (polling, as test/olm's stand-ins
// do) until ctx ends.
func (r *JobRunner) Run(ctx context.Context) {
	r.mu.Lock()
	r.seen = map[types.UID]bool{}
	r.mu.Unlock()
	for ctx.Err() == nil {
		list, err := r.Kube.BatchV1().Jobs(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err == nil {
			for i := range list.Items {
				j := &list.Items[i]
				r.mu.Lock()
				seen := r.seen[j.UID]
				r.seen[j.UID] = true
				r.mu.Unlock()
				if seen || j.DeletionTimestamp != nil || finished(j) {
					continue
				}
				go func() {
					if err := r.runJob(ctx, j); err != nil {
						r.Logf("job stand-in: %s/%s: %v", j.Namespace, j.Name, err)
					}
				}()
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func finished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func (r *JobRunner) runJob(ctx context.Context, j *batchv1.Job) error {
	spec := j.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		return fmt.Errorf("the stand-in runs Jobs of one container, this one has %d", len(spec.Containers))
	}
	start := metav1.Now()
	if err := r.writeStatus(ctx, j, func(s *batchv1.JobStatus) {
		s.StartTime = &start
		s.Active = 1
		s.Ready = ptr.To[int32](0)
		s.Terminating = ptr.To[int32](0)
		s.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}); err != nil {
		return fmt.Errorf("writing the started status: %w", err)
	}

	kubeconfig, err := r.serviceAccountKubeconfig(ctx, j.Namespace, spec.ServiceAccountName)
	if err != nil {
		return err
	}
	// The image's entrypoint is statuscheck: the container's args (or its
	// command after the entrypoint) are statuscheck's.
	c := spec.Containers[0]
	args := append([]string(nil), c.Args...)
	if len(c.Command) > 0 {
		args = append(append([]string(nil), c.Command[1:]...), c.Args...)
	}
	args = append(args, "--kubeconfig", kubeconfig)
	timeout := 2 * time.Minute
	if j.Spec.ActiveDeadlineSeconds != nil {
		timeout = time.Duration(*j.Spec.ActiveDeadlineSeconds) * time.Second
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(runCtx, r.Binary, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	code := 0
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			return fmt.Errorf("running %v: %w", args, err)
		}
		code = exit.ExitCode()
	}
	r.mu.Lock()
	r.runs = append(r.runs, JobRun{Namespace: j.Namespace, Name: j.Name, UID: j.UID, Args: args, ExitCode: code, Output: out.String()})
	r.mu.Unlock()
	r.Logf("job stand-in: %s/%s exited %d: %s", j.Namespace, j.Name, code, out.String())

	// The job controller's two steps, as pkg/controller/job writes them.
	interim, terminal := batchv1.JobSuccessCriteriaMet, batchv1.JobComplete
	reason, message := batchv1.JobReasonCompletionsReached, "Reached expected number of succeeded pods"
	if code != 0 {
		interim, terminal = batchv1.JobFailureTarget, batchv1.JobFailed
		reason, message = batchv1.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit"
	}
	if err := r.writeStatus(ctx, j, func(s *batchv1.JobStatus) {
		now := metav1.Now()
		s.Active, s.Ready = 0, ptr.To[int32](0)
		if code == 0 {
			s.Succeeded = 1
		} else {
			s.Failed = 1
		}
		s.Conditions = append(s.Conditions, batchv1.JobCondition{Type: interim, Status: corev1.ConditionTrue, Reason: reason, Message: message, LastProbeTime: now, LastTransitionTime: now})
	}); err != nil {
		return fmt.Errorf("writing the %s condition: %w", interim, err)
	}
	if err := r.writeStatus(ctx, j, func(s *batchv1.JobStatus) {
		now := metav1.Now()
		if code == 0 {
			s.CompletionTime = &now
		}
		s.Conditions = append(s.Conditions, batchv1.JobCondition{Type: terminal, Status: corev1.ConditionTrue, Reason: reason, Message: message, LastProbeTime: now, LastTransitionTime: now})
	}); err != nil {
		return fmt.Errorf("writing the %s condition: %w", terminal, err)
	}
	return nil
}

// writeStatus changes the Job's status through /status, with retries on
// conflict.
func (r *JobRunner) writeStatus(ctx context.Context, j *batchv1.Job, change func(*batchv1.JobStatus)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := r.Kube.BatchV1().Jobs(j.Namespace).Get(ctx, j.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != j.UID {
			return fmt.Errorf("job %s/%s was replaced", j.Namespace, j.Name)
		}
		change(&cur.Status)
		_, err = r.Kube.BatchV1().Jobs(j.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{FieldManager: "job-controller-stand-in"})
		return err
	})
}

// serviceAccountKubeconfig writes a kubeconfig that reaches the server as
// the ServiceAccount (the superuser impersonating it, so the requests are
// authorized as the pod's would be) and waits until the authorizer sees
// the RoleBinding Helm created a moment before: a real pod starts seconds
// after its Job, the subprocess would start in milliseconds.
func (r *JobRunner) serviceAccountKubeconfig(ctx context.Context, ns, sa string) (string, error) {
	if sa == "" {
		sa = "default"
	}
	user := "system:serviceaccount:" + ns + ":" + sa
	cfg := rest.CopyConfig(r.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	dir := filepath.Join(r.Dir, ns+"-"+sa)
	path, err := writeImpersonatingKubeconfig(cfg, dir)
	if err != nil {
		return "", fmt.Errorf("writing the kubeconfig of %s: %w", user, err)
	}
	_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		sar, err := r.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User:   user,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &authzv1.ResourceAttributes{
				Namespace: ns, Verb: "get", Group: "cool.operators.corp", Resource: "cooloperators", Name: "cool-operator",
			},
		}}, metav1.CreateOptions{})
		return err == nil && sar.Status.Allowed, nil
	})
	return path, nil
}

// writeImpersonatingKubeconfig writes what testutil.WriteKubeconfig
// writes plus the user's "as" (clientcmd's Impersonate).
func writeImpersonatingKubeconfig(cfg *rest.Config, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData, TLSServerName: cfg.ServerName}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken, ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Impersonate: cfg.Impersonate.UserName}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test", Namespace: "default"}
	kc.CurrentContext = "test"
	path := filepath.Join(dir, "kubeconfig")
	return path, clientcmd.WriteToFile(*kc, path)
}
