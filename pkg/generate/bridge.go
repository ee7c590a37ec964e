package generate

import (
	"fmt"
	"strconv"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/bridge/sidecar"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/crd"
)

// Bridge asks for the bridge in the CSV (generate --bridge).
type Bridge struct {
	// Image runs `statuscheck bridge`.
	Image string
	// Deployment is the install strategy's deployment the sidecar joins;
	// empty: the declared one, else the only one.
	Deployment string
	// MetricsSecure has the sidecar serve its metrics off localhost, behind
	// the apiserver's authentication and authorization
	// (sidecar.Options.SecureMetrics); only for a container it adds.
	MetricsSecure bool
}

// policyRule is an RBAC rule in the order Kubernetes' tools write it
// (kubebuilder's role.yaml): groups, resources, verbs.
type policyRule struct {
	APIGroups     []string `json:"apiGroups"`
	Resources     []string `json:"resources"`
	ResourceNames []string `json:"resourceNames,omitempty"`
	Verbs         []string `json:"verbs"`
}

type permission struct {
	ServiceAccountName string       `json:"serviceAccountName"`
	Rules              []policyRule `json:"rules"`
}

var installSpec = []string{"spec", "install", "spec"}

func path(tokens ...string) []string {
	return append(append([]string{}, installSpec...), tokens...)
}

// BridgeOps plans what the bridge needs in the CSV, as ops on its
// document (obj is the CSV as parsed, csv the same decoded): the sidecar
// container (sidecar.Container) in the chosen deployment, or its image
// updated and the status source's variable (sidecar.StatusSourceEnv) added
// to it when it lacks one; the rules sidecar.Bridge.Needs lists that the
// deployment's service account is not granted yet (sidecar.Missing), by
// name, in a permissions entry of that account (clusterPermissions where
// permissions do not reach the object under every install mode the CSV
// supports, sidecar.Modes.Reach: a cluster-scoped kind or a pinned
// namespace, unless AllNamespaces is the only mode, under which OLM lifts
// permissions to ClusterRoles); and the declaration, which
// the caller writes as an annotation. Nothing is planned for what is
// already there, so a second run plans nothing. A status source with the
// OperatorCondition handshake is refused (sidecar.OneWriter).
func BridgeOps(obj map[string]interface{}, csv *operatorsv1alpha1.ClusterServiceVersion, src *v1alpha1.StatusSource, c *crd.CRD, b Bridge) ([]Op, sidecar.Declaration, error) {
	if err := sidecar.OneWriter(src); err != nil {
		return nil, sidecar.Declaration{}, fmt.Errorf("--bridge: %w", err)
	}
	if err := sidecar.CheckImage(b.Image); err != nil {
		return nil, sidecar.Declaration{}, fmt.Errorf("--bridge %s: %w; nothing written", b.Image, err)
	}
	install := csv.Spec.InstallStrategy.StrategySpec
	if len(install.DeploymentSpecs) == 0 {
		return nil, sidecar.Declaration{}, fmt.Errorf("the CSV has no deployments in its install strategy (an operator-sdk base CSV?): the bridge goes into the bundle's CSV that `make bundle` writes; run generate --bridge on that bundle")
	}
	if c == nil {
		return nil, sidecar.Declaration{}, fmt.Errorf("--bridge needs the CRD of %s (its resource and scope decide the bridge's RBAC); pass --crd", src.Kind)
	}
	decl := sidecar.Declaration{Deployment: b.Deployment, Container: sidecar.ContainerName}
	if old, err := sidecar.Declared(csv); err == nil && old != nil {
		if decl.Deployment == "" {
			decl.Deployment = old.Deployment
		}
		if decl.Deployment == old.Deployment {
			decl.Container = old.Container
		}
	}
	dep := -1
	var names []string
	for i, d := range install.DeploymentSpecs {
		names = append(names, strconv.Quote(d.Name))
		if d.Name == decl.Deployment {
			dep = i
		}
	}
	switch {
	case decl.Deployment == "" && len(install.DeploymentSpecs) == 1:
		dep, decl.Deployment = 0, install.DeploymentSpecs[0].Name
	case decl.Deployment == "":
		var flags []string
		for _, d := range install.DeploymentSpecs {
			flags = append(flags, "--bridge-deployment "+d.Name)
		}
		return nil, decl, &AmbiguousError{Reason: fmt.Sprintf("the install strategy has %d deployments; add --bridge-deployment with the operator's (the one that writes %s's status), which the bridge joins", len(names), src.Kind), Candidates: flags}
	case dep < 0:
		return nil, decl, fmt.Errorf("the install strategy has no deployment %q (it has %s)", decl.Deployment, strings.Join(names, ", "))
	}
	d := install.DeploymentSpecs[dep]
	containers := path("deployments", strconv.Itoa(dep), "spec", "template", "spec", "containers")
	var ops []Op
	var bridgeContainer *corev1.Container
	for j, ctr := range d.Spec.Template.Spec.Containers {
		if ctr.Name != decl.Container {
			continue
		}
		at := append(append([]string{}, containers...), strconv.Itoa(j))
		if b.MetricsSecure && !sidecar.SecureMetrics(ctr) {
			return nil, decl, fmt.Errorf("deployment %q already has the bridge's container %q, without --%s: generate adds the container but does not rewrite it; take it out and run generate --bridge again", decl.Deployment, ctr.Name, sidecar.FlagMetricsSecure)
		}
		if ctr.Image != b.Image {
			ops = append(ops, Op{Path: append(append([]string{}, at...), "image"), Value: b.Image})
		}
		bridgeContainer = ctr.DeepCopy()
		if !sidecar.SourceFromEnv(ctr) {
			// A container an older generate wrote reads the running
			// CSV; the variable spares it that permission.
			env := append(append([]string{}, at...), "env")
			if ctr.Env == nil { // absent or null
				ops = append(ops, Op{Path: env, Value: []corev1.EnvVar{sidecar.StatusSourceEnv()}})
			} else {
				ops = append(ops, Op{Path: append(env, "-"), Value: sidecar.StatusSourceEnv()})
			}
			bridgeContainer.Env = append(bridgeContainer.Env, sidecar.StatusSourceEnv())
		}
	}
	if bridgeContainer == nil {
		metrics, probe := sidecar.Ports(d.Spec.Template.Spec)
		ctr := sidecar.Container(sidecar.Options{Image: b.Image, MetricsPort: metrics, ProbePort: probe, SecureMetrics: b.MetricsSecure})
		ops = append(ops, Op{Path: append(containers, "-"), Value: ctr})
		bridgeContainer = &ctr
	}

	sa := bundle.ServiceAccount(d)
	needs := sidecar.Bridge{Source: src, CSV: csv.Name, Plural: c.Plural(), Namespaced: c.Namespaced(), Container: *bridgeContainer, InstallModes: csv.Spec.InstallModes}.Needs()
	missing := sidecar.Missing(install, sa, needs)
	for _, cluster := range []bool{false, true} {
		var rules []policyRule
		for _, m := range missing {
			if m.Cluster == cluster {
				rules = append(rules, policyRule{APIGroups: m.APIGroups, Resources: m.Resources, ResourceNames: m.ResourceNames, Verbs: m.Verbs})
			}
		}
		if len(rules) > 0 {
			ops = append(ops, permissionOps(obj, sidecar.Field(cluster), sa, rules)...)
		}
	}
	return ops, decl, nil
}

// permissionOps adds rules to sa's entry of install.spec[key], creating
// what is not there: the rules list, the entry, or the list of entries.
func permissionOps(obj map[string]interface{}, key, sa string, rules []policyRule) []Op {
	spec := nested(obj, installSpec...)
	list, ok := spec[key].([]interface{})
	if !ok { // absent or null
		return []Op{{Path: path(key), Value: []permission{{ServiceAccountName: sa, Rules: rules}}}}
	}
	for i, e := range list {
		entry, _ := e.(map[string]interface{})
		if entry == nil || entry["serviceAccountName"] != sa {
			continue
		}
		if _, ok := entry["rules"].([]interface{}); !ok {
			return []Op{{Path: path(key, strconv.Itoa(i), "rules"), Value: rules}}
		}
		ops := make([]Op, len(rules))
		for j, r := range rules {
			ops[j] = Op{Path: path(key, strconv.Itoa(i), "rules", "-"), Value: r}
		}
		return ops
	}
	return []Op{{Path: path(key, "-"), Value: permission{ServiceAccountName: sa, Rules: rules}}}
}

func nested(obj map[string]interface{}, keys ...string) map[string]interface{} {
	for _, k := range keys {
		obj, _ = obj[k].(map[string]interface{})
	}
	return obj
}
