package sidecar

import (
	"fmt"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
)

// Where OLM v0 makes the install strategy's RBAC reach, by install mode:
// the one place validate's rules for the operator's permission
// (status-rbac-missing, status-rbac-install-mode) and the bridge's
// (Bridge.Needs, Bridge.Broad: bridge-rbac-missing, bridge-rbac-broad,
// generate --bridge) read it from (docs/contract.md, "Where the operator
// may write its CR").
//
// clusterPermissions become ClusterRoles under every install mode.
// permissions become Roles in the namespace the operator is installed in
// (operator-lifecycle-manager v0.46.0,
// pkg/controller/registry/resolver/rbac.go, RBACForClusterServiceVersion);
// for a SingleNamespace or MultiNamespace OperatorGroup OLM copies them
// into each target namespace (pkg/controller/operators/olm/operatorgroup.go,
// ensureCSVsInNamespaces and ensureTenantRBAC), and for an AllNamespaces
// one it lifts them to ClusterRoles and ClusterRoleBindings
// (ensureRBACInTargetNamespace, ensureSingletonRBAC, which copies the
// Roles' rules verbatim, so they reach cluster-scoped resources too).

// Modes are the install modes a CSV supports.
type Modes map[operatorsv1alpha1.InstallModeType]bool

// SupportedModes are the modes of spec.installModes marked supported.
func SupportedModes(modes []operatorsv1alpha1.InstallMode) Modes {
	out := Modes{}
	for _, m := range modes {
		if m.Supported {
			out[m.Type] = true
		}
	}
	return out
}

// namespaceModes are the modes under which permissions stay Roles.
var namespaceModes = []operatorsv1alpha1.InstallModeType{operatorsv1alpha1.InstallModeTypeOwnNamespace, operatorsv1alpha1.InstallModeTypeSingleNamespace, operatorsv1alpha1.InstallModeTypeMultiNamespace}

// Others are the supported modes under which OLM keeps permissions Roles
// (OwnNamespace, SingleNamespace, MultiNamespace), in that order.
func (m Modes) Others() []string {
	var out []string
	for _, t := range namespaceModes {
		if m[t] {
			out = append(out, string(t))
		}
	}
	return out
}

// Lifted says OLM makes permissions ClusterRoles wherever the operator is
// installed: AllNamespaces is the only mode the CSV supports, so a rule
// there grants what the same rule in clusterPermissions does.
func (m Modes) Lifted() bool {
	return m[operatorsv1alpha1.InstallModeTypeAllNamespaces] && len(m.Others()) == 0
}

// Reach is how far the install strategy's permissions reach an object,
// over the install modes a CSV supports.
type Reach int

const (
	// ReachNone: under no supported mode (a cluster-scoped resource
	// without AllNamespaces); only clusterPermissions grant it.
	ReachNone Reach = iota
	// ReachSome: under some modes or installs only: a cluster-scoped
	// resource with AllNamespaces beside other modes (Roles under those
	// cannot reach it), or a pinned namespace, which a Role reaches only
	// when it is the install namespace or a target namespace.
	ReachSome
	// ReachAll: wherever the operator is installed: a namespaced resource
	// in the operator's namespace, or AllNamespaces the only mode (the
	// lifted ClusterRoles reach everything).
	ReachAll
)

// Reach says how far permissions reach an object of a resource: a
// namespaced one in namespace pinned ("" is the operator's namespace), or
// a cluster-scoped one (pinned is then ignored).
func (m Modes) Reach(namespaced bool, pinned string) Reach {
	switch {
	case namespaced && pinned == "", m.Lifted():
		return ReachAll
	case namespaced, m[operatorsv1alpha1.InstallModeTypeAllNamespaces]:
		return ReachSome
	}
	return ReachNone
}

// NotReached says why permissions do not reach such an object under every
// install mode the CSV supports, as a clause (what a rule that must be in
// clusterPermissions says in parentheses); "" where they do.
func (m Modes) NotReached(namespaced bool, pinned string) string {
	switch m.Reach(namespaced, pinned) {
	case ReachAll:
		return ""
	case ReachNone:
		return "the kind is cluster-scoped, so namespaced permissions cannot grant it: OLM lifts them to ClusterRoles only under AllNamespaces, which the CSV does not support"
	}
	if !namespaced {
		return fmt.Sprintf("the kind is cluster-scoped: OLM lifts permissions to ClusterRoles only under AllNamespaces, and installed in %s mode, which the CSV supports too, they stay Roles, which cannot grant it", strings.Join(m.Others(), " or "))
	}
	return fmt.Sprintf("the status source pins namespace %q: permissions are Roles in the install and target namespaces, which reach it only where the operator is installed in it or targets it, unless AllNamespaces is the CSV's only install mode (OLM then lifts them to ClusterRoles)", pinned)
}
