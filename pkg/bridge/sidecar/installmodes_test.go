package sidecar

import (
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/stretchr/testify/assert"
)

// TestModesReach is docs/contract.md's table "Where the operator may
// write its CR", for a rule only in permissions: OLM makes them Roles in
// the install and target namespaces and lifts them to ClusterRoles under
// AllNamespaces.
func TestModesReach(t *testing.T) {
	own, single, all := operatorsv1alpha1.InstallModeTypeOwnNamespace, operatorsv1alpha1.InstallModeTypeSingleNamespace, operatorsv1alpha1.InstallModeTypeAllNamespaces
	tests := []struct {
		name       string
		modes      []operatorsv1alpha1.InstallModeType
		namespaced bool
		pinned     string
		want       Reach
	}{
		{name: "the operator's namespace, any modes", modes: []operatorsv1alpha1.InstallModeType{own}, namespaced: true, want: ReachAll},
		{name: "the operator's namespace, no modes", namespaced: true, want: ReachAll},
		{name: "pinned, AllNamespaces only", modes: []operatorsv1alpha1.InstallModeType{all}, namespaced: true, pinned: "p", want: ReachAll},
		{name: "pinned, SingleNamespace", modes: []operatorsv1alpha1.InstallModeType{single}, namespaced: true, pinned: "p", want: ReachSome},
		{name: "pinned, OwnNamespace and AllNamespaces", modes: []operatorsv1alpha1.InstallModeType{own, all}, namespaced: true, pinned: "p", want: ReachSome},
		{name: "cluster-scoped, AllNamespaces only", modes: []operatorsv1alpha1.InstallModeType{all}, want: ReachAll},
		{name: "cluster-scoped, AllNamespaces and others", modes: []operatorsv1alpha1.InstallModeType{own, single, all}, want: ReachSome},
		{name: "cluster-scoped, no AllNamespaces", modes: []operatorsv1alpha1.InstallModeType{own, single}, want: ReachNone},
		{name: "cluster-scoped, no modes", want: ReachNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := SupportedModes(installModes(tt.modes...))
			assert.Equal(t, tt.want, m.Reach(tt.namespaced, tt.pinned))
			assert.Equal(t, tt.want == ReachAll, m.NotReached(tt.namespaced, tt.pinned) == "")
		})
	}
}
