// Package sidecar is the bridge as a bundle declares it: the annotation
// that says which container of which deployment runs `statuscheck bridge`,
// the container generate adds, and the RBAC rules the bridge needs beside
// what OLM grants it. generate writes these and validate checks them, from
// this one place; the runner (package bridge) is what the container runs.
package sidecar

import (
	"fmt"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/contract"
)

const (
	// AnnotationKey declares the bridge on the CSV: its value is
	// DEPLOYMENT/CONTAINER, the container of the install strategy's
	// deployment that runs `statuscheck bridge`.
	AnnotationKey = "statuscheck.operatorframework.io/bridge"
	// ContainerName is the container generate adds.
	ContainerName = "statuscheck-bridge"
	// EnvPodNamespace is the variable the container gets from the downward
	// API (metadata.namespace); the bridge reads its namespace there.
	EnvPodNamespace = "POD_NAMESPACE"
	// MetricsPort and ProbePort are where `statuscheck bridge` serves
	// /metrics and /healthz, /readyz by default.
	MetricsPort = 8383
	ProbePort   = 8384
)

// Declaration is the parsed annotation.
type Declaration struct {
	Deployment, Container string
}

// String is the annotation's value.
func (d Declaration) String() string { return d.Deployment + "/" + d.Container }

// Parse reads the annotation's value: a deployment name (a DNS subdomain)
// and a container name (a DNS label), as the apiserver validates them.
func Parse(value string) (Declaration, error) {
	dep, ctr, ok := strings.Cut(value, "/")
	if !ok {
		return Declaration{}, fmt.Errorf("%q is not DEPLOYMENT/CONTAINER", value)
	}
	if errs := validation.IsDNS1123Subdomain(dep); len(errs) > 0 {
		return Declaration{}, fmt.Errorf("deployment name %q: %s", dep, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Label(ctr); len(errs) > 0 {
		return Declaration{}, fmt.Errorf("container name %q: %s", ctr, strings.Join(errs, "; "))
	}
	return Declaration{Deployment: dep, Container: ctr}, nil
}

// Declared returns the CSV's declaration, if it has one; the error is a
// value that does not parse.
func Declared(csv *operatorsv1alpha1.ClusterServiceVersion) (*Declaration, error) {
	v, ok := csv.Annotations[AnnotationKey]
	if !ok {
		return nil, nil
	}
	d, err := Parse(v)
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// Container is the sidecar: `statuscheck bridge` from image, its namespace
// from the downward API (OLM injects OPERATOR_CONDITION_NAME into every
// container of the CSV's deployments itself: operator-lifecycle-manager
// pkg/controller/install/deployment.go), a liveness probe on its health
// port, and a restricted security context. Its peak RSS measured on real
// OLM is 51-60 MiB, hence the memory figures.
func Container(image string, metricsPort, probePort int) corev1.Container {
	c := corev1.Container{
		Name:  ContainerName,
		Image: image,
		Args:  []string{"bridge"},
		Env: []corev1.EnvVar{{Name: EnvPodNamespace, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
		},
		LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(int32(probePort))}}},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			ReadOnlyRootFilesystem:   ptr.To(true),
			RunAsNonRoot:             ptr.To(true),
		},
	}
	if metricsPort != MetricsPort {
		c.Args = append(c.Args, fmt.Sprintf("--metrics-bind-address=:%d", metricsPort))
	}
	if probePort != ProbePort {
		c.Args = append(c.Args, fmt.Sprintf("--health-probe-bind-address=:%d", probePort))
	}
	return c
}

// Ports picks the metrics and probe ports: the defaults unless a container
// of the pod declares them (containers of a pod share its network), then
// the next free ones.
func Ports(pod corev1.PodSpec) (metrics, probe int) {
	used := map[int]bool{}
	for _, c := range pod.Containers {
		if c.Name == ContainerName {
			continue
		}
		for _, p := range c.Ports {
			used[int(p.ContainerPort)] = true
		}
	}
	free := func(from int) int {
		for used[from] {
			from++
		}
		used[from] = true
		return from
	}
	return free(MetricsPort), free(ProbePort)
}

// Rule is one permission the bridge needs: verbs on a resource, and the
// object it reads (for rules that name their objects).
type Rule struct {
	rbacv1.PolicyRule
	// Object is the one object the bridge asks for by name with every verb,
	// which a rule's resourceNames may list; "" when it lists or watches
	// the whole resource, which resourceNames cannot grant.
	Object string
	// Cluster says only clusterPermissions can grant it.
	Cluster bool
	// Why says what the bridge does with it.
	Why string
}

// Needs lists what the bridge's service account must be granted by the
// CSV, beside the OperatorCondition, which OLM's own Role grants (get,
// update, patch on that one object: operator-lifecycle-manager
// pkg/controller/operators/operatorcondition_controller.go, ensureOperatorConditionRole).
// csvName is the CSV (what the bridge reads the annotation from), plural
// and namespaced describe the status source's kind.
func Needs(src *v1alpha1.StatusSource, csvName, plural string, namespaced bool) []Rule {
	gv := src.GroupVersion()
	ack := src.Mode() == v1alpha1.HandshakeRequestAck
	csvVerbs, csvObject, csvWhy := []string{"get"}, csvName, "reads the status-source annotation of the running CSV"
	if ack {
		csvVerbs, csvObject, csvWhy = []string{"get", "list", "watch"}, "", "reads the running CSV's annotation and watches for the CSV that replaces it (RequestAck)"
	}
	crVerbs, crWhy := []string{"get", "watch"}, "reads and watches the status source"
	if ack {
		crVerbs, crWhy = []string{"get", "watch", "patch"}, "reads and watches the status source and writes the upgrade request to it (RequestAck)"
	}
	return []Rule{
		{PolicyRule: rbacv1.PolicyRule{APIGroups: []string{contract.CSVResource.Group}, Resources: []string{contract.CSVResource.Resource}, Verbs: csvVerbs}, Object: csvObject, Why: csvWhy},
		// Permissions are Roles in the operator's namespace: a
		// cluster-scoped kind, or a namespace pinned by the status source,
		// needs clusterPermissions.
		{PolicyRule: rbacv1.PolicyRule{APIGroups: []string{gv.Group}, Resources: []string{plural}, Verbs: crVerbs}, Object: src.Name,
			Cluster: !namespaced || src.Namespace != "", Why: crWhy},
	}
}

// Missing returns what of needs the install strategy does not grant the
// service account sa: each rule with only the verbs it lacks.
func Missing(install operatorsv1alpha1.StrategyDetailsDeployment, sa string, needs []Rule) []Rule {
	var out []Rule
	for _, n := range needs {
		var verbs []string
		for _, v := range n.Verbs {
			req := bundle.Request{Verb: v, Group: n.APIGroups[0], Resource: n.Resources[0], Name: n.Object}
			if !bundle.Grants(install, sa, req, n.Cluster) {
				verbs = append(verbs, v)
			}
		}
		if len(verbs) > 0 {
			m := n
			m.PolicyRule = *n.PolicyRule.DeepCopy()
			m.Verbs = verbs
			out = append(out, m)
		}
	}
	return out
}

// Find locates the declared container: the index of its deployment in
// the install strategy and of the container in its pod template, -1 for
// what is not there.
func Find(install operatorsv1alpha1.StrategyDetailsDeployment, d Declaration) (deployment, container int) {
	for i, dep := range install.DeploymentSpecs {
		if dep.Name != d.Deployment {
			continue
		}
		for j, c := range dep.Spec.Template.Spec.Containers {
			if c.Name == d.Container {
				return i, j
			}
		}
		return i, -1
	}
	return -1, -1
}

// Describe says a rule as a sentence's object: "get, watch on
// cooloperators.cool.operators.corp".
func (r Rule) Describe() string {
	res := r.Resources[0]
	if g := r.APIGroups[0]; g != "" {
		res += "." + g
	}
	s := strings.Join(r.Verbs, ", ") + " on " + res
	if r.Object != "" {
		s += fmt.Sprintf(" (%q)", r.Object)
	}
	return s
}
