// Package guard builds what holds an operator's upgrade where no OLM
// reads its status source: a ValidatingAdmissionPolicy with its binding
// (the admission guard) and a pre-upgrade hook Job that runs `statuscheck
// gate` (the pre-upgrade check), as typed Kubernetes objects. It is pure:
// the caller resolves the bundle (package source) and writes the YAML.
//
// The decision both make is the contract's strict gate
// (contract.Gate with contract.PolicyStrict): every condition type of the
// status source True, with an observedGeneration (the condition's own,
// else status.observedGeneration) equal to metadata.generation; an
// admin's override annotation on the CR (contract.OverrideAnnotation)
// decides before the conditions. The policy says it in CEL
// (FreshTrueExpression); the hook runs the gate itself.
package guard

import (
	"errors"
	"fmt"
	"strings"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/contract"
)

// Target is what a guard protects: the status source (with its CRD's
// plural and scope) and the operator's Deployment.
type Target struct {
	// Source is the status source; for a namespaced kind its Namespace
	// is where the CR lives (Resolve sets it).
	Source *v1alpha1.StatusSource
	// Plural is the CRD's resource name.
	Plural string
	// Namespaced is the CRD's scope.
	Namespaced bool
	// Namespace is the operator's install namespace: where its
	// Deployment runs (and the hook Job).
	Namespace string
	// Deployment is the operator's Deployment's name.
	Deployment string
	// Name prefixes the generated objects' names (the CSV's name).
	Name string
}

// Resolve checks the inputs against the bundle's CSV and returns the
// target: the Deployment must be one of the CSV's install strategy (empty:
// its only one), the kind must be one the CSV owns, a cluster-scoped kind
// cannot have a namespace. file names the CSV for messages.
func Resolve(csv *operatorsv1alpha1.ClusterServiceVersion, file string, src *v1alpha1.StatusSource, plural string, namespaced bool, namespace, deployment string) (*Target, error) {
	gv := src.GroupVersion()
	owned := false
	for _, o := range csv.Spec.CustomResourceDefinitions.Owned {
		if _, group, _ := strings.Cut(o.Name, "."); group == gv.Group && o.Kind == src.Kind {
			owned = true
		}
	}
	var errs []error
	if !owned {
		errs = append(errs, fmt.Errorf("%s: the CSV %s does not own %s in group %s (spec.customresourcedefinitions.owned): the guard reads the operator's own CR", file, csv.Name, src.Kind, gv.Group))
	}
	if !namespaced && src.Namespace != "" {
		errs = append(errs, fmt.Errorf("%s: %s is cluster-scoped, but the status source names namespace %s", file, src.Kind, src.Namespace))
	}
	if namespace == "" {
		errs = append(errs, fmt.Errorf("%s: the operator's namespace is not known: pass --install-namespace NS", file))
	} else if msgs := validation.IsDNS1123Label(namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--install-namespace %q: %s", namespace, strings.Join(msgs, "; ")))
	}
	var names []string
	for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		names = append(names, d.Name)
	}
	switch {
	case len(names) == 0:
		errs = append(errs, fmt.Errorf("%s: the CSV %s has no deployment in its install strategy", file, csv.Name))
	case deployment == "" && len(names) > 1:
		errs = append(errs, fmt.Errorf("%s: the CSV %s has %d deployments (%s): pass --deployment NAME", file, csv.Name, len(names), strings.Join(names, ", ")))
	case deployment == "":
		deployment = names[0]
	default:
		found := false
		for _, n := range names {
			found = found || n == deployment
		}
		if !found {
			errs = append(errs, fmt.Errorf("%s: the CSV %s has no deployment %q in its install strategy (it has %s)", file, csv.Name, deployment, strings.Join(names, ", ")))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	s := *src
	if namespaced && s.Namespace == "" {
		s.Namespace = namespace
	}
	return &Target{Source: &s, Plural: plural, Namespaced: namespaced, Namespace: namespace, Deployment: deployment, Name: csv.Name}, nil
}

// Ref is the status source as `statuscheck gate --source` takes it.
func (t *Target) Ref() string {
	gv := t.Source.GroupVersion()
	parts := []string{gv.Group, gv.Version, t.Source.Kind}
	if t.Namespaced {
		parts = append(parts, t.Source.Namespace)
	}
	return strings.Join(append(parts, t.Source.Name), "/")
}

// objectName is prefix-suffix cut to a DNS subdomain's 253 (a label's 63
// for what becomes a label value or a Job's pod name).
func objectName(prefix, suffix string, max int) string {
	n := prefix + "-" + suffix
	if len(n) > max {
		n = strings.TrimRight(prefix[:max-len(suffix)-1], "-.") + "-" + suffix
	}
	return n
}

// celString quotes s as a CEL string literal.
func celString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// ImageChangedExpression is the policy's match condition: the UPDATE
// changes the image of a container or an init container (their lists,
// in order).
const ImageChangedExpression = `object.spec.template.spec.containers.map(c, c.image) != oldObject.spec.template.spec.containers.map(c, c.image) || ` +
	`(has(object.spec.template.spec.initContainers) ? object.spec.template.spec.initContainers.map(c, c.image) : []) != ` +
	`(has(oldObject.spec.template.spec.initContainers) ? oldObject.spec.template.spec.initContainers.map(c, c.image) : [])`

// overrideVariable reads the override annotation of the CR, as
// contract.AnnotationOverrides: a list of its value, empty when unset.
func overrideVariable() string {
	key := celString(contract.OverrideAnnotation)
	return fmt.Sprintf("has(params.metadata.annotations) && %s in params.metadata.annotations ? [params.metadata.annotations[%s]] : []", key, key)
}

// firstOf is the conditions of type t in order (contract.Find reads the
// first).
func firstOf(t string) string {
	return fmt.Sprintf("has(params.status) && type(params.status) == map && has(params.status.conditions) && type(params.status.conditions) == list ? "+
		"params.status.conditions.filter(c, type(c) == map && has(c.type) && c.type == %s) : []", celString(t))
}

// FreshTrueExpression is contract.Gate under contract.PolicyStrict for
// one condition whose list (of that type, in order) is the variable v:
// the first is True and its observedGeneration (its own, else
// status.observedGeneration) equals metadata.generation.
func FreshTrueExpression(v string) string {
	c := v + "[0]"
	return fmt.Sprintf("size(%[1]s) > 0 && has(%[2]s.status) && %[2]s.status == 'True' && "+
		"(has(%[2]s.observedGeneration) ? %[2]s.observedGeneration : (has(params.status.observedGeneration) ? params.status.observedGeneration : -1)) == params.metadata.generation", v, c)
}

func describeExpression(v, t string) string {
	c := v + "[0]"
	return fmt.Sprintf("(size(%[1]s) == 0 ? 'no ' + %[3]s + ' condition' : "+
		"(%[3]s + '=' + (has(%[2]s.status) ? string(%[2]s.status) : '') + ' (observedGeneration ' + "+
		"(has(%[2]s.observedGeneration) ? string(%[2]s.observedGeneration) : (has(params.status.observedGeneration) ? string(params.status.observedGeneration) : 'absent')) + "+
		"', generation ' + string(params.metadata.generation) + ')' + "+
		"(has(%[2]s.reason) ? ' reason ' + string(%[2]s.reason) : '') + (has(%[2]s.message) ? ': ' + string(%[2]s.message) : '')))", v, c, celString(t))
}

// AdmissionPolicy is the admission guard: a ValidatingAdmissionPolicy
// whose paramKind is the status source's kind, matching only UPDATEs of
// the operator's Deployment in its namespace that change an image, and
// denying them unless the CR's conditions are a fresh True or the
// override annotation says True; and its binding, whose paramRef names
// the CR. whenAbsent maps to the binding's parameterNotFoundAction and
// the policy's failurePolicy: Block denies while the CR (or its CRD) is
// missing, Allow lets the update through then.
func AdmissionPolicy(t *Target) (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding) {
	src := t.Source
	name := objectName(t.Name, "upgrade-guard", 253)
	// failurePolicy Fail always: under Ignore any error (a CR whose
	// content a CEL expression cannot read, a paramKind admission does
	// not know yet) would let the update through. A missing CR is no
	// error under parameterNotFoundAction Allow (the binding is skipped).
	failure, notFound := admissionv1.Fail, admissionv1.AllowAction
	if src.Absent() == v1alpha1.WhenAbsentBlock {
		notFound = admissionv1.DenyAction
	}
	vars := []admissionv1.Variable{{Name: "override", Expression: overrideVariable()}}
	var validations []admissionv1.Validation
	for i, ct := range src.ConditionTypes() {
		v := fmt.Sprintf("condition%d", i)
		vars = append(vars, admissionv1.Variable{Name: v, Expression: firstOf(ct)})
		ref := "variables." + v
		validations = append(validations, admissionv1.Validation{
			Expression: fmt.Sprintf("size(variables.override) > 0 ? variables.override[0] == 'True' : (%s)", FreshTrueExpression(ref)),
			Message:    fmt.Sprintf("the upgrade of Deployment %s/%s is held: %s %s does not report a fresh %s=True", t.Namespace, t.Deployment, src.Kind, crName(t), ct),
			MessageExpression: fmt.Sprintf("'the upgrade of Deployment %s/%s is held: ' + (size(variables.override) > 0 ? 'override %s=' + variables.override[0] : '%s %s: ' + %s)",
				t.Namespace, t.Deployment, contract.OverrideAnnotation, src.Kind, crName(t), describeExpression(ref, ct)),
			Reason: ptr.To(metav1.StatusReasonInvalid),
		})
	}
	labels := map[string]string{"app.kubernetes.io/managed-by": "statuscheck", "app.kubernetes.io/part-of": labelValue(t.Name)}
	gv := src.GroupVersion()
	policy := &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &failure,
			ParamKind:     &admissionv1.ParamKind{APIVersion: gv.String(), Kind: src.Kind},
			MatchConstraints: &admissionv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: t.Namespace}},
				ObjectSelector:    &metav1.LabelSelector{},
				ResourceRules: []admissionv1.NamedRuleWithOperations{{
					ResourceNames: []string{t.Deployment},
					RuleWithOperations: admissionv1.RuleWithOperations{
						Operations: []admissionv1.OperationType{admissionv1.Update},
						Rule:       admissionv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}, Scope: ptr.To(admissionv1.NamespacedScope)},
					},
				}},
				MatchPolicy: ptr.To(admissionv1.Equivalent),
			},
			MatchConditions: []admissionv1.MatchCondition{{Name: "image-changed", Expression: ImageChangedExpression}},
			Variables:       vars,
			Validations:     validations,
		},
	}
	ref := &admissionv1.ParamRef{Name: src.Name, ParameterNotFoundAction: &notFound}
	if t.Namespaced {
		ref.Namespace = src.Namespace
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ParamRef:          ref,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: t.Namespace}},
			},
		},
	}
	return policy, binding
}

func crName(t *Target) string {
	if t.Namespaced {
		return t.Source.Namespace + "/" + t.Source.Name
	}
	return t.Source.Name
}

// labelValue cuts s to a label value's 63 characters.
func labelValue(s string) string {
	if len(s) > validation.LabelValueMaxLength {
		s = strings.TrimRight(s[:validation.LabelValueMaxLength], "-._")
	}
	return s
}

// Hook asks for the pre-upgrade hook.
type Hook struct {
	// Image runs statuscheck (its entrypoint is the statuscheck binary).
	Image string
	// Timeout is how long the gate waits for a fresh True (0: it reads
	// once).
	Timeout time.Duration
}

// Hook annotations: Helm's, and Argo CD's (which reads Helm's too, but
// its own win where both are set).
const (
	helmHook           = "helm.sh/hook"
	helmHookWeight     = "helm.sh/hook-weight"
	helmHookDelete     = "helm.sh/hook-delete-policy"
	argoHook           = "argocd.argoproj.io/hook"
	argoSyncWave       = "argocd.argoproj.io/sync-wave"
	argoHookDelete     = "argocd.argoproj.io/hook-delete-policy"
	hookDeletePolicy   = "before-hook-creation,hook-succeeded"
	argoDeletePolicy   = "BeforeHookCreation,HookSucceeded"
	hookRBACWeight     = "-5"
	hookJobWeight      = "0"
	helmPreUpgradeHook = "pre-upgrade"
)

// hookMeta annotates a hook object. Helm deletes hook-succeeded hooks
// once all have run; Argo CD may delete one as soon as it is healthy, so
// the RBAC the Job needs is left to BeforeHookCreation there.
func hookMeta(name, namespace, weight string, labels map[string]string) metav1.ObjectMeta {
	argoDelete := argoDeletePolicy
	if weight == hookRBACWeight {
		argoDelete = "BeforeHookCreation"
	}
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels, Annotations: map[string]string{
		helmHook: helmPreUpgradeHook, helmHookWeight: weight, helmHookDelete: hookDeletePolicy,
		argoHook: "PreSync", argoSyncWave: weight, argoHookDelete: argoDelete,
	}}
}

// UpgradeHook is the pre-upgrade check: a ServiceAccount, a Role (a
// ClusterRole for a cluster-scoped kind) granting only get on the one
// CR, its binding, and a Job running `statuscheck gate` with in-cluster
// credentials, all annotated as Helm pre-upgrade and Argo CD PreSync
// hooks (the RBAC first). The Job fails, and with it the upgrade, unless
// the gate allows. The gate is told the operator's Deployment
// (--operator-deployment) and may get it, so that Argo CD's first sync,
// which runs PreSync hooks before the CRD exists, is told apart from an
// upgrade: that get is granted in the install namespace, in the CR's Role
// when the CR lives there, else in a Role of its own.
func UpgradeHook(t *Target, h Hook) []runtime.Object {
	src := t.Source
	name := objectName(t.Name, "upgrade-gate", validation.DNS1123LabelMaxLength)
	labels := map[string]string{"app.kubernetes.io/managed-by": "statuscheck", "app.kubernetes.io/part-of": labelValue(t.Name), "app.kubernetes.io/component": "upgrade-gate"}
	gv := src.GroupVersion()
	rules := []rbacv1.PolicyRule{{APIGroups: []string{gv.Group}, Resources: []string{t.Plural}, ResourceNames: []string{src.Name}, Verbs: []string{"get"}}}
	sa := &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: hookMeta(name, t.Namespace, hookRBACWeight, labels),
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: t.Namespace}}
	deploymentRule := rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, ResourceNames: []string{t.Deployment}, Verbs: []string{"get"}}
	var extra []runtime.Object
	if t.Namespaced && src.Namespace == t.Namespace {
		rules = append(rules, deploymentRule)
	} else {
		dname := objectName(t.Name, "upgrade-gate-deployment", validation.DNS1123SubdomainMaxLength)
		extra = []runtime.Object{
			&rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
				ObjectMeta: hookMeta(dname, t.Namespace, hookRBACWeight, labels), Rules: []rbacv1.PolicyRule{deploymentRule}},
			&rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
				ObjectMeta: hookMeta(dname, t.Namespace, hookRBACWeight, labels), Subjects: subject,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: dname}},
		}
	}
	var role, binding runtime.Object
	if t.Namespaced {
		role = &rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
			ObjectMeta: hookMeta(name, src.Namespace, hookRBACWeight, labels), Rules: rules}
		binding = &rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
			ObjectMeta: hookMeta(name, src.Namespace, hookRBACWeight, labels), Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}}
	} else {
		role = &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
			ObjectMeta: hookMeta(name, "", hookRBACWeight, labels), Rules: rules}
		binding = &rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
			ObjectMeta: hookMeta(name, "", hookRBACWeight, labels), Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}}
	}
	args := []string{"gate", "--source", t.Ref(), "--operator-deployment", t.Namespace + "/" + t.Deployment}
	if h.Timeout > 0 {
		args = append(args, "--timeout", h.Timeout.String())
	}
	deadline := int64(h.Timeout/time.Second) + 120
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "Job"},
		ObjectMeta: hookMeta(name, t.Namespace, hookJobWeight, labels),
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To[int32](0),
			ActiveDeadlineSeconds: &deadline,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName:           name,
					AutomountServiceAccountToken: ptr.To(true),
					RestartPolicy:                corev1.RestartPolicyNever,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:  "gate",
						Image: h.Image,
						Args:  args,
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					}},
				},
			},
		},
	}
	return append(append([]runtime.Object{sa, role, binding}, extra...), job)
}

// YAML renders objects as a multi-document YAML stream.
func YAML(objs ...runtime.Object) ([]byte, error) {
	var b strings.Builder
	for i, o := range objs {
		data, err := yaml.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("rendering %T: %w", o, err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(data)
	}
	return []byte(b.String()), nil
}
