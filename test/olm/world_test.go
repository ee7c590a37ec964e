package olm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/bridge/sidecar"
	"github.com/statuscheck/statuscheck/pkg/simulate"
)

// coolGVR is the status source's resource: the handshake bundles' CRD,
// installed once per cluster under its own group.
var coolGVR = schema.GroupVersionResource{Group: "cool.operators.corp", Version: "v1beta1", Resource: "cooloperators"}

var crdOnce sync.Once

// world is one scenario: a namespace of its own with an OperatorGroup,
// the operator's bundle, and the actors the test plays (the user, the
// operator, an admin) beside the real OLM.
type world struct {
	t      *testing.T
	c      *Cluster
	ns     string
	bundle string
	csv    *operatorsv1alpha1.ClusterServiceVersion
	name   string // the CR's
}

// newWorld sets up a scenario for a bundle under testdata/bundles/handshake.
func newWorld(t *testing.T, handshake string) *world {
	t.Helper()
	return newWorldAt(t, handshakeBundle(handshake))
}

// newWorldAt is newWorld with the bundle at a path of its own (a copy
// generate edited); its CRD is the handshake bundles' CoolOperator.
func newWorldAt(t *testing.T, bundle string) *world {
	t.Helper()
	c := get(t)
	crdOnce.Do(func() {
		crd := testutil.ReadCRD(t, filepath.Join("testdata", "bundles", "handshake", "none", "manifests", "cool.operators.corp_cooloperators.yaml"))
		if err := c.installCRD(crd); err != nil {
			t.Fatal(err)
		}
	})
	return &world{t: t, c: c, ns: c.namespace(t, "olm"), bundle: bundle, csv: readCSV(t, bundle), name: "cool-operator"}
}

// handshakeBundle is the path of a bundle under testdata/bundles/handshake.
func handshakeBundle(handshake string) string {
	return filepath.Join(testutil.RepoRoot(), "testdata", "bundles", "handshake", handshake)
}

// copyBundle copies a handshake bundle into a directory of the test's,
// for a test that edits it.
func copyBundle(t *testing.T, handshake string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(handshakeBundle(handshake))); err != nil {
		t.Fatal(err)
	}
	return dir
}

// readCSV reads the CSV of a handshake bundle (or a copy of one).
func readCSV(t *testing.T, bundle string) *operatorsv1alpha1.ClusterServiceVersion {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(bundle, "manifests", "cool-operator.clusterserviceversion.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	if err := yaml.Unmarshal(data, csv); err != nil {
		t.Fatal(err)
	}
	return csv
}

func (w *world) cr() dynamic.ResourceInterface { return w.c.Dyn.Resource(coolGVR).Namespace(w.ns) }

// installCSV does what an InstallPlan's steps do before OLM takes a CSV
// over: the service account, a Role and RoleBinding granting the CSV's
// permissions (OLM keeps a CSV Pending/RequirementsNotMet until its
// service account holds them), then the CSV, named NAME, version VERSION,
// replacing REPLACES ("" for none), its deployment's image tagged with
// the version so that the upgrade changes it.
func (w *world) installCSV(name, version, replaces string) {
	w.t.Helper()
	ctx := context.Background()
	spec := w.csv.Spec.InstallStrategy.StrategySpec
	for _, p := range spec.Permissions {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: p.ServiceAccountName, Namespace: w.ns}}
		if _, err := w.c.Kube.CoreV1().ServiceAccounts(w.ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			w.t.Fatal(err)
		}
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + p.ServiceAccountName, Namespace: w.ns}, Rules: p.Rules}
		if _, err := w.c.Kube.RbacV1().Roles(w.ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			w.t.Fatal(err)
		}
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name, Namespace: w.ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: p.ServiceAccountName, Namespace: w.ns}}}
		if _, err := w.c.Kube.RbacV1().RoleBindings(w.ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			w.t.Fatal(err)
		}
	}
	csv := w.csv.DeepCopy()
	csv.Name, csv.Namespace = name, w.ns
	csv.Spec.Replaces = replaces
	if err := csv.Spec.Version.UnmarshalJSON([]byte(`"` + version + `"`)); err != nil {
		w.t.Fatal(err)
	}
	for i := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		d := &csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[i]
		for j := range d.Spec.Template.Spec.Containers {
			if d.Spec.Template.Spec.Containers[j].Name == sidecar.ContainerName {
				continue // the bridge's image is statuscheck's, not the operator's version
			}
			img := d.Spec.Template.Spec.Containers[j].Image
			if k := strings.LastIndex(img, ":"); k > 0 {
				d.Spec.Template.Spec.Containers[j].Image = img[:k+1] + "v" + version
			}
		}
	}
	if _, err := w.c.OLM.OperatorsV1alpha1().ClusterServiceVersions(w.ns).Create(ctx, csv, metav1.CreateOptions{}); err != nil {
		w.t.Fatal(err)
	}
}

// failForward sets the namespace's OperatorGroup's upgradeStrategy to
// TechPreviewUnsafeFailForward.
func (w *world) failForward() {
	w.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		og, err := w.c.OLM.OperatorsV1().OperatorGroups(w.ns).Get(context.Background(), "og", metav1.GetOptions{})
		if err != nil {
			return err
		}
		og.Spec.UpgradeStrategy = operatorsv1.UpgradeStrategyUnsafeFailForward
		_, err = w.c.OLM.OperatorsV1().OperatorGroups(w.ns).Update(context.Background(), og, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		w.t.Fatal(err)
	}
}

// changeRBAC is an RBAC change in the namespace (a new Role, labelled
// olm.managed=true as an InstallPlan's are: OLM's informers list only
// those, NewOperator's k8sInformerFactory), which OLM answers by retrying
// the CSVs that failed without retry (olm_operator.go, syncObject,
// IsObjectRBACRelated).
func (w *world) changeRBAC() {
	w.t.Helper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{GenerateName: "admin-", Namespace: w.ns, Labels: map[string]string{"olm.managed": "true"}},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}}
	if _, err := w.c.Kube.RbacV1().Roles(w.ns).Create(context.Background(), role, metav1.CreateOptions{}); err != nil {
		w.t.Fatal(err)
	}
}

// csvPhase reads a CSV's phase and reason ("" when it does not exist).
func (w *world) csvPhase(name string) (phase, reason string) {
	csv, err := w.c.OLM.OperatorsV1alpha1().ClusterServiceVersions(w.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return "", err.Error()
	}
	return string(csv.Status.Phase), string(csv.Status.Reason)
}

// waitCSV waits until a CSV is in phase (and reason, when given).
func (w *world) waitCSV(name string, phase operatorsv1alpha1.ClusterServiceVersionPhase, reason operatorsv1alpha1.ConditionReason) {
	w.t.Helper()
	w.waitUntil(fmt.Sprintf("CSV %s %s/%s", name, phase, reason), 90*time.Second, func() bool {
		p, r := w.csvPhase(name)
		return p == string(phase) && (reason == "" || r == string(reason))
	})
}

func (w *world) waitUntil(what string, timeout time.Duration, cond func() bool) {
	w.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		w.t.Fatalf("timed out waiting for %s (%v); CSVs: %s", what, err, w.describeCSVs())
	}
}

func (w *world) describeCSVs() string {
	list, err := w.c.OLM.OperatorsV1alpha1().ClusterServiceVersions(w.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var parts []string
	for _, c := range list.Items {
		parts = append(parts, fmt.Sprintf("%s %s/%s (%s)", c.Name, c.Status.Phase, c.Status.Reason, c.Status.Message))
	}
	return strings.Join(parts, "; ")
}

// createCR is the user's create of the CR.
func (w *world) createCR(spec map[string]interface{}) *unstructured.Unstructured {
	w.t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": coolGVR.GroupVersion().String(), "kind": "CoolOperator",
		"metadata": map[string]interface{}{"name": w.name, "namespace": w.ns}, "spec": spec}}
	out, err := w.cr().Create(context.Background(), obj, metav1.CreateOptions{FieldManager: "kubectl-create"})
	if err != nil {
		w.t.Fatal(err)
	}
	return out
}

// userSets is a user's spec write (kubectl edit): spec.storageLayer.
func (w *world) userSets(storage string) int64 {
	w.t.Helper()
	return w.updateCR("kubectl-edit", func(obj *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(obj.Object, storage, "spec", "storageLayer")
	})
}

// updateCR is a write of the CR by manager (edit changes what it read),
// retried on conflict; it returns the CR's generation after it.
func (w *world) updateCR(manager string, edit func(*unstructured.Unstructured)) int64 {
	w.t.Helper()
	var gen int64
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := w.cr().Get(context.Background(), w.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		edit(obj)
		obj, err = w.cr().Update(context.Background(), obj, metav1.UpdateOptions{FieldManager: manager})
		if err == nil {
			gen = obj.GetGeneration()
		}
		return err
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return gen
}

// generation is the CR's metadata.generation now.
func (w *world) generation() int64 {
	w.t.Helper()
	obj, err := w.cr().Get(context.Background(), w.name, metav1.GetOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	return obj.GetGeneration()
}

// reports is the operator's /status write of Upgradeable, for generation
// og, as meta.SetStatusCondition writes it.
func (w *world) reports(status metav1.ConditionStatus, reason string, og int64) {
	w.t.Helper()
	w.reportsWith(status, reason, og, nil)
}

// reportsWith is reports with more fields of .status beside the
// conditions (an echo of a request token).
func (w *world) reportsWith(status metav1.ConditionStatus, reason string, og int64, more map[string]interface{}) {
	w.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := w.cr().Get(context.Background(), w.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var conds []metav1.Condition
		if list, ok, _ := unstructured.NestedSlice(obj.Object, "status", "conditions"); ok {
			data, _ := json.Marshal(list)
			_ = json.Unmarshal(data, &conds)
		}
		meta.SetStatusCondition(&conds, metav1.Condition{Type: "Upgradeable", Status: status, Reason: reason, Message: reason, ObservedGeneration: og})
		data, _ := json.Marshal(conds)
		var list []interface{}
		_ = json.Unmarshal(data, &list)
		st := map[string]interface{}{"conditions": list}
		for k, v := range more {
			st[k] = v
		}
		obj.Object["status"] = st
		_, err = w.cr().UpdateStatus(context.Background(), obj, metav1.UpdateOptions{FieldManager: "cool-operator"})
		return err
	})
	if err != nil {
		w.t.Fatal(err)
	}
}

// mirrors is the operator's write of Upgradeable into its
// OperatorCondition's spec.conditions (the OperatorCondition handshake).
// OLM's own status writes race with it: it retries on conflict.
func (w *world) mirrors(csv string, status metav1.ConditionStatus, reason string) {
	w.t.Helper()
	w.writeOC(csv, "cool-operator", func(oc *operatorsv2.OperatorCondition) {
		meta.SetStatusCondition(&oc.Spec.Conditions, metav1.Condition{Type: "Upgradeable", Status: status, Reason: reason, Message: reason})
	})
}

// overrides is an admin's spec.overrides entry on the OperatorCondition.
func (w *world) overrides(csv string, status metav1.ConditionStatus) {
	w.t.Helper()
	w.writeOC(csv, "kubectl-edit", func(oc *operatorsv2.OperatorCondition) {
		meta.SetStatusCondition(&oc.Spec.Overrides, metav1.Condition{Type: "Upgradeable", Status: status, Reason: "AdminOverride", Message: "set by an admin"})
	})
}

func (w *world) writeOC(csv, manager string, edit func(*operatorsv2.OperatorCondition)) {
	w.t.Helper()
	w.waitUntil("the OperatorCondition "+csv, 60*time.Second, func() bool {
		_, err := w.c.OLM.OperatorsV2().OperatorConditions(w.ns).Get(context.Background(), csv, metav1.GetOptions{})
		return err == nil
	})
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := w.c.OLM.OperatorsV2().OperatorConditions(w.ns).Get(context.Background(), csv, metav1.GetOptions{})
		if err != nil {
			return err
		}
		edit(cur)
		_, err = w.c.OLM.OperatorsV2().OperatorConditions(w.ns).Update(context.Background(), cur, metav1.UpdateOptions{FieldManager: manager})
		return err
	})
	if err != nil {
		w.t.Fatal(err)
	}
}

// oc reads a CSV's OperatorCondition, waiting until OLM's generator has
// made it.
func (w *world) oc(csv string) *operatorsv2.OperatorCondition {
	w.t.Helper()
	var oc *operatorsv2.OperatorCondition
	w.waitUntil("the OperatorCondition "+csv, 60*time.Second, func() bool {
		var err error
		oc, err = w.c.OLM.OperatorsV2().OperatorConditions(w.ns).Get(context.Background(), csv, metav1.GetOptions{})
		return err == nil
	})
	return oc
}

// waitOCStatus waits until OLM has copied Upgradeable=status into the
// OperatorCondition's status for its generation (syncOperatorConditionStatus).
func (w *world) waitOCStatus(csv string, status metav1.ConditionStatus) {
	w.t.Helper()
	w.waitUntil("OLM's copy of Upgradeable="+string(status)+" into "+csv, 60*time.Second, func() bool {
		oc, err := w.c.OLM.OperatorsV2().OperatorConditions(w.ns).Get(context.Background(), csv, metav1.GetOptions{})
		if err != nil {
			return false
		}
		c := meta.FindStatusCondition(oc.Status.Conditions, "Upgradeable")
		return c != nil && c.Status == status && c.ObservedGeneration == oc.Generation
	})
}

// record starts statuscheck record on the world's namespace, reading the
// status source from the bundle.
func (w *world) record() *testutil.Recorder {
	w.t.Helper()
	return w.recordWith("--bundle", w.bundle)
}

// recordWith starts statuscheck record on the world's namespace with
// ARGS naming the status source.
func (w *world) recordWith(args ...string) *testutil.Recorder {
	w.t.Helper()
	return testutil.StartRecorder(w.t, append([]string{"--kubeconfig", w.c.Kubeconfig, "-n", w.ns}, args...)...)
}

// simulated is what `statuscheck simulate -o json --policy all --bundle`
// says of a recording.
type simulated struct {
	summary simulate.Summary
	code    int
	out     string
}

func (w *world) simulate(trace string) simulated {
	w.t.Helper()
	return w.simulateWith(trace, "--bundle", w.bundle)
}

// simulateWith replays a recording with ARGS naming the status source.
func (w *world) simulateWith(trace string, args ...string) simulated {
	w.t.Helper()
	cmd := exec.Command(testutil.Binary(w.t), append(append([]string{"simulate", "-o", "json", "--policy", "all"}, args...), trace)...)
	out, err := cmd.Output()
	var s simulated
	s.out = string(out)
	if ee, ok := err.(*exec.ExitError); ok {
		s.code = ee.ExitCode()
		if s.code == 2 {
			w.t.Fatalf("statuscheck simulate could not replay the recording: %s", ee.Stderr)
		}
	} else if err != nil {
		w.t.Fatal(err)
	}
	if err := json.Unmarshal(out, &s.summary); err != nil {
		w.t.Fatalf("statuscheck simulate -o json: %v\n%s", err, out)
	}
	return s
}

// violations lists RULE[POLICY]@STEP for each violation.
func (s simulated) violations() []string {
	var out []string
	for _, v := range s.summary.Violations {
		tag := v.Rule
		if v.Policy != "" {
			tag += "[" + string(v.Policy) + "]"
		}
		out = append(out, tag)
	}
	return out
}

func (s simulated) has(rule string) bool { return len(s.of(rule)) > 0 }

// of lists the violations of one rule, in order.
func (s simulated) of(rule string) []simulate.Violation {
	var out []simulate.Violation
	for _, v := range s.summary.Violations {
		if v.Rule == rule {
			out = append(out, v)
		}
	}
	return out
}

// policiesOf lists the policies of a rule's violations.
func (s simulated) policiesOf(rule string) []string {
	var out []string
	for _, v := range s.of(rule) {
		out = append(out, string(v.Policy))
	}
	return out
}
