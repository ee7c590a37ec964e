package admission

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/statuscheck/statuscheck/internal/testutil"
)

// noStatus is the denial while the CR has no Upgradeable condition.
const noStatus = "no Upgradeable condition"

// TestPolicyHoldsImageUpdate: an image update of the operator's
// Deployment is denied with HTTP 422 (reason Invalid) and a message
// naming the condition, its generations and the CR's reason and message
// unless the CR reports a fresh Upgradeable=True; `statuscheck gate`
// decides the same on the same CR.
func TestPolicyHoldsImageUpdate(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "hold", group)
	f.setCR(t, crState{generation: 1})
	f.guard(t, filepath.Join(testutil.RepoRoot(), protected))
	lag, err := f.wantUpdate(t, deployment, newImage, outcome{http.StatusUnprocessableEntity, f.heldMessage(noStatus)}, lagTimeout)
	t.Logf("the new policy denies %v after it was created: %v", lag.Round(time.Millisecond), err)
	// The message says "is forbidden" (admission.NewForbidden writes
	// it), but the code is 422 and the reason the policy's Invalid.
	require.True(t, apierrors.IsInvalid(err), "reason Invalid: %v", err)
	require.Contains(t, err.Error(), `deployments.apps "cool-operator" is forbidden: ValidatingAdmissionPolicy 'guard-`+f.ns+`' with binding 'guard-`+f.ns+`' denied request: `)

	tests := []struct {
		name string
		cr   crState
		want outcome
		// gate is statuscheck gate's exit code on the same CR.
		gate int
	}{
		{name: "False", cr: held,
			want: outcome{422, f.heldMessage("Upgradeable=False (observedGeneration 1, generation 1) reason Migrating: moving data to MariaDB")}, gate: 1},
		{name: "Unknown", cr: crState{generation: 1, conditions: []cond{{Type: "Upgradeable", Status: "Unknown", Reason: "Checking", Message: "not known yet", ObservedGeneration: 1}}},
			want: outcome{422, f.heldMessage("Upgradeable=Unknown (observedGeneration 1, generation 1) reason Checking: not known yet")}, gate: 1},
		{name: "missing", cr: crState{generation: 1, conditions: []cond{{Type: "Available", Status: "True", Reason: "Running", Message: "up", ObservedGeneration: 1}}},
			want: outcome{422, f.heldMessage(noStatus)}, gate: 1},
		{name: "outdated True", cr: crState{generation: 2, conditions: []cond{{Type: "Upgradeable", Status: "True", Reason: "Idle", Message: "ready", ObservedGeneration: 1}}},
			want: outcome{422, f.heldMessage("Upgradeable=True (observedGeneration 1, generation 2) reason Idle: ready")}, gate: 1},
		{name: "fresh True", cr: crState{generation: 2, conditions: []cond{{Type: "Upgradeable", Status: "True", Reason: "Idle", Message: "ready", ObservedGeneration: 2}}},
			want: allowed, gate: 0},
		{name: "False again", cr: crState{generation: 2, conditions: []cond{{Type: "Upgradeable", Status: "False", Reason: "Migrating", Message: "again", ObservedGeneration: 2}}},
			want: outcome{422, f.heldMessage("Upgradeable=False (observedGeneration 2, generation 2) reason Migrating: again")}, gate: 1},
	}
	// The cases run in order on the one CR; each one's answer differs
	// from the one before, so the poll sees this case's write.
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { f.policyAndGate(t, tt.cr, tt.want, tt.gate) })
	}
}

// TestPolicyMatchesOnlyImageUpdates: while the CR holds the upgrade, only
// the image updates of the named Deployment are denied; a status write, a
// scale, a rollout restart, a label, a change that is not an image, the
// other Deployment and a delete-and-recreate pass.
func TestPolicyMatchesOnlyImageUpdates(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "match", group)
	// An init container, before the guard, so that its image can change.
	require.NoError(t, f.update(deployment, func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "migrate", Image: "quay.io/cool-operators-corp/migrate:v0.2.0"}}
	}))
	f.setCR(t, held)
	f.guard(t, filepath.Join(testutil.RepoRoot(), protected))
	denied := outcome{422, f.heldMessage("Upgradeable=False (observedGeneration 1, generation 1) reason Migrating: moving data to MariaDB")}
	lag, _ := f.wantUpdate(t, deployment, newImage, denied, lagTimeout)
	t.Logf("the new policy denies %v after it was created", lag.Round(time.Millisecond))

	ctx := context.Background()
	deployments := func() appsv1client.DeploymentInterface { return f.kube.AppsV1().Deployments(f.ns) }
	tests := []struct {
		name string
		do   func() error
		want outcome
	}{
		{name: "image of the second container", want: denied, do: func() error {
			return f.update(deployment, func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Containers[1].Image = "quay.io/statuscheck/statuscheck:v0.2.0"
			})
		}},
		{name: "image of the init container", want: denied, do: func() error {
			return f.update(deployment, func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.InitContainers[0].Image = "quay.io/cool-operators-corp/migrate:v0.3.0"
			})
		}},
		{name: "init container added", want: denied, do: func() error {
			return f.update(deployment, func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.InitContainers = append(d.Spec.Template.Spec.InitContainers, corev1.Container{Name: "more", Image: "busybox"})
			})
		}},
		{name: "status write", want: allowed, do: func() error {
			d, err := deployments().Get(ctx, deployment, metav1.GetOptions{})
			if err != nil {
				return err
			}
			d.Status.ObservedGeneration, d.Status.Replicas, d.Status.ReadyReplicas = d.Generation, 1, 1
			_, err = deployments().UpdateStatus(ctx, d, metav1.UpdateOptions{})
			return err
		}},
		{name: "scale subresource", want: allowed, do: func() error {
			s, err := deployments().GetScale(ctx, deployment, metav1.GetOptions{})
			if err != nil {
				return err
			}
			s.Spec.Replicas = 3
			_, err = deployments().UpdateScale(ctx, deployment, s, metav1.UpdateOptions{})
			return err
		}},
		{name: "rollout restart", want: allowed, do: func() error { return f.update(deployment, restart) }},
		{name: "label", want: allowed, do: func() error { return f.update(deployment, label) }},
		{name: "new args, same images", want: allowed, do: func() error {
			return f.update(deployment, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Args = []string{"--verbose"} })
		}},
		{name: "image of another Deployment", want: allowed, do: func() error { return f.update(other, newImage) }},
		{name: "delete and recreate with a new image", want: allowed, do: func() error {
			if err := deployments().Delete(ctx, deployment, metav1.DeleteOptions{}); err != nil {
				return err
			}
			d := csvDeployment(t, f.ns, deployment)
			newImage(d)
			_, err := deployments().Create(ctx, d, metav1.CreateOptions{})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do()
			assert.True(t, tt.want.is(err), "want code %d %q, got code %d: %v", tt.want.code, tt.want.msg, code(err), err)
		})
	}
}

// restart is what kubectl rollout restart changes.
func restart(d *appsv1.Deployment) {
	if d.Spec.Template.Annotations == nil {
		d.Spec.Template.Annotations = map[string]string{}
	}
	d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] = time.Now().Format(time.RFC3339Nano)
}

// label changes a label of the Deployment.
func label(d *appsv1.Deployment) {
	if d.Labels == nil {
		d.Labels = map[string]string{}
	}
	d.Labels["touched"] = time.Now().Format("150405.000000")
}

// TestPolicyWhenAbsent: with the CR deleted, whenAbsent Allow (the
// default) lets an image update through; whenAbsent Block denies it,
// and, because the missing parameter is a configuration error decided
// before the policy's matchCondition, denies every other update of the
// Deployment too (not its /status and /scale).
func TestPolicyWhenAbsent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		whenAbsent string
		failure    admissionv1.FailurePolicyType
		notFound   admissionv1.ParameterNotFoundActionType
		// want is the answer to an image update, other to a rollout
		// restart, while the CR is absent.
		want, other outcome
	}{
		{name: "Allow", failure: admissionv1.Fail, notFound: admissionv1.AllowAction, want: allowed, other: allowed},
		{name: "Block", whenAbsent: "Block", failure: admissionv1.Fail, notFound: admissionv1.DenyAction,
			want:  outcome{422, "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"},
			other: outcome{422, "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(testutil.RepoRoot(), protected)
			if tt.whenAbsent != "" {
				dir = bundle(t, group, tt.whenAbsent)
			}
			f := newFixture(t, "absent-"+strings.ToLower(tt.name), group)
			f.setCR(t, held)
			p, b := f.guard(t, dir)
			assert.Equal(t, tt.failure, *p.Spec.FailurePolicy)
			assert.Equal(t, tt.notFound, *b.Spec.ParamRef.ParameterNotFoundAction)
			lag, _ := f.wantUpdate(t, deployment, newImage, outcome{422, f.heldMessage("Upgradeable=False")}, lagTimeout)
			t.Logf("the new policy denies %v after it was created", lag.Round(time.Millisecond))

			f.deleteCR(t)
			lag, err := f.wantUpdate(t, deployment, newImage, tt.want, lagTimeout)
			t.Logf("CR deleted: the image update answered code %d after %v: %v", code(err), lag.Round(time.Millisecond), err)
			err = f.update(deployment, restart)
			assert.True(t, tt.other.is(err), "rollout restart: want code %d %q, got code %d: %v", tt.other.code, tt.other.msg, code(err), err)
			err = f.update(deployment, label)
			assert.True(t, tt.other.is(err), "label: want code %d %q, got code %d: %v", tt.other.code, tt.other.msg, code(err), err)
			s, err := f.kube.AppsV1().Deployments(f.ns).GetScale(context.Background(), deployment, metav1.GetOptions{})
			require.NoError(t, err)
			s.Spec.Replicas++
			_, err = f.kube.AppsV1().Deployments(f.ns).UpdateScale(context.Background(), deployment, s, metav1.UpdateOptions{})
			assert.NoError(t, err, "scale")
			assert.NoError(t, f.update(other, newImage), "another Deployment")
			exit, _, stderr := runGate(t, dir, "-n", f.ns)
			wantExit := 0
			if tt.whenAbsent == "Block" {
				wantExit = 1
			}
			assert.Equal(t, wantExit, exit, "statuscheck gate: %s", stderr)
		})
	}
}

// TestPolicyOverride: the CR's override annotation decides before the
// conditions: "True" lets the update through while the CR says False, any
// other value holds it while the CR says True.
func TestPolicyOverride(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "override", group)
	f.setCR(t, held)
	f.guard(t, filepath.Join(testutil.RepoRoot(), protected))
	lag, _ := f.wantUpdate(t, deployment, newImage, outcome{422, f.heldMessage("Upgradeable=False")}, lagTimeout)
	t.Logf("the new policy denies %v after it was created", lag.Round(time.Millisecond))
	overridden := func(v string) outcome {
		return outcome{422, "the upgrade of Deployment " + f.ns + "/" + deployment + " is held: override " + overrideKey + "=" + v}
	}
	with := func(s crState, v string) crState { s.override = v; return s }
	tests := []struct {
		name string
		cr   crState
		want outcome
		gate int
	}{
		{name: "True over False", cr: with(held, "True"), want: allowed, gate: 0},
		{name: "true over False", cr: with(held, "true"), want: overridden("true"), gate: 1},
		{name: "False over fresh True", cr: with(fresh, "False"), want: overridden("False"), gate: 1},
		{name: "yes over fresh True", cr: with(fresh, "yes"), want: overridden("yes"), gate: 1},
		{name: "removed, fresh True", cr: fresh, want: allowed, gate: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { f.policyAndGate(t, tt.cr, tt.want, tt.gate) })
	}
}

// warnings collects the warnings the apiserver returns.
type warnings struct {
	mu    sync.Mutex
	texts []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.texts = append(w.texts, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.texts
	w.texts = nil
	return t
}

// TestPolicyWarn: the binding's validationActions [Warn] turns the denial
// into a warning, and [Deny] back.
func TestPolicyWarn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "warn", group)
	w := &warnings{}
	cfg := rest.CopyConfig(srv.Config)
	cfg.WarningHandler = w
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	f.kube = kube
	f.setCR(t, held)
	_, binding := f.guard(t, filepath.Join(testutil.RepoRoot(), protected))
	msg := f.heldMessage("Upgradeable=False (observedGeneration 1, generation 1) reason Migrating: moving data to MariaDB")
	lag, _ := f.wantUpdate(t, deployment, newImage, outcome{422, msg}, lagTimeout)
	t.Logf("the new policy denies %v after it was created", lag.Round(time.Millisecond))

	bindings := srv.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	setActions := func(actions ...admissionv1.ValidationAction) {
		b, err := bindings.Get(context.Background(), binding.Name, metav1.GetOptions{})
		require.NoError(t, err)
		b.Spec.ValidationActions = actions
		_, err = bindings.Update(context.Background(), b, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	setActions(admissionv1.Warn)
	w.take()
	lag, _ = f.wantUpdate(t, deployment, newImage, allowed, lagTimeout)
	got := w.take()
	t.Logf("[Warn]: the image update passes %v after the binding's update, with warnings %q", lag.Round(time.Millisecond), got)
	require.NotEmpty(t, got)
	assert.Contains(t, got[len(got)-1], "Validation failed for ValidatingAdmissionPolicy '"+binding.Spec.PolicyName+"' with binding '"+binding.Name+"': "+msg)

	setActions(admissionv1.Deny)
	lag, err = f.wantUpdate(t, deployment, newImage, outcome{422, msg}, lagTimeout)
	t.Logf("[Deny] again: denied %v after the binding's update: %v", lag.Round(time.Millisecond), err)
}

// TestPolicyOverrideWithoutCR: under whenAbsent Block with no CR there is
// nothing to annotate, and the binding's [Warn] does not lift the denial:
// the missing parameter is a configuration error, which the apiserver's
// dispatcher denies under failurePolicy Fail whatever the binding's
// validationActions say (k8s.io/apiserver, policy/validating,
// dispatcher.Dispatch, addConfigError). What lifts it is the policy's
// failurePolicy Ignore, or the binding deleted; failurePolicy Fail again
// holds again.
func TestPolicyOverrideWithoutCR(t *testing.T) {
	t.Parallel()
	dir := bundle(t, group, "Block")
	f := newFixture(t, "nocr", group)
	p, b := f.guard(t, dir)
	noParams := outcome{422, "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"}
	lag, _ := f.wantUpdate(t, deployment, newImage, noParams, lagTimeout)
	t.Logf("no CR: the new policy denies %v after it was created", lag.Round(time.Millisecond))

	ctx := context.Background()
	reg := srv.Kube.AdmissionregistrationV1()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got, err := reg.ValidatingAdmissionPolicyBindings().Get(ctx, b.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got.Spec.ValidationActions = []admissionv1.ValidationAction{admissionv1.Warn}
		_, err = reg.ValidatingAdmissionPolicyBindings().Update(ctx, got, metav1.UpdateOptions{})
		return err
	}))
	// [Warn] is in force: with a CR that holds, the update passes with a
	// warning; with the CR deleted again, the configuration error denies.
	f.setCR(t, held)
	lag, _ = f.wantUpdate(t, deployment, newImage, allowed, lagTimeout)
	t.Logf("[Warn], a CR that holds: the image update passes %v after", lag.Round(time.Millisecond))
	f.deleteCR(t)
	lag, err := f.wantUpdate(t, deployment, newImage, noParams, lagTimeout)
	t.Logf("[Warn], no CR: denied %v after the CR's deletion: %v", lag.Round(time.Millisecond), err)

	setFailure := func(fp admissionv1.FailurePolicyType) {
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			got, err := reg.ValidatingAdmissionPolicies().Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			got.Spec.FailurePolicy = &fp
			_, err = reg.ValidatingAdmissionPolicies().Update(ctx, got, metav1.UpdateOptions{})
			return err
		}))
	}
	setFailure(admissionv1.Ignore)
	lag, _ = f.wantUpdate(t, deployment, newImage, allowed, lagTimeout)
	t.Logf("failurePolicy Ignore: the image update passes %v after the policy's update", lag.Round(time.Millisecond))
	setFailure(admissionv1.Fail)
	lag, _ = f.wantUpdate(t, deployment, newImage, noParams, lagTimeout)
	t.Logf("failurePolicy Fail again: denied %v after the policy's update", lag.Round(time.Millisecond))

	require.NoError(t, reg.ValidatingAdmissionPolicyBindings().Delete(ctx, b.Name, metav1.DeleteOptions{}))
	lag, _ = f.wantUpdate(t, deployment, newImage, allowed, lagTimeout)
	t.Logf("the binding deleted: the image update passes %v after", lag.Round(time.Millisecond))
}

// policyAndGate sets the CR to cr, then requires admission's answer want
// to an image update of the Deployment and statuscheck gate's exit code
// gate on the same CR.
func (f *fixture) policyAndGate(t *testing.T, cr crState, want outcome, gate int) {
	t.Helper()
	f.setCR(t, cr)
	lag, err := f.wantUpdate(t, deployment, newImage, want, lagTimeout)
	t.Logf("admission answered code %d after %v: %v", code(err), lag.Round(time.Millisecond), err)
	exit, _, stderr := runGate(t, protected, "-n", f.ns)
	assert.Equal(t, gate, exit, "statuscheck gate: %s", stderr)
}
