// Package sidecar is the bridge as a bundle declares it: the annotation
// that says which container of which deployment runs `statuscheck bridge`,
// the container generate adds, and the RBAC rules the bridge needs beside
// what OLM grants it. generate writes these and validate checks them, from
// this one place; the runner (package bridge) is what the container runs.
package sidecar

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
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
	// EnvStatusSource is the variable the container gets the status-source
	// annotation in, from the downward API: OLM copies the CSV's
	// annotations into its deployments' pod template
	// (operator-lifecycle-manager v0.46.0,
	// pkg/controller/install/deployment.go, deploymentForSpec:
	// "templateAnnotations comes from CSV.Annotations"), so the bridge
	// reads the status source there instead of from the running CSV, and
	// needs no permission on CSVs for it.
	EnvStatusSource = "STATUSCHECK_STATUS_SOURCE"
	// MetricsPort and ProbePort are where `statuscheck bridge` serves
	// /metrics and /healthz, /readyz by default; neither is one of
	// frameworkPorts, where the operator beside it may listen.
	MetricsPort = 8385
	ProbePort   = 8384
	// PortHealth and PortMetrics name the container's ports (what a
	// probe, a Service or a PodMonitor refers to).
	PortHealth  = "health"
	PortMetrics = "metrics"
	// FlagMetricsSecure is `statuscheck bridge`'s flag that serves
	// /metrics over HTTPS behind the apiserver's authentication and
	// authorization (TokenReview, SubjectAccessReview).
	FlagMetricsSecure = "metrics-secure"
)

// statusSourceField is the downward API's field of the pod's copy of the
// status-source annotation.
var statusSourceField = fmt.Sprintf("metadata.annotations['%s']", v1alpha1.AnnotationKey)

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

// OneWriter says why the bridge cannot serve src, nil when it can: with
// the OperatorCondition handshake the operator writes the
// OperatorCondition's Upgradeable entry itself, so the bridge and the
// operator would both write it and overwrite each other (the last writer
// wins, and OLM reads whichever that was).
func OneWriter(src *v1alpha1.StatusSource) error {
	if src == nil || src.Mode() != v1alpha1.HandshakeOperatorCondition {
		return nil
	}
	return errors.New("the status source's handshake is OperatorCondition, in which the operator writes the OperatorCondition's Upgradeable entry itself: the bridge and the operator would both write it and overwrite each other, and OLM would read whichever wrote last; use handshake None or RequestAck with the bridge, or drop the bridge")
}

// Options are the generated container's choices.
type Options struct {
	// Image runs `statuscheck bridge`.
	Image string
	// MetricsPort and ProbePort are its ports (Ports picks them).
	MetricsPort, ProbePort int
	// SecureMetrics serves /metrics on every interface, over HTTPS,
	// behind the apiserver's authentication and authorization
	// (--metrics-secure; Needs then asks for TokenReviews and
	// SubjectAccessReviews). Otherwise /metrics is served on localhost
	// only: nothing outside the pod reads it.
	SecureMetrics bool
}

// Container is the sidecar: `statuscheck bridge` from the image, its
// namespace and the status-source annotation from the downward API (OLM
// injects OPERATOR_CONDITION_NAME into every container of the CSV's
// deployments itself: operator-lifecycle-manager
// pkg/controller/install/deployment.go), named ports, a liveness probe on
// its health port, and a restricted security context. Its peak RSS
// measured on real OLM is 51-60 MiB, hence the memory figures.
//
// There is no readinessProbe on purpose: the bridge is ready only once it
// has written the OperatorCondition's entry, and a container that is not
// ready keeps the deployment from becoming Available, which OLM waits for
// to install the CSV; a bridge waiting for its CRD or its RBAC would fail
// the install it is part of.
func Container(o Options) corev1.Container {
	c := corev1.Container{
		Name:  ContainerName,
		Image: o.Image,
		Args:  []string{"bridge"},
		Env: []corev1.EnvVar{
			{Name: EnvPodNamespace, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
			StatusSourceEnv(),
		},
		Ports: []corev1.ContainerPort{{Name: PortHealth, ContainerPort: int32(o.ProbePort), Protocol: corev1.ProtocolTCP}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
		},
		LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString(PortHealth)}}},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			ReadOnlyRootFilesystem:   ptr.To(true),
			RunAsNonRoot:             ptr.To(true),
		},
	}
	if o.SecureMetrics {
		c.Args = append(c.Args, "--"+FlagMetricsSecure, fmt.Sprintf("--metrics-bind-address=:%d", o.MetricsPort))
		c.Ports = append(c.Ports, corev1.ContainerPort{Name: PortMetrics, ContainerPort: int32(o.MetricsPort), Protocol: corev1.ProtocolTCP})
	} else {
		c.Args = append(c.Args, fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", o.MetricsPort))
	}
	if o.ProbePort != ProbePort {
		c.Args = append(c.Args, fmt.Sprintf("--health-probe-bind-address=:%d", o.ProbePort))
	}
	return c
}

// Entrypoint is the statuscheck image's ENTRYPOINT (build/Containerfile):
// a container that sets no command runs it with its args.
const Entrypoint = "/usr/local/bin/statuscheck"

// Subcommand is the statuscheck subcommand the bridge's container runs.
const Subcommand = "bridge"

// RunsBridge says why a container would not run `statuscheck bridge`, nil
// when it does. As the kubelet starts it: command, when set, replaces the
// image's entrypoint (Entrypoint) and args follow it; without a command
// the entrypoint runs with args (the image has no CMD, so no args is
// statuscheck's help). The program must be statuscheck (Entrypoint, or
// statuscheck found on the PATH) and its first argument the subcommand
// bridge; a shell or another program is not judged by what it might run.
// field is "command" or "args", whichever decides; "" when neither is set.
func RunsBridge(c corev1.Container) (field string, err error) {
	argv := append([]string{Entrypoint}, c.Args...)
	if len(c.Command) > 0 {
		argv = append(append([]string{}, c.Command...), c.Args...)
	}
	// The field that holds the word that decides.
	switch {
	case len(c.Command) >= 2:
		field = "command"
	case len(c.Args) >= 1:
		field = "args"
	case len(c.Command) == 1:
		field = "command"
	}
	if len(c.Command) > 0 && c.Command[0] != Entrypoint && c.Command[0] != "statuscheck" {
		return "command", fmt.Errorf("its command %q replaces the image's entrypoint %s, so it runs %s, not `statuscheck %s`", c.Command, Entrypoint, c.Command[0], Subcommand)
	}
	if len(argv) < 2 {
		return field, fmt.Errorf("it gives no arguments, so it runs %s with no subcommand (statuscheck's help, and it exits), not `statuscheck %s`", argv[0], Subcommand)
	}
	if argv[1] != Subcommand {
		return field, fmt.Errorf("it runs `%s`, whose subcommand is %q, not %q", strings.Join(argv, " "), argv[1], Subcommand)
	}
	return "", nil
}

// StatusSourceEnv is the container's EnvStatusSource: the pod's copy of
// the CSV's status-source annotation, through the downward API.
func StatusSourceEnv() corev1.EnvVar {
	return corev1.EnvVar{Name: EnvStatusSource, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: statusSourceField}}}
}

// SourceFromEnv reports whether a container sets EnvStatusSource, so
// that the bridge in it never reads the running CSV for the annotation.
func SourceFromEnv(c corev1.Container) bool {
	for _, e := range c.Env {
		if e.Name == EnvStatusSource && (e.Value != "" || e.ValueFrom != nil) {
			return true
		}
	}
	return false
}

// SecureMetrics reports whether a container runs the bridge with
// --metrics-secure.
func SecureMetrics(c corev1.Container) bool {
	for _, a := range append(append([]string{}, c.Command...), c.Args...) {
		if a == "--"+FlagMetricsSecure || a == "--"+FlagMetricsSecure+"=true" {
			return true
		}
	}
	return false
}

// frameworkPorts are the ports operator frameworks bind by default without
// declaring a containerPort, so that Ports cannot see them in the pod, each
// with who binds it.
// Containers of a pod share its network: a sidecar on one of them keeps
// whichever of it and the operator starts second from binding, and that
// one crash-loops (an operator-sdk v0.x operator exits 1 when manager.New
// cannot bind its metrics).
var frameworkPorts = map[int]string{
	// operator-sdk v0.5.0 to v0.18.x scaffold cmd/manager/main.go with
	// metricsHost "0.0.0.0", metricsPort 8383 (controller-runtime's
	// MetricsBindAddress) and, from v0.9.0, operatorMetricsPort 8686 (the
	// custom-resource metrics that serveCRMetrics serves through
	// kubemetrics.GenerateAndServeCRMetrics): operator-framework/operator-sdk
	// v0.18.0, internal/scaffold/cmd.go, cmdTmpl (internal/pkg/scaffold or
	// pkg/scaffold/cmd.go in earlier tags).
	8383: "operator-sdk v0.x metrics",
	8686: "operator-sdk v0.x custom-resource metrics",
	// controller-runtime's metrics server: kubernetes-sigs/controller-runtime
	// v0.24.1, pkg/metrics/server/server.go, DefaultBindAddress ":8080";
	// kubebuilder's scaffold serves them on :8443 (HTTPS) or :8080 (HTTP):
	// kubernetes-sigs/kubebuilder v4.15.0,
	// pkg/plugins/golang/v4/scaffolds/internal/templates/cmd/main.go,
	// mainTemplate, and --metrics-bind-address=:8443 in
	// pkg/plugins/common/kustomize/v2/scaffolds/internal/templates/config/kdefault/manager_metrics_patch.go,
	// kustomizeMetricsPatchTemplate; operator-sdk's helm-operator defaults to
	// :8080 too (v1.42.3, internal/helm/flags/flag.go, Flags.AddTo).
	8080: "controller-runtime metrics",
	8443: "kubebuilder secure metrics",
	// kubebuilder's scaffolded health probes: the same mainTemplate,
	// --health-probe-bind-address ":8081" (helm-operator's too, same
	// flag.go).
	8081: "kubebuilder health probes",
	// controller-runtime's webhook server: v0.24.1, pkg/webhook/server.go,
	// DefaultPort 9443.
	9443: "controller-runtime webhook server",
}

// Ports picks the metrics and probe ports: the defaults unless a container
// of the pod declares them (containers of a pod share its network), then
// the next free ones, never one of frameworkPorts.
func Ports(pod corev1.PodSpec) (metrics, probe int) {
	used := map[int]bool{}
	for port := range frameworkPorts {
		used[port] = true
	}
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

// Rule is one permission the bridge needs: verbs on a resource, by name
// (resourceNames) wherever the bridge asks for one object only.
type Rule struct {
	rbacv1.PolicyRule
	// Cluster says only clusterPermissions can grant it: permissions do
	// not reach its object under every install mode the CSV supports
	// (Modes.Reach).
	Cluster bool
	// Where says why, when Cluster (Modes.NotReached): a clause.
	Where string
	// Why says what the bridge does with it.
	Why string
}

// object is the one object the rule names, "" when the bridge lists or
// watches the whole resource, which resourceNames cannot grant.
func (r Rule) object() string {
	if len(r.ResourceNames) == 1 {
		return r.ResourceNames[0]
	}
	return ""
}

// Bridge is what the bridge's permissions depend on.
type Bridge struct {
	// Source is the status source.
	Source *v1alpha1.StatusSource
	// CSV is the running CSV's name.
	CSV string
	// Plural and Namespaced describe the status source's kind (its CRD).
	Plural     string
	Namespaced bool
	// Container is the bridge's container as the CSV declares it: whether
	// it gets the status source from the downward API (SourceFromEnv) and
	// serves metrics securely (SecureMetrics) changes what it needs.
	Container corev1.Container
	// InstallModes are the CSV's spec.installModes: where OLM makes
	// permissions reach (Modes.Reach) decides which rules permissions can
	// grant. None supported reads as no mode lifting them.
	InstallModes []operatorsv1alpha1.InstallMode
}

// The verbs the bridge uses on the status source: it gets the CR and
// watches it (a named watch, with a metadata.name field selector, which
// resourceNames grant), and under RequestAck patches the request into it.
var (
	sourceVerbs    = []string{"get", "watch"}
	sourceAckVerbs = []string{"get", "watch", "patch"}
)

// Needs lists what the bridge's service account must be granted by the
// CSV, beside the OperatorCondition, which OLM's own Role grants (get,
// update, patch on that one object: operator-lifecycle-manager
// pkg/controller/operators/operatorcondition_controller.go,
// ensureOperatorConditionRole). Everything is by name but what cannot be:
// under RequestAck the bridge lists and watches the namespace's CSVs for
// the one that replaces the running CSV. A rule is Cluster where
// permissions do not reach its object under every install mode the CSV
// supports (Modes.Reach): the status-source CR of a cluster-scoped kind or
// in a pinned namespace, still by name, and the reviews of secure metrics,
// unless AllNamespaces is the only mode, under which OLM lifts permissions
// to ClusterRoles.
func (b Bridge) Needs() []Rule {
	gv := b.Source.GroupVersion()
	ack := b.Source.Mode() == v1alpha1.HandshakeRequestAck
	csvs := func(verbs ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{contract.CSVResource.Group}, Resources: []string{contract.CSVResource.Resource}, Verbs: verbs}
	}
	var out []Rule
	if !SourceFromEnv(b.Container) {
		r := csvs("get")
		r.ResourceNames = []string{b.CSV}
		out = append(out, Rule{PolicyRule: r, Why: fmt.Sprintf("reads the status-source annotation of the running CSV (its container does not set %s from the downward API)", EnvStatusSource)})
	}
	if ack {
		out = append(out, Rule{PolicyRule: csvs("list", "watch"), Why: "watches for the CSV that replaces the running one (RequestAck)"})
	}
	modes := b.modes()
	cr := Rule{PolicyRule: rbacv1.PolicyRule{APIGroups: []string{gv.Group}, Resources: []string{b.Plural}, ResourceNames: []string{b.Source.Name}, Verbs: slices.Clone(sourceVerbs)},
		Cluster: b.clusterSource(), Where: modes.NotReached(b.Namespaced, b.Source.Namespace), Why: "reads and watches the status source"}
	if ack {
		cr.Verbs, cr.Why = slices.Clone(sourceAckVerbs), "reads and watches the status source and writes the upgrade request to it (RequestAck)"
	}
	out = append(out, cr)
	if SecureMetrics(b.Container) {
		why := "authenticates and authorizes the requests for its metrics (--" + FlagMetricsSecure + ")"
		// The reviews are cluster-scoped resources.
		cluster, where := modes.Reach(false, "") != ReachAll, modes.NotReached(false, "")
		out = append(out,
			Rule{PolicyRule: rbacv1.PolicyRule{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}}, Cluster: cluster, Where: where, Why: why},
			Rule{PolicyRule: rbacv1.PolicyRule{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}}, Cluster: cluster, Where: where, Why: why})
	}
	return out
}

// modes are the install modes the CSV supports.
func (b Bridge) modes() Modes { return SupportedModes(b.InstallModes) }

// clusterSource says permissions do not reach the status-source CR under
// every install mode the CSV supports (a cluster-scoped kind or a pinned
// namespace, unless AllNamespaces is the only mode), so only
// clusterPermissions grant the bridge its rule on it.
func (b Bridge) clusterSource() bool {
	return b.modes().Reach(b.Namespaced, b.Source.Namespace) != ReachAll
}

// Missing returns what of needs the install strategy does not grant the
// service account sa: each rule with only the verbs it lacks.
func Missing(install operatorsv1alpha1.StrategyDetailsDeployment, sa string, needs []Rule) []Rule {
	var out []Rule
	for _, n := range needs {
		var verbs []string
		for _, v := range n.Verbs {
			req := bundle.Request{Verb: v, Group: n.APIGroups[0], Resource: n.Resources[0], Name: n.object()}
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

// Field is the install strategy's field whose rules a Rule or an Excess
// is about: clusterPermissions (ClusterRoles) for cluster, else
// permissions (Roles in the operator's namespace).
func Field(cluster bool) string {
	if cluster {
		return "clusterPermissions"
	}
	return "permissions"
}

// Excess is a rule of the install strategy that grants the bridge more
// than it needs, in a shape only the bridge plausibly asked for.
type Excess struct {
	// Cluster says the rule is in clusterPermissions; Entry is the index
	// of sa's entry there (or in permissions) and Index the rule's.
	Cluster      bool
	Entry, Index int
	Rule         rbacv1.PolicyRule
	// Fix says what would do instead.
	Fix string
}

// Broad finds sa's rules that are broader than the bridge needs, as older
// `generate --bridge` wrote them: the bridge's verbs on the status source
// without resourceNames (in permissions only where they reach it under
// every install mode: elsewhere the rule does not count for the bridge),
// or through clusterPermissions where a Role in the operator's namespace
// reaches it and some install mode keeps permissions Roles (with
// AllNamespaces the only mode, OLM lifts permissions to ClusterRoles, so
// moving the rule narrows nothing); and, when the bridge never reads the
// running CSV (its container sets EnvStatusSource, no RequestAck), the
// get on CSVs it used to need. The account is the operator's too, so only
// rules whose every verb is one the bridge uses (get, watch, patch on the
// CR; exactly get on CSVs) on exactly its resource are reported: a rule
// that lists, updates, creates or deletes is the operator's.
func (b Bridge) Broad(install operatorsv1alpha1.StrategyDetailsDeployment, sa string) []Excess {
	gv := b.Source.GroupVersion()
	csvFree := SourceFromEnv(b.Container) && b.Source.Mode() != v1alpha1.HandshakeRequestAck
	inPermissions := !b.clusterSource()              // a rule in permissions grants the bridge the CR
	narrower := inPermissions && !b.modes().Lifted() // and there it is narrower than in clusterPermissions
	var out []Excess
	for _, cluster := range []bool{false, true} {
		perms := install.Permissions
		if cluster {
			perms = install.ClusterPermissions
		}
		for i, p := range perms {
			if p.ServiceAccountName != sa {
				continue
			}
			for j, r := range p.Rules {
				var fix []string
				switch {
				case only(r, gv.Group, b.Plural) && len(r.Verbs) > 0 && subset(r.Verbs, sourceAckVerbs):
					if len(r.ResourceNames) == 0 && (cluster || inPermissions) {
						fix = append(fix, fmt.Sprintf("add resourceNames: [%s], the one object the bridge reads", b.Source.Name))
					}
					if cluster && narrower {
						fix = append(fix, "move it to permissions: a Role in the operator's namespace reaches the status source")
					}
				case csvFree && only(r, contract.CSVResource.Group, contract.CSVResource.Resource) && len(r.ResourceNames) == 0 && !cluster && slices.Equal(r.Verbs, []string{"get"}):
					fix = append(fix, fmt.Sprintf("remove it unless the operator itself reads CSVs: the bridge reads the status source from %s (the downward API) and no CSV", EnvStatusSource))
				}
				if len(fix) > 0 {
					out = append(out, Excess{Cluster: cluster, Entry: i, Index: j, Rule: r, Fix: strings.Join(fix, ", and ")})
				}
			}
		}
	}
	return out
}

// only reports whether a rule is about exactly one group and resource.
func only(r rbacv1.PolicyRule, group, resource string) bool {
	return slices.Equal(r.APIGroups, []string{group}) && slices.Equal(r.Resources, []string{resource})
}

// subset reports whether every one of verbs is in of.
func subset(verbs, of []string) bool {
	for _, v := range verbs {
		if !slices.Contains(of, v) {
			return false
		}
	}
	return true
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
// cooloperators.cool.operators.corp ("cool-operator")".
func (r Rule) Describe() string { return Describe(r.PolicyRule) }

// Describe says an RBAC rule as a sentence's object: its verbs on its
// resources (resource.group), and the objects it names.
func Describe(r rbacv1.PolicyRule) string {
	res := make([]string, 0, len(r.Resources))
	for _, resource := range r.Resources {
		for _, g := range r.APIGroups {
			name := resource
			if g != "" {
				name += "." + g
			}
			res = append(res, name)
		}
	}
	s := strings.Join(r.Verbs, ", ") + " on " + strings.Join(res, ", ")
	if len(r.ResourceNames) > 0 {
		q := make([]string, len(r.ResourceNames))
		for i, n := range r.ResourceNames {
			q[i] = strconv.Quote(n)
		}
		s += " (" + strings.Join(q, ", ") + ")"
	}
	return s
}
