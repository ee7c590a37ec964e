package bundle

import (
	"slices"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// ServiceAccount is the service account a deployment of the install
// strategy runs as: its pod template's, else "default", as the apiserver
// defaults it.
func ServiceAccount(d operatorsv1alpha1.StrategyDeploymentSpec) string {
	if sa := d.Spec.Template.Spec.ServiceAccountName; sa != "" {
		return sa
	}
	return "default"
}

// Request is one API request to authorize against a CSV's install
// strategy: verb on group/resource (and subresource) for the named object
// ("" when it lists or watches the whole resource).
type Request struct {
	Verb, Group, Resource, Subresource, Name string
}

// RuleAllows reports whether an RBAC rule grants the request, following
// Kubernetes' pkg/apis/rbac/v1/evaluation_helpers.go (VerbMatches,
// APIGroupMatches, ResourceMatches, ResourceNameMatches): "*" matches any
// verb, group or resource, "*/status" matches the status subresource of
// any resource, and resourceNames, when set, must list the object.
func RuleAllows(r rbacv1.PolicyRule, req Request) bool {
	if !slices.Contains(r.Verbs, rbacv1.VerbAll) && !slices.Contains(r.Verbs, req.Verb) {
		return false
	}
	if !slices.Contains(r.APIGroups, rbacv1.APIGroupAll) && !slices.Contains(r.APIGroups, req.Group) {
		return false
	}
	combined := req.Resource
	if req.Subresource != "" {
		combined += "/" + req.Subresource
	}
	resOK := false
	for _, res := range r.Resources {
		if res == rbacv1.ResourceAll || res == combined || (req.Subresource != "" && res == "*/"+req.Subresource) {
			resOK = true
		}
	}
	if !resOK {
		return false
	}
	return len(r.ResourceNames) == 0 || (req.Name != "" && slices.Contains(r.ResourceNames, req.Name))
}

// Grants reports whether the install strategy grants the request to the
// service account sa (any of the strategy's deployments' accounts when sa
// is empty). permissions become Roles in the operator's namespace, so only
// clusterPermissions (ClusterRoles) reach what cluster says is outside it.
func Grants(install operatorsv1alpha1.StrategyDetailsDeployment, sa string, req Request, cluster bool) bool {
	accounts := map[string]bool{}
	if sa != "" {
		accounts[sa] = true
	} else {
		for _, d := range install.DeploymentSpecs {
			accounts[ServiceAccount(d)] = true
		}
	}
	in := func(perms []operatorsv1alpha1.StrategyDeploymentPermissions) bool {
		for _, p := range perms {
			if len(accounts) > 0 && !accounts[p.ServiceAccountName] {
				continue
			}
			for _, r := range p.Rules {
				if RuleAllows(r, req) {
					return true
				}
			}
		}
		return false
	}
	return in(install.ClusterPermissions) || (!cluster && in(install.Permissions))
}
