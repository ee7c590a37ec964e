//go:build olmnative

package olm

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
)

// The patched OLM reads, and under RequestAck writes, only a status source
// of a kind the replaced CSV owns, in the CSV's own namespace, and writes
// it only as the OperatorGroup's service account: an annotation that names
// anything else holds the replacement with a message naming why, and
// nothing is written.

// annotate sets the status-source annotation of the world's CSVs.
func (w *world) annotate(value string) {
	w.csv = w.csv.DeepCopy()
	if w.csv.Annotations == nil {
		w.csv.Annotations = map[string]string{}
	}
	w.csv.Annotations["operatorframework.io/status-source"] = value
}

// refuses installs v2 replacing the running v1 and requires that OLM holds
// it at its gate with a message containing why, and keeps holding it.
func (w *world) refuses(why string) {
	w.t.Helper()
	w.installCSV(v2, "0.2.0", v1)
	w.waitHeld(v2, why)
	time.Sleep(time.Second)
	phase, reason, msg := w.csvMessage(v2)
	require.Equal(w.t, heldPhase, phase+"/"+reason, msg)
	require.Contains(w.t, msg, why)
}

// TestNativeScopeKubeSystemDeployment: the annotation names kube-system's
// coredns Deployment with a RequestAck request at its pod template's
// nodeName. OLM refuses it and writes nothing there.
func TestNativeScopeKubeSystemDeployment(t *testing.T) {
	w := newWorld(t, "none")
	ctx := context.Background()
	labels := map[string]string{"k8s-app": "kube-dns"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "coredns", Image: "coredns:1"}}}}}}
	if _, err := w.c.Kube.AppsV1().Deployments("kube-system").Create(ctx, dep, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	before, err := w.c.Kube.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	require.NoError(t, err)
	w.annotate(`{"apiVersion":"apps/v1","kind":"Deployment","name":"coredns","namespace":"kube-system","handshake":{"mode":"RequestAck","request":{"specPath":".spec.template.spec.nodeName"}}}`)
	w.running(false)
	w.refuses(fmt.Sprintf(`refused: the status source apps/v1 Deployment/coredns names namespace "kube-system"; OLM reads and writes a status source only in its CSV's namespace %q`, w.ns))
	after, err := w.c.Kube.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	require.NoError(t, err)
	// Its resourceVersion moves: the tier's Deployment stand-in writes
	// every Deployment's status. What OLM could write is the spec and
	// the annotations.
	assert.Equal(t, before.Generation, after.Generation, "coredns's spec untouched")
	assert.Equal(t, before.Annotations, after.Annotations, "coredns's annotations untouched")
	assert.Empty(t, after.Spec.Template.Spec.NodeName)
	assert.NotContains(t, after.Annotations, v1alpha1.RequestRecordAnnotation)

	// The same Deployment kind in the CSV's own namespace: not a kind the
	// CSV owns.
	w2 := newWorld(t, "none")
	w2.annotate(`{"apiVersion":"apps/v1","kind":"Deployment","name":"cool-operator","handshake":{"mode":"RequestAck","request":{"specPath":".spec.template.spec.nodeName"}}}`)
	w2.running(false)
	w2.refuses("refused: the status source kind Deployment.apps is not owned by " + v1 + " (spec.customresourcedefinitions.owned)")
}

// TestNativeScopeKindNotOwned: the annotation names the CSV's own
// OperatorCondition, a kind OLM owns, not the bundle.
func TestNativeScopeKindNotOwned(t *testing.T) {
	w := newWorld(t, "none")
	w.annotate(`{"apiVersion":"operators.coreos.com/v2","kind":"OperatorCondition","name":"` + v1 + `","handshake":{"mode":"RequestAck","request":{"specPath":".spec.upgradeRequest"}}}`)
	w.running(false)
	w.refuses("refused: the status source kind OperatorCondition.operators.coreos.com is not owned by " + v1)
	oc := w.oc(v1)
	assert.NotContains(t, oc.Annotations, v1alpha1.RequestRecordAnnotation, "nothing written")
}

// TestNativeScopeAnotherNamespace: the annotation names the status source
// of the same operator installed in another namespace.
func TestNativeScopeAnotherNamespace(t *testing.T) {
	other := newWorld(t, "request-spec")
	other.createCR(map[string]interface{}{"storageLayer": "PostgreSQL"})
	w := newWorld(t, "request-spec")
	w.annotate(`{"apiVersion":"cool.operators.corp/v1beta1","kind":"CoolOperator","name":"cool-operator","namespace":"` + other.ns + `","handshake":{"mode":"RequestAck","request":{"specPath":".spec.upgradeRequest"}}}`)
	w.running(false)
	w.refuses(fmt.Sprintf("refused: the status source cool.operators.corp/v1beta1 CoolOperator/cool-operator names namespace %q", other.ns))
	spec, _, rec := other.olmRequest()
	assert.Empty(t, spec, "no request written in the other namespace")
	assert.Nil(t, rec)
}

// TestNativeScopeServiceAccountLacksTheGrant: the namespace's
// OperatorGroup names a service account that may read the status source
// but not patch it. OLM writes the RequestAck request as that service
// account, the apiserver refuses it, and OLM holds the replacement saying
// so; nothing is written. The grant given, OLM's request goes through
// (the replacement's install, as that service account, is not this
// test's: the service account holds no other grant).
func TestNativeScopeServiceAccountLacksTheGrant(t *testing.T) {
	w := newWorld(t, "request-spec")
	w.running(false)
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "scoped", Namespace: w.ns}}
	_, err := w.c.Kube.CoreV1().ServiceAccounts(w.ns).Create(ctx, sa, metav1.CreateOptions{})
	require.NoError(t, err)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "scoped", Namespace: w.ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"cool.operators.corp"}, Resources: []string{"cooloperators"}, Verbs: []string{"get", "list", "watch"}},
		// What OLM reads as this service account to check the running
		// v1's install.
		{APIGroups: []string{"", "apps", "rbac.authorization.k8s.io"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
	}}
	_, err = w.c.Kube.RbacV1().Roles(w.ns).Create(ctx, role, metav1.CreateOptions{})
	require.NoError(t, err)
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "scoped", Namespace: w.ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "scoped"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scoped", Namespace: w.ns}}}
	_, err = w.c.Kube.RbacV1().RoleBindings(w.ns).Create(ctx, rb, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		og, err := w.c.OLM.OperatorsV1().OperatorGroups(w.ns).Get(ctx, "og", metav1.GetOptions{})
		if err != nil {
			return err
		}
		og.Spec.ServiceAccountName = "scoped"
		_, err = w.c.OLM.OperatorsV1().OperatorGroups(w.ns).Update(ctx, og, metav1.UpdateOptions{})
		return err
	}))
	w.waitUntil("OLM to take the OperatorGroup's service account", 60*time.Second, func() bool {
		og, err := w.c.OLM.OperatorsV1().OperatorGroups(w.ns).Get(ctx, "og", metav1.GetOptions{})
		return err == nil && og.Status.ServiceAccountRef != nil
	})

	w.refuses(fmt.Sprintf("refused by the apiserver: the OperatorGroup's service account of namespace %s may not patch cooloperators.cool.operators.corp", w.ns))
	spec, _, rec := w.olmRequest()
	assert.Empty(t, spec, "no request written")
	assert.Nil(t, rec)
	cr, err := w.cr().Get(ctx, w.name, metav1.GetOptions{})
	require.NoError(t, err)
	_, found, _ := unstructured.NestedFieldNoCopy(cr.Object, "spec", "upgradeRequest")
	assert.False(t, found)

	// The grant: OLM's request is written, as the service account.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		r, err := w.c.Kube.RbacV1().Roles(w.ns).Get(ctx, "scoped", metav1.GetOptions{})
		if err != nil {
			return err
		}
		r.Rules[0].Verbs = append(r.Rules[0].Verbs, "patch")
		_, err = w.c.Kube.RbacV1().Roles(w.ns).Update(ctx, r, metav1.UpdateOptions{})
		return err
	}))
	w.waitHeld(v2, "upgrade request 1 to cool.operators.corp/v1beta1 CoolOperator/cool-operator is unanswered")
	cr, err = w.cr().Get(ctx, w.name, metav1.GetOptions{})
	require.NoError(t, err)
	var managers []string
	for _, mf := range cr.GetManagedFields() {
		managers = append(managers, mf.Manager)
	}
	assert.Contains(t, managers, "olm-status-source")
}
