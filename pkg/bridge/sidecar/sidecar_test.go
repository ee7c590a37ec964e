package sidecar

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, value string
		want        Declaration
		err         string
	}{
		{name: "deployment and container", value: "cool-operator/statuscheck-bridge", want: Declaration{Deployment: "cool-operator", Container: "statuscheck-bridge"}},
		{name: "a dotted deployment name", value: "cool.operator/bridge", want: Declaration{Deployment: "cool.operator", Container: "bridge"}},
		{name: "no slash", value: "statuscheck-bridge", err: `"statuscheck-bridge" is not DEPLOYMENT/CONTAINER`},
		{name: "a dot in the container", value: "d/a.b", err: `container name "a.b"`},
		{name: "an upper-case deployment", value: "Cool/b", err: `deployment name "Cool"`},
		{name: "empty parts", value: "/", err: `deployment name ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.value)
			if tt.err != "" {
				assert.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.value, got.String())
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"a/b", "cool-operator/statuscheck-bridge", "a//b", "", "/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := Parse(s)
		if err != nil {
			return
		}
		again, err := Parse(d.String())
		if err != nil || again != d || d.String() != s {
			t.Fatalf("%q parses to %+v, which does not round-trip: %+v, %v", s, d, again, err)
		}
	})
}

// cool is the status source the RBAC tests are about, in a mode.
func cool(mode v1alpha1.HandshakeMode, namespace string) *v1alpha1.StatusSource {
	src := &v1alpha1.StatusSource{APIVersion: "cool.io/v1", Kind: "Cool", Name: "cool", Namespace: namespace}
	switch mode {
	case v1alpha1.HandshakeRequestAck:
		src.Handshake = &v1alpha1.Handshake{Mode: mode, Request: &v1alpha1.HandshakeRequest{SpecPath: ".spec.upgradeRequest"}}
	case v1alpha1.HandshakeOperatorCondition:
		src.Handshake = &v1alpha1.Handshake{Mode: mode}
	}
	return src
}

func rule(group, resource string, verbs ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: verbs}
}

func named(r rbacv1.PolicyRule, names ...string) rbacv1.PolicyRule {
	r.ResourceNames = names
	return r
}

func perms(sa string, rules ...rbacv1.PolicyRule) []operatorsv1alpha1.StrategyDeploymentPermissions {
	return []operatorsv1alpha1.StrategyDeploymentPermissions{{ServiceAccountName: sa, Rules: rules}}
}

// generated is the container generate adds; older is one an older
// generate wrote, without the status source from the downward API.
var (
	generated = Container(Options{Image: "img", MetricsPort: MetricsPort, ProbePort: ProbePort})
	secure    = Container(Options{Image: "img", MetricsPort: MetricsPort, ProbePort: ProbePort, SecureMetrics: true})
	older     = corev1.Container{Name: ContainerName, Image: "img", Args: []string{"bridge"}}
)

// rbacCase is a bridge of the status source cool (the running CSV
// cool.v1, the resource cools), what the install strategy grants the
// account op, and what a test wants said of it.
type rbacCase struct {
	name       string
	src        *v1alpha1.StatusSource
	namespaced bool
	container  corev1.Container
	install    operatorsv1alpha1.StrategyDetailsDeployment
	// modes are the CSV's supported install modes; none reads as no mode
	// lifting permissions.
	modes []operatorsv1alpha1.InstallModeType
	want  []string
}

func (c rbacCase) bridge() Bridge {
	return Bridge{Source: c.src, CSV: "cool.v1", Plural: "cools", Namespaced: c.namespaced, Container: c.container, InstallModes: installModes(c.modes...)}
}

// installModes is spec.installModes with the given modes supported.
func installModes(supported ...operatorsv1alpha1.InstallModeType) []operatorsv1alpha1.InstallMode {
	var out []operatorsv1alpha1.InstallMode
	for _, t := range []operatorsv1alpha1.InstallModeType{operatorsv1alpha1.InstallModeTypeOwnNamespace, operatorsv1alpha1.InstallModeTypeSingleNamespace, operatorsv1alpha1.InstallModeTypeMultiNamespace, operatorsv1alpha1.InstallModeTypeAllNamespaces} {
		out = append(out, operatorsv1alpha1.InstallMode{Type: t, Supported: slices.Contains(supported, t)})
	}
	return out
}

var (
	allOnly   = []operatorsv1alpha1.InstallModeType{operatorsv1alpha1.InstallModeTypeAllNamespaces}
	allAndOwn = []operatorsv1alpha1.InstallModeType{operatorsv1alpha1.InstallModeTypeOwnNamespace, operatorsv1alpha1.InstallModeTypeAllNamespaces}
)

// TestNeedsAndMissing: what the bridge needs, by mode, container and
// scope, is what a bundle that grants nothing lacks, each rule by name
// where the bridge asks for one object; a rule with other names, or in a
// Role where only a ClusterRole reaches, does not grant it.
func TestNeedsAndMissing(t *testing.T) {
	tests := []rbacCase{
		{name: "freshness mode needs no CSV at all", src: cool("", ""), namespaced: true, container: generated,
			want: []string{`get, watch on cools.cool.io ("cool")`}},
		{name: "an older container reads the running CSV, by name", src: cool("", ""), namespaced: true, container: older,
			want: []string{`get on clusterserviceversions.operators.coreos.com ("cool.v1")`, `get, watch on cools.cool.io ("cool")`}},
		{name: "RequestAck lists and watches CSVs, which resourceNames cannot grant", src: cool(v1alpha1.HandshakeRequestAck, ""), namespaced: true, container: generated,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("op",
				named(rule("operators.coreos.com", "clusterserviceversions", "get", "list", "watch"), "cool.v1"),
				rule("cool.io", "cools", "get", "watch"))},
			want: []string{`list, watch on clusterserviceversions.operators.coreos.com`, `patch on cools.cool.io ("cool")`}},
		{name: "everything granted, by name", src: cool(v1alpha1.HandshakeRequestAck, ""), namespaced: true, container: generated,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("op",
				rule("operators.coreos.com", "clusterserviceversions", "list", "watch"),
				named(rule("cool.io", "cools", "get", "watch", "patch"), "cool"))}},
		{name: "a rule naming another object does not grant", src: cool("", ""), namespaced: true, container: generated,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("op", named(rule("cool.io", "cools", "get", "watch"), "other"))},
			want:    []string{`get, watch on cools.cool.io ("cool")`}},
		{name: "granted to another account", src: cool("", ""), namespaced: true, container: generated,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("other", rule("*", "*", "*"))},
			want:    []string{`get, watch on cools.cool.io ("cool")`}},
		{name: "a cluster-scoped kind in namespaced permissions", src: cool("", ""), namespaced: false, container: generated,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("op", rule("*", "*", "*"))},
			want:    []string{`get, watch on cools.cool.io ("cool")`}},
		{name: "a pinned namespace in clusterPermissions, by name", src: cool("", "elsewhere"), namespaced: true, container: generated,
			install: operatorsv1alpha1.StrategyDetailsDeployment{ClusterPermissions: perms("op", named(rule("cool.io", "cools", "get", "watch"), "cool"))}},
		{name: "secure metrics ask the apiserver to authenticate and authorize", src: cool("", ""), namespaced: true, container: secure,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("op", rule("authentication.k8s.io", "tokenreviews", "create"))},
			want:    []string{`get, watch on cools.cool.io ("cool")`, `create on tokenreviews.authentication.k8s.io`, `create on subjectaccessreviews.authorization.k8s.io`}},
		// OLM lifts permissions to ClusterRoles under AllNamespaces.
		{name: "a cluster-scoped kind in permissions, AllNamespaces the only mode", src: cool(v1alpha1.HandshakeRequestAck, ""), namespaced: false, container: generated, modes: allOnly,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("op", rule("operators.coreos.com", "clusterserviceversions", "list", "watch"), named(rule("cool.io", "cools", "get", "watch", "patch"), "cool"))}},
		{name: "a cluster-scoped kind in permissions, AllNamespaces beside OwnNamespace", src: cool(v1alpha1.HandshakeRequestAck, ""), namespaced: false, container: generated, modes: allAndOwn,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("op", rule("operators.coreos.com", "clusterserviceversions", "list", "watch"), named(rule("cool.io", "cools", "get", "watch", "patch"), "cool"))},
			want:    []string{`get, watch, patch on cools.cool.io ("cool")`}},
		{name: "a pinned namespace in permissions, AllNamespaces the only mode", src: cool("", "elsewhere"), namespaced: true, container: generated, modes: allOnly,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("op", named(rule("cool.io", "cools", "get", "watch"), "cool"))}},
		{name: "the reviews of secure metrics in permissions, AllNamespaces the only mode", src: cool("", ""), namespaced: true, container: secure, modes: allOnly,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("op", named(rule("cool.io", "cools", "get", "watch"), "cool"),
				rule("authentication.k8s.io", "tokenreviews", "create"), rule("authorization.k8s.io", "subjectaccessreviews", "create"))}},
		{name: "the reviews of secure metrics in permissions, AllNamespaces beside OwnNamespace", src: cool("", ""), namespaced: true, container: secure, modes: allAndOwn,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("op", named(rule("cool.io", "cools", "get", "watch"), "cool"),
				rule("authentication.k8s.io", "tokenreviews", "create"), rule("authorization.k8s.io", "subjectaccessreviews", "create"))},
			want: []string{`create on tokenreviews.authentication.k8s.io`, `create on subjectaccessreviews.authorization.k8s.io`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, m := range Missing(tt.install, "op", tt.bridge().Needs()) {
				got = append(got, m.Describe())
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestNeedsAreByName: every rule the bridge needs on one object names it,
// and only the CSV list and watch of RequestAck and the reviews of secure
// metrics name none; the CR is in clusterPermissions only where a Role
// cannot reach it.
func TestNeedsAreByName(t *testing.T) {
	tests := []struct {
		name       string
		src        *v1alpha1.StatusSource
		namespaced bool
		container  corev1.Container
		want       []Rule
	}{
		{name: "freshness", src: cool("", ""), namespaced: true, container: generated,
			want: []Rule{{PolicyRule: named(rule("cool.io", "cools", "get", "watch"), "cool")}}},
		{name: "RequestAck", src: cool(v1alpha1.HandshakeRequestAck, ""), namespaced: true, container: generated,
			want: []Rule{{PolicyRule: rule("operators.coreos.com", "clusterserviceversions", "list", "watch")}, {PolicyRule: named(rule("cool.io", "cools", "get", "watch", "patch"), "cool")}}},
		{name: "a cluster-scoped kind", src: cool(v1alpha1.HandshakeRequestAck, ""), namespaced: false, container: generated,
			want: []Rule{{PolicyRule: rule("operators.coreos.com", "clusterserviceversions", "list", "watch")}, {PolicyRule: named(rule("cool.io", "cools", "get", "watch", "patch"), "cool"), Cluster: true}}},
		{name: "a pinned namespace", src: cool("", "elsewhere"), namespaced: true, container: older,
			want: []Rule{{PolicyRule: named(rule("operators.coreos.com", "clusterserviceversions", "get"), "cool.v1")}, {PolicyRule: named(rule("cool.io", "cools", "get", "watch"), "cool"), Cluster: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Bridge{Source: tt.src, CSV: "cool.v1", Plural: "cools", Namespaced: tt.namespaced, Container: tt.container}.Needs()
			for i := range got {
				assert.Equal(t, got[i].Cluster, got[i].Where != "", "a rule only clusterPermissions grant says why")
				got[i].Why, got[i].Where = "", ""
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestBroad: the rules older generate --bridge wrote (the CR's verbs
// without resourceNames, the CSV get of freshness mode) and a
// ClusterRole where a Role reaches are reported with the fix; the
// operator's own rules (any other verb), what the bridge still needs and
// other accounts' rules are not.
func TestBroad(t *testing.T) {
	csvGet := rule("operators.coreos.com", "clusterserviceversions", "get")
	tests := []rbacCase{
		{name: "the CR's verbs without a name", src: cool("", ""), namespaced: true, container: generated,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("op", rule("cool.io", "cools", "patch"))},
			want:    []string{"permissions[0].rules[0] patch on cools.cool.io: add resourceNames: [cool], the one object the bridge reads"}},
		{name: "the operator's own rule on the CR", src: cool(v1alpha1.HandshakeRequestAck, ""), namespaced: true, container: generated,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("op", rule("cool.io", "cools", "get", "list", "watch", "update", "patch"))}},
		{name: "the CR's rule by name", src: cool(v1alpha1.HandshakeRequestAck, ""), namespaced: true, container: generated,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("op", named(rule("cool.io", "cools", "get", "watch", "patch"), "cool"))}},
		{name: "a ClusterRole where a Role reaches", src: cool("", ""), namespaced: true, container: generated,
			install: operatorsv1alpha1.StrategyDetailsDeployment{ClusterPermissions: perms("op", named(rule("cool.io", "cools", "get", "watch"), "cool"))},
			want:    []string{"clusterPermissions[0].rules[0] get, watch on cools.cool.io (\"cool\"): move it to permissions: a Role in the operator's namespace reaches the status source"}},
		{name: "a ClusterRole without a name where a Role reaches", src: cool("", ""), namespaced: true, container: generated,
			install: operatorsv1alpha1.StrategyDetailsDeployment{ClusterPermissions: perms("op", rule("cool.io", "cools", "get", "watch"))},
			want: []string{"clusterPermissions[0].rules[0] get, watch on cools.cool.io: add resourceNames: [cool], the one object the bridge reads, and " +
				"move it to permissions: a Role in the operator's namespace reaches the status source"}},
		{name: "a cluster-scoped kind without a name", src: cool(v1alpha1.HandshakeRequestAck, ""), namespaced: false, container: generated,
			install: operatorsv1alpha1.StrategyDetailsDeployment{ClusterPermissions: perms("op", rule("cool.io", "cools", "get", "watch", "patch"))},
			want:    []string{"clusterPermissions[0].rules[0] get, watch, patch on cools.cool.io: add resourceNames: [cool], the one object the bridge reads"}},
		{name: "a pinned namespace by name in a ClusterRole", src: cool("", "elsewhere"), namespaced: true, container: generated,
			install: operatorsv1alpha1.StrategyDetailsDeployment{ClusterPermissions: perms("op", named(rule("cool.io", "cools", "get", "watch"), "cool"))}},
		{name: "a Role rule for a cluster-scoped kind is not the bridge's", src: cool("", ""), namespaced: false, container: generated,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("op", rule("cool.io", "cools", "get", "watch"))}},
		// OLM lifts permissions to ClusterRoles under AllNamespaces.
		{name: "a ClusterRole by name where only the lifted permissions reach: moving it narrows nothing", src: cool("", ""), namespaced: true, container: generated, modes: allOnly,
			install: operatorsv1alpha1.StrategyDetailsDeployment{ClusterPermissions: perms("op", named(rule("cool.io", "cools", "get", "watch"), "cool"))}},
		{name: "a ClusterRole by name where a Role reaches under OwnNamespace", src: cool("", ""), namespaced: true, container: generated, modes: allAndOwn,
			install: operatorsv1alpha1.StrategyDetailsDeployment{ClusterPermissions: perms("op", named(rule("cool.io", "cools", "get", "watch"), "cool"))},
			want:    []string{"clusterPermissions[0].rules[0] get, watch on cools.cool.io (\"cool\"): move it to permissions: a Role in the operator's namespace reaches the status source"}},
		{name: "a cluster-scoped kind by name in lifted permissions", src: cool(v1alpha1.HandshakeRequestAck, ""), namespaced: false, container: generated, modes: allOnly,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("op", named(rule("cool.io", "cools", "get", "watch", "patch"), "cool"))}},
		{name: "a cluster-scoped kind by name in a ClusterRole, AllNamespaces the only mode", src: cool(v1alpha1.HandshakeRequestAck, ""), namespaced: false, container: generated, modes: allOnly,
			install: operatorsv1alpha1.StrategyDetailsDeployment{ClusterPermissions: perms("op", named(rule("cool.io", "cools", "get", "watch", "patch"), "cool"))}},
		{name: "a cluster-scoped kind without a name in lifted permissions", src: cool(v1alpha1.HandshakeRequestAck, ""), namespaced: false, container: generated, modes: allOnly,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("op", rule("cool.io", "cools", "get", "watch", "patch"))},
			want:    []string{"permissions[0].rules[0] get, watch, patch on cools.cool.io: add resourceNames: [cool], the one object the bridge reads"}},
		{name: "a cluster-scoped kind without a name in permissions, AllNamespaces beside OwnNamespace: not the bridge's", src: cool(v1alpha1.HandshakeRequestAck, ""), namespaced: false, container: generated, modes: allAndOwn,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("op", rule("cool.io", "cools", "get", "watch", "patch"))}},
		{name: "the CSV get freshness mode no longer needs", src: cool("", ""), namespaced: true, container: generated,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("op", rule("cool.io", "cools", "*"), csvGet)},
			want:    []string{"permissions[0].rules[1] get on clusterserviceversions.operators.coreos.com: remove it unless the operator itself reads CSVs: the bridge reads the status source from STATUSCHECK_STATUS_SOURCE (the downward API) and no CSV"}},
		{name: "the CSV get an older container still needs", src: cool("", ""), namespaced: true, container: older,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("op", csvGet)}},
		{name: "the CSV get under RequestAck", src: cool(v1alpha1.HandshakeRequestAck, ""), namespaced: true, container: generated,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("op", csvGet)}},
		{name: "the operator's own CSV informer", src: cool("", ""), namespaced: true, container: generated,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("op", rule("operators.coreos.com", "clusterserviceversions", "get", "list", "watch"))}},
		{name: "another account's rules", src: cool("", ""), namespaced: true, container: generated,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("other", rule("cool.io", "cools", "get"), csvGet)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range tt.bridge().Broad(tt.install, "op") {
				got = append(got, fmt.Sprintf("%s[%d].rules[%d] %s: %s", Field(e.Cluster), e.Entry, e.Index, Describe(e.Rule), e.Fix))
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestContainer: the generated container gets the status source and its
// namespace from the downward API, declares its named ports, serves its
// metrics on localhost unless they are secure, and has a liveness probe on
// its health port but no readiness probe.
func TestContainer(t *testing.T) {
	tests := []struct {
		name  string
		opts  Options
		args  []string
		ports []corev1.ContainerPort
	}{
		{name: "the default ports", opts: Options{Image: "img", MetricsPort: MetricsPort, ProbePort: ProbePort},
			args:  []string{"bridge", "--metrics-bind-address=127.0.0.1:8385"},
			ports: []corev1.ContainerPort{{Name: "health", ContainerPort: 8384, Protocol: corev1.ProtocolTCP}}},
		{name: "moved ports", opts: Options{Image: "img", MetricsPort: 8386, ProbePort: 8387},
			args:  []string{"bridge", "--metrics-bind-address=127.0.0.1:8386", "--health-probe-bind-address=:8387"},
			ports: []corev1.ContainerPort{{Name: "health", ContainerPort: 8387, Protocol: corev1.ProtocolTCP}}},
		{name: "secure metrics, off localhost", opts: Options{Image: "img", MetricsPort: MetricsPort, ProbePort: ProbePort, SecureMetrics: true},
			args: []string{"bridge", "--metrics-secure", "--metrics-bind-address=:8385"},
			ports: []corev1.ContainerPort{{Name: "health", ContainerPort: 8384, Protocol: corev1.ProtocolTCP},
				{Name: "metrics", ContainerPort: 8385, Protocol: corev1.ProtocolTCP}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Container(tt.opts)
			assert.Equal(t, tt.args, c.Args)
			assert.Equal(t, tt.ports, c.Ports)
			assert.Equal(t, "health", c.LivenessProbe.HTTPGet.Port.StrVal)
			assert.Nil(t, c.ReadinessProbe, "a sidecar that is not ready would fail OLM's install")
			assert.Equal(t, []corev1.EnvVar{
				{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
				{Name: "STATUSCHECK_STATUS_SOURCE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['operatorframework.io/status-source']"}}},
			}, c.Env)
			assert.True(t, SourceFromEnv(c))
			assert.Equal(t, tt.opts.SecureMetrics, SecureMetrics(c))
		})
	}
	assert.False(t, SourceFromEnv(older))
	assert.False(t, SecureMetrics(older))
}

// TestPorts: the sidecar's ports avoid those the pod's other containers
// declare and those operator frameworks bind by default without declaring
// them (containers of a pod share its network, so either the operator or
// the sidecar would fail to bind and crash-loop).
func TestPorts(t *testing.T) {
	// The frameworks' undeclared defaults, spelled out here and not taken
	// from the package, so that dropping one from it fails this test.
	frameworks := []int{8383, 8686, 8080, 8081, 8443, 9443}
	declaring := func(ports ...int32) corev1.Container {
		c := corev1.Container{Name: "manager"}
		for _, p := range ports {
			c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: p})
		}
		return c
	}
	tests := []struct {
		name           string
		pod            corev1.PodSpec
		metrics, probe int
	}{
		{name: "no container declares a port", pod: corev1.PodSpec{Containers: []corev1.Container{declaring()}},
			metrics: MetricsPort, probe: ProbePort},
		{name: "an empty pod", metrics: MetricsPort, probe: ProbePort},
		{name: "the defaults declared", pod: corev1.PodSpec{Containers: []corev1.Container{declaring(MetricsPort, ProbePort)}}},
		{name: "the defaults and the next ones declared", pod: corev1.PodSpec{Containers: []corev1.Container{declaring(8383, 8384, 8385, 8386, 8387)}}},
		{name: "the frameworks' ports declared", pod: corev1.PodSpec{Containers: []corev1.Container{declaring(8383, 8686, 8080, 8081, 9443)}},
			metrics: MetricsPort, probe: ProbePort},
		{name: "ports declared by several containers", pod: corev1.PodSpec{Containers: []corev1.Container{declaring(8384), declaring(8385)}}},
		{name: "the sidecar's own ports do not count", pod: corev1.PodSpec{Containers: []corev1.Container{declaring(), {Name: ContainerName, Ports: []corev1.ContainerPort{{ContainerPort: MetricsPort}, {ContainerPort: ProbePort}}}}},
			metrics: MetricsPort, probe: ProbePort},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, p := Ports(tt.pod)
			assert.NotEqual(t, m, p)
			for _, port := range []int{m, p} {
				assert.NotContains(t, frameworks, port, "an operator framework binds it without declaring it")
				for _, c := range tt.pod.Containers {
					if c.Name == ContainerName {
						continue
					}
					for _, d := range c.Ports {
						assert.NotEqual(t, int(d.ContainerPort), port, "container %s declares it", c.Name)
					}
				}
			}
			if tt.metrics != 0 {
				assert.Equal(t, tt.metrics, m)
				assert.Equal(t, tt.probe, p)
			}
		})
	}
}

// TestPortsKeepWhatAvoidedThemAlready: the probe port never collided, so it
// stays where it was; ports moved past declared ones still move to the
// next free port.
func TestPortsKeepWhatAvoidedThemAlready(t *testing.T) {
	tests := []struct {
		name           string
		declared       []int32
		metrics, probe int
	}{
		{name: "nothing declared", metrics: 8385, probe: 8384},
		{name: "the defaults and the next ones declared", declared: []int32{8383, 8384, 8385}, metrics: 8386, probe: 8387},
		{name: "the probe port declared", declared: []int32{8384}, metrics: 8385, probe: 8386},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := corev1.Container{Name: "manager"}
			for _, p := range tt.declared {
				c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: p})
			}
			m, p := Ports(corev1.PodSpec{Containers: []corev1.Container{c}})
			assert.Equal(t, tt.metrics, m, "metrics")
			assert.Equal(t, tt.probe, p, "probe")
		})
	}
}

// TestOneWriter: only the OperatorCondition handshake, in which the
// operator writes the OperatorCondition itself, refuses the bridge.
func TestOneWriter(t *testing.T) {
	for _, mode := range []v1alpha1.HandshakeMode{"", v1alpha1.HandshakeNone, v1alpha1.HandshakeRequestAck} {
		assert.NoError(t, OneWriter(cool(mode, "")), mode)
	}
	assert.ErrorContains(t, OneWriter(cool(v1alpha1.HandshakeOperatorCondition, "")), "the bridge and the operator would both write it")
}

func TestCheckImage(t *testing.T) {
	tests := []struct {
		name, ref string
		wantErr   string
	}{
		{name: "a tag", ref: "quay.io/statuscheck/statuscheck:v0.1.0"},
		{name: "a digest", ref: "quay.io/x/statuscheck@sha256:" + strings.Repeat("a", 64)},
		{name: "a short name", ref: "statuscheck"},
		{name: "localhost", ref: "localhost/statuscheck:dev"},
		{name: "empty", ref: "", wantErr: "no image"},
		{name: "the placeholder of a suggested command", ref: "IMAGE", wantErr: "is a placeholder"},
		{name: "an angle-bracket placeholder", ref: "<image>", wantErr: "is a placeholder"},
		{name: "spaces and punctuation", ref: "not a valid image ref!!", wantErr: "is not an image reference"},
		{name: "upper case repository", ref: "quay.io/Me/statuscheck", wantErr: "is not an image reference"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckImage(tt.ref)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func FuzzCheckImage(f *testing.F) {
	for _, s := range []string{"IMAGE", "quay.io/x/y:v1", "", "a@sha256:", "<i>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		if err := CheckImage(ref); err == nil && strings.TrimSpace(ref) != ref {
			t.Fatalf("%q accepted with surrounding space", ref)
		}
	})
}
