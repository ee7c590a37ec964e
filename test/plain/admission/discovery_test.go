package admission

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// discoveryTimeout bounds the wait for admission to learn a new kind:
// kube-apiserver resets its admission RESTMapper every 30 s.
const discoveryTimeout = 45 * time.Second

// notDiscovered is the denial of a policy whose paramKind admission does
// not know, under failurePolicy Fail.
const notDiscovered = "failed to configure policy: failed to find resource referenced by paramKind"

// TestPolicyBeforeItsCRD: a policy whose paramKind's CRD is not installed
// is a configuration error. Under whenAbsent Block (failurePolicy Fail)
// it denies every UPDATE of the named Deployment, not only the image
// updates (the matchCondition is evaluated after the parameter is
// resolved), but not the other Deployment, /scale or /status; so does it
// under whenAbsent Allow (failurePolicy is Fail for both: an error never
// lets an update through). Once the CRD is installed,
// admission learns the kind within the RESTMapper's 30 s reset.
func TestPolicyBeforeItsCRD(t *testing.T) {
	t.Parallel()
	const grp = "latea.cool.operators.corp"
	blockDir, allowDir := bundle(t, grp, "Block"), bundle(t, grp, "")
	fa, fb := newFixture(t, "before-allow", grp), newFixture(t, "before-block", grp)
	// The Allow policy first: once the Block one is in force, so is it
	// (one informer, in order).
	fa.guard(t, allowDir)
	fb.guard(t, blockDir)
	denied := outcome{422, notDiscovered}
	lag, err := fb.wantUpdate(t, deployment, newImage, denied, lagTimeout)
	t.Logf("no CRD: the Block policy denies %v after it was created: %v", lag.Round(time.Millisecond), err)

	ctx := context.Background()
	err = fa.update(deployment, newImage)
	assert.True(t, denied.is(err), "whenAbsent Allow, no CRD: an image update is denied too: got code %d: %v", code(err), err)
	assert.NoError(t, fb.update(other, newImage), "another Deployment")
	err = fb.update(deployment, restart)
	assert.True(t, denied.is(err), "rollout restart: got code %d: %v", code(err), err)
	err = fb.update(deployment, label)
	assert.True(t, denied.is(err), "label: got code %d: %v", code(err), err)
	s, err := fb.kube.AppsV1().Deployments(fb.ns).GetScale(ctx, deployment, metav1.GetOptions{})
	require.NoError(t, err)
	s.Spec.Replicas = 2
	_, err = fb.kube.AppsV1().Deployments(fb.ns).UpdateScale(ctx, deployment, s, metav1.UpdateOptions{})
	assert.NoError(t, err, "scale")

	established, err := srv.InstallCRD(ctx, bundleCRD(t, blockDir))
	require.NoError(t, err)
	fb.setCR(t, held)
	fa.setCR(t, held)
	lag, err = fb.wantUpdate(t, deployment, newImage, outcome{422, fb.heldMessage("Upgradeable=False")}, discoveryTimeout)
	t.Logf("CRD installed: the Block policy reads the CR %v after the CRD was established (%v after the CR was written): %v",
		time.Since(established).Round(time.Millisecond), lag.Round(time.Millisecond), err)
	lag, _ = fa.wantUpdate(t, deployment, newImage, outcome{422, fa.heldMessage("Upgradeable=False")}, lagTimeout)
	t.Logf("and the Allow policy %v later", lag.Round(time.Millisecond))
	fb.setCR(t, fresh)
	lag, _ = fb.wantUpdate(t, deployment, newImage, allowed, lagTimeout)
	t.Logf("fresh True: allowed %v after the write", lag.Round(time.Millisecond))
}

// TestPolicyRightAfterItsCRD: a policy created right after its CRD is
// established may find that admission does not know the kind yet (until
// the RESTMapper's next reset, up to 30 s); whether it does depends on
// where in that cycle the CRD lands, so the test logs what it saw and
// requires only that the policy reads the CR within the cycle.
func TestPolicyRightAfterItsCRD(t *testing.T) {
	t.Parallel()
	const grp = "lateb.cool.operators.corp"
	dir := bundle(t, grp, "Block")
	f := newFixture(t, "after", grp)
	established, err := srv.InstallCRD(context.Background(), bundleCRD(t, dir))
	require.NoError(t, err)
	f.setCR(t, held)
	f.guard(t, dir)
	created := time.Since(established)
	lag, err := f.wantUpdate(t, deployment, newImage, outcome{422, f.heldMessage("Upgradeable=False")}, discoveryTimeout)
	t.Logf("policy created %v after the CRD was established; it reads the CR %v after that (%v after the CRD): %v",
		created.Round(time.Millisecond), lag.Round(time.Millisecond), time.Since(established).Round(time.Millisecond), err)
}
