package admission

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/statuscheck/statuscheck/internal/testutil"
)

const (
	// protected is the repository's bundle whose guard the tests apply.
	protected = "testdata/bundles/protected"
	// group is its CRD's group.
	group = "cool.operators.corp"
	// deployment is its CSV's Deployment, crName its CR.
	deployment = "cool-operator"
	crName     = "cool-operator"
	// other is a second Deployment the policy does not name.
	other = "other-operator"
	// overrideKey is the CR's override annotation.
	overrideKey = "statuscheck.operatorframework.io/upgradeable-override"
	// lagTimeout bounds the wait for the apiserver's caches (policy,
	// binding, CR) to catch up with a write.
	lagTimeout = 10 * time.Second
)

// bundle is a copy of the protected bundle in a temporary directory,
// its CRD's group renamed to grp (for a kind the apiserver does not know
// yet) and its status source's whenAbsent set with `statuscheck generate
// -w --when-absent` when whenAbsent is not empty.
func bundle(t *testing.T, grp, whenAbsent string) string {
	t.Helper()
	src := filepath.Join(testutil.RepoRoot(), protected)
	dir := filepath.Join(t.TempDir(), "bundle")
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		data = bytes.ReplaceAll(data, []byte(group), []byte(grp))
		return os.WriteFile(filepath.Join(dir, rel), data, 0o644)
	})
	require.NoError(t, err)
	if whenAbsent != "" {
		out, err := exec.Command(testutil.Binary(t), "generate", "-w", "--when-absent", whenAbsent, dir).CombinedOutput()
		require.NoError(t, err, "generate -w --when-absent %s: %s", whenAbsent, out)
	}
	return dir
}

// bundleCRD reads the CRD of a bundle copy.
func bundleCRD(t *testing.T, dir string) *apiextv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "manifests", "cool.operators.corp_cooloperators.yaml"))
	require.NoError(t, err)
	crd := &apiextv1.CustomResourceDefinition{}
	require.NoError(t, yaml.Unmarshal(data, crd))
	return crd
}

// fixture is one test's namespace: the bundle's Deployment, a second
// Deployment the policy does not name, and the CR's client.
type fixture struct {
	ns  string
	gvr schema.GroupVersionResource
	// kube is the client the Deployment updates go through (one with a
	// warning handler for the Warn test).
	kube kubernetes.Interface
}

// newFixture creates a namespace and the two Deployments; grp is the
// group of the CR kind the fixture writes.
func newFixture(t *testing.T, prefix, grp string) *fixture {
	t.Helper()
	ctx := context.Background()
	ns, err := srv.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	f := &fixture{ns: ns.Name, gvr: schema.GroupVersionResource{Group: grp, Version: "v1beta1", Resource: "cooloperators"}, kube: srv.Kube}
	for _, name := range []string{deployment, other} {
		_, err := srv.Kube.AppsV1().Deployments(f.ns).Create(ctx, csvDeployment(t, f.ns, name), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	return f
}

// csvDeployment is the Deployment of the protected bundle's CSV install
// strategy, as OLM would create it, under the given name.
func csvDeployment(t *testing.T, ns, name string) *appsv1.Deployment {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), protected, "manifests", "cool-operator.clusterserviceversion.yaml"))
	require.NoError(t, err)
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	require.NoError(t, yaml.Unmarshal(data, csv))
	specs := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	require.Len(t, specs, 1)
	require.Equal(t, deployment, specs[0].Name)
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: specs[0].Label}, Spec: specs[0].Spec}
}

// guard runs `statuscheck generate --admission-policy` on the bundle dir
// for the fixture's namespace and creates the policy and binding it
// prints, renamed after the namespace; it returns them as created.
func (f *fixture) guard(t *testing.T, dir string) (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	policy, binding := generate(t, dir, f.ns)
	name := "guard-" + f.ns
	policy.Name, binding.Name, binding.Spec.PolicyName = name, name, name
	ctx := context.Background()
	p, err := srv.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{})
	require.NoError(t, err)
	b, err := srv.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = srv.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = srv.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return p, b
}

// generate parses what `statuscheck generate --admission-policy
// --install-namespace ns dir` prints.
func generate(t *testing.T, dir, ns string) (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(testutil.Binary(t), "generate", "--admission-policy", "--install-namespace", ns, dir)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "generate --admission-policy: %s", stderr.String())
	docs := strings.Split(stdout.String(), "\n---\n")
	require.Len(t, docs, 2, "generate --admission-policy prints a policy and a binding")
	policy := &admissionv1.ValidatingAdmissionPolicy{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[0]), policy))
	require.Equal(t, "ValidatingAdmissionPolicy", policy.Kind)
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[1]), binding))
	require.Equal(t, "ValidatingAdmissionPolicyBinding", binding.Kind)
	return policy, binding
}

// cond is a status condition of the CR.
type cond struct {
	Type, Status, Reason, Message string
	// ObservedGeneration is the condition's own (0: not set).
	ObservedGeneration int64
}

// crState is what a test writes to the CR.
type crState struct {
	// generation the CR's metadata.generation is brought to (by spec
	// updates; at least 1).
	generation int64
	// override is the override annotation's value ("": none).
	override   string
	conditions []cond
}

func (f *fixture) crs() dynamic.ResourceInterface {
	return srv.Dyn.Resource(f.gvr).Namespace(f.ns)
}

// setCR creates or updates the CR to the state s.
func (f *fixture) setCR(t *testing.T, s crState) {
	t.Helper()
	require.NoError(t, f.writeCR(s))
}

// writeCR creates or updates the CR to the state s.
func (f *fixture) writeCR(s crState) error {
	ctx := context.Background()
	u, err := f.crs().Get(ctx, crName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		u = &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": f.gvr.GroupVersion().String(), "kind": "CoolOperator",
			"metadata": map[string]interface{}{"name": crName, "namespace": f.ns},
			"spec":     map[string]interface{}{"storageLayer": "PostgreSQL"},
		}}
		u, err = f.crs().Create(ctx, u, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("creating the CR: %w", err)
	}
	layers := map[string]string{"PostgreSQL": "MariaDB", "MariaDB": "PostgreSQL"}
	for u.GetGeneration() < s.generation {
		layer, _, _ := unstructured.NestedString(u.Object, "spec", "storageLayer")
		if err := unstructured.SetNestedField(u.Object, layers[layer], "spec", "storageLayer"); err != nil {
			return err
		}
		if u, err = f.crs().Update(ctx, u, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating the CR's spec: %w", err)
		}
	}
	if u.GetGeneration() > s.generation && s.generation > 0 {
		return fmt.Errorf("the CR is at generation %d, past %d", u.GetGeneration(), s.generation)
	}
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	if ann[overrideKey] != s.override {
		if s.override == "" {
			delete(ann, overrideKey)
		} else {
			ann[overrideKey] = s.override
		}
		u.SetAnnotations(ann)
		if u, err = f.crs().Update(ctx, u, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("annotating the CR: %w", err)
		}
	}
	conds := []interface{}{}
	for _, c := range s.conditions {
		m := map[string]interface{}{"type": c.Type, "status": c.Status, "reason": c.Reason, "message": c.Message,
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}
		if c.ObservedGeneration > 0 {
			m["observedGeneration"] = c.ObservedGeneration
		}
		conds = append(conds, m)
	}
	if err := unstructured.SetNestedSlice(u.Object, conds, "status", "conditions"); err != nil {
		return err
	}
	if _, err = f.crs().UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing the CR's status: %w", err)
	}
	return nil
}

// deleteCR deletes the CR.
func (f *fixture) deleteCR(t *testing.T) {
	t.Helper()
	require.NoError(t, f.crs().Delete(context.Background(), crName, metav1.DeleteOptions{}))
}

// held is a CR state the policy denies: Upgradeable=False for the
// current generation.
var held = crState{generation: 1, conditions: []cond{{Type: "Upgradeable", Status: "False", Reason: "Migrating", Message: "moving data to MariaDB", ObservedGeneration: 1}}}

// fresh is a CR state the policy allows.
var fresh = crState{generation: 1, conditions: []cond{{Type: "Upgradeable", Status: "True", Reason: "Idle", Message: "ready", ObservedGeneration: 1}}}

// tag numbers the images the tests set, so that each image update
// changes the image.
var tag atomic.Int64

// newImage sets a new image on the Deployment's first container.
func newImage(d *appsv1.Deployment) {
	d.Spec.Template.Spec.Containers[0].Image = fmt.Sprintf("quay.io/cool-operators-corp/cool-operator:v0.3.%d", tag.Add(1))
}

// update reads the Deployment, changes it and writes it back.
func (f *fixture) update(name string, change func(*appsv1.Deployment)) error {
	ctx := context.Background()
	d, err := f.kube.AppsV1().Deployments(f.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading deployment %s: %w", name, err)
	}
	change(d)
	_, err = f.kube.AppsV1().Deployments(f.ns).Update(ctx, d, metav1.UpdateOptions{})
	return err
}

// outcome is an admission answer: code 0 is allowed, else the HTTP code
// of the denial and a part of its message.
type outcome struct {
	code int32
	msg  string
}

var allowed = outcome{}

// is tells whether err is the outcome (a 422 with reason Invalid).
func (o outcome) is(err error) bool {
	if o.code == 0 {
		return err == nil
	}
	if o.code == http.StatusUnprocessableEntity && !apierrors.IsInvalid(err) {
		return false
	}
	return code(err) == o.code && strings.Contains(err.Error(), o.msg)
}

// code is the HTTP status code of an API error (0: none).
func code(err error) int32 {
	var s apierrors.APIStatus
	if err == nil || !errors.As(err, &s) {
		return 0
	}
	return s.Status().Code
}

// wantUpdate updates the Deployment name with change until the apiserver
// answers want, for up to timeout (its caches lag behind writes), and
// returns how long that took and the last answer.
func (f *fixture) wantUpdate(t *testing.T, name string, change func(*appsv1.Deployment), want outcome, timeout time.Duration) (time.Duration, error) {
	t.Helper()
	begin := time.Now()
	var (
		last    error
		answers []string
	)
	attempts := 0
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		attempts++
		last = f.update(name, change)
		a := fmt.Sprintf("code %d", code(last))
		if last != nil {
			a += ": " + last.Error()
		}
		if len(answers) == 0 || !strings.HasSuffix(answers[len(answers)-1], a) {
			answers = append(answers, fmt.Sprintf("at %v %s", time.Since(begin).Round(time.Millisecond), a))
		}
		return want.is(last), nil
	})
	lag := time.Since(begin)
	if err != nil {
		t.Fatalf("updating Deployment %s/%s: want code %d %q, after %v (%d attempts) the answers were:\n%s", f.ns, name, want.code, want.msg, lag.Round(time.Millisecond), attempts, strings.Join(answers, "\n"))
	}
	if len(answers) > 1 {
		t.Logf("%d attempts, answers:\n%s", attempts, strings.Join(answers, "\n"))
	}
	return lag, last
}

// heldMessage is the policy's denial message for the fixture's CR.
func (f *fixture) heldMessage(detail string) string {
	return fmt.Sprintf("the upgrade of Deployment %s/%s is held: CoolOperator %s/%s: %s", f.ns, deployment, f.ns, crName, detail)
}
