package sidecar

import (
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

func TestNeedsAndMissing(t *testing.T) {
	src := &v1alpha1.StatusSource{APIVersion: "cool.io/v1", Kind: "Cool", Name: "cool"}
	ack := &v1alpha1.StatusSource{APIVersion: "cool.io/v1", Kind: "Cool", Name: "cool",
		Handshake: &v1alpha1.Handshake{Mode: v1alpha1.HandshakeRequestAck, Request: &v1alpha1.HandshakeRequest{SpecPath: ".spec.upgradeRequest"}}}
	pinned := &v1alpha1.StatusSource{APIVersion: "cool.io/v1", Kind: "Cool", Name: "cool", Namespace: "elsewhere"}
	rule := func(group, resource string, verbs ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: verbs}
	}
	perms := func(sa string, rules ...rbacv1.PolicyRule) []operatorsv1alpha1.StrategyDeploymentPermissions {
		return []operatorsv1alpha1.StrategyDeploymentPermissions{{ServiceAccountName: sa, Rules: rules}}
	}
	tests := []struct {
		name       string
		src        *v1alpha1.StatusSource
		namespaced bool
		install    operatorsv1alpha1.StrategyDetailsDeployment
		want       []string
	}{
		{name: "nothing granted", src: src, namespaced: true,
			want: []string{`get on clusterserviceversions.operators.coreos.com ("cool.v1")`, `get, watch on cools.cool.io ("cool")`}},
		{name: "everything granted", src: src, namespaced: true,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("op", rule("operators.coreos.com", "clusterserviceversions", "get"), rule("cool.io", "cools", "*"))}},
		{name: "granted to another account", src: src, namespaced: true,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("other", rule("*", "*", "*"))},
			want:    []string{`get on clusterserviceversions.operators.coreos.com ("cool.v1")`, `get, watch on cools.cool.io ("cool")`}},
		{name: "RequestAck lists CSVs, which resourceNames cannot grant", src: ack, namespaced: true,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("op",
				rbacv1.PolicyRule{APIGroups: []string{"operators.coreos.com"}, Resources: []string{"clusterserviceversions"}, ResourceNames: []string{"cool.v1"}, Verbs: []string{"get", "list", "watch"}},
				rule("cool.io", "cools", "get", "watch"))},
			want: []string{`get, list, watch on clusterserviceversions.operators.coreos.com`, `patch on cools.cool.io ("cool")`}},
		{name: "a cluster-scoped kind in namespaced permissions", src: src, namespaced: false,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("op", rule("*", "*", "*"))},
			want:    []string{`get, watch on cools.cool.io ("cool")`}},
		{name: "a pinned namespace in clusterPermissions", src: pinned, namespaced: true,
			install: operatorsv1alpha1.StrategyDetailsDeployment{Permissions: perms("op", rule("operators.coreos.com", "clusterserviceversions", "get")),
				ClusterPermissions: perms("op", rule("cool.io", "cools", "get", "watch"))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, m := range Missing(tt.install, "op", Needs(tt.src, "cool.v1", "cools", tt.namespaced)) {
				got = append(got, m.Describe())
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestPortsAvoidThePodsOwn(t *testing.T) {
	pod := corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Ports: []corev1.ContainerPort{{ContainerPort: 8383}, {ContainerPort: 8384}, {ContainerPort: 8385}}}}}
	m, p := Ports(pod)
	assert.Equal(t, 8386, m)
	assert.Equal(t, 8387, p)
	c := Container("img", m, p)
	assert.Equal(t, []string{"bridge", "--metrics-bind-address=:8386", "--health-probe-bind-address=:8387"}, c.Args)
	assert.Equal(t, int32(8387), c.LivenessProbe.HTTPGet.Port.IntVal)
	m, p = Ports(corev1.PodSpec{})
	assert.Equal(t, []string{"bridge"}, Container("img", m, p).Args)
}
