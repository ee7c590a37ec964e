package validate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/bridge/sidecar"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/manifest"
	"github.com/statuscheck/statuscheck/pkg/result"
)

// The checks of what the status source is made from beyond its CRD: the
// CSV's alm-examples, whether anything shows its CR exists, the install
// modes its RBAC must hold under, the container the bridge is declared in,
// and the apiserver's view of the condition's observedGeneration.

// almExamplesPath is where the CSV's alm-examples is written.
var almExamplesPath = manifest.NewPath("metadata", "annotations").Key("alm-examples")

// checkALMExamples: alm-examples that OLM's console and operator-sdk's
// validator cannot parse as JSON. An error when the status source's
// example would come from it (the CSV has no initialization resource of
// the status source's kind): then no example of the CR the gate reads is
// offered, checked (status-source-example-invalid) or derived from
// (generate); a warning otherwise, since the console merely shows no
// examples.
func checkALMExamples(ctx *Context) []Issue {
	if ctx.CSV == nil {
		return nil
	}
	err := bundle.ExamplesError(ctx.CSV.Obj)
	if err == nil {
		return nil
	}
	is := at(ctx.CSV.Doc, almExamplesPath, "the CSV's alm-examples is %v", err)
	ctx.almExamplesBreak(&is, err)
	switch {
	case !ctx.Resolvable():
		is.Message += ": the console offers no example CR to create"
		is.Severity = sev(result.Warning)
	case fromInitialization(bundle.StatusSourceExamples(ctx.CSV.Obj, ctx.Source)):
		is.Message += fmt.Sprintf(": the console offers no example CR to create (the status source's %s comes from the initialization resource, which is read)", ctx.Source.Kind)
		is.Severity = sev(result.Warning)
	default:
		is.Message += fmt.Sprintf(": the CSV has no initialization resource of %s, so the status source's example would come from alm-examples, and the console offers none to create", ctx.Source.Kind)
		if bundle.Examples(ctx.CSV.Obj) == nil {
			is.Message += "; statuscheck cannot read it either, so no example is checked (status-source-example-invalid) and `statuscheck generate` cannot derive the name from it"
		}
	}
	return []Issue{is}
}

// almExamplesBreak points is at where alm-examples, written as a literal
// block scalar, stops being a JSON list of objects: the character the JSON
// breaks at (its last one when a bracket, brace or string is not closed),
// or the first entry that is not an object. It leaves is at the
// annotation when that cannot be told exactly (manifest.BlockScalarPos).
func (ctx *Context) almExamplesBreak(is *Issue, err error) {
	raw := ctx.CSV.Obj.Annotations["alm-examples"]
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		off := int(syn.Offset) - 1 // the byte the parser stopped at
		if off >= len(raw) || off < 0 {
			off = len(strings.TrimRight(raw, " \t\r\n")) - 1
		}
		if pos, ok := ctx.CSV.Doc.LocateInString(almExamplesPath, off); ok {
			is.Pos = pos
		}
		return
	}
	var list []interface{}
	if json.Unmarshal([]byte(raw), &list) != nil {
		return
	}
	for i, e := range list {
		if _, ok := e.(map[string]interface{}); !ok {
			ctx.inExample(is, "alm-examples", manifest.Path{}.Index(i))
			return
		}
	}
}

func fromInitialization(examples []bundle.Example) bool {
	for _, e := range examples {
		if e.Index < 0 {
			return true
		}
	}
	return false
}

// checkMayNotExist: a status source with whenAbsent Allow whose CR nothing
// shows exists. OLM allows while there is no gate to read, so a CR no one
// creates is a gate that never blocks. Shown to exist: the CSV's
// initialization resource (the console creates it at install time;
// initialization-resource-mismatch compares it when it names another CR),
// or the operator creating it itself: its service account may create the
// kind and one of its deployment's containers is given the name (an
// argument or an environment value).
func checkMayNotExist(ctx *Context) []Issue {
	if ctx.CRD == nil || len(ctx.SourceProblems) > 0 || ctx.Source.Absent() != v1alpha1.WhenAbsentAllow {
		return nil
	}
	if _, ok := ctx.CSV.Obj.Annotations[v1alpha1.InitializationResourceKey]; ok {
		return nil
	}
	if operatorCreates(ctx) {
		return nil
	}
	src := ctx.Source
	sample := ""
	for _, e := range bundle.StatusSourceExamples(ctx.CSV.Obj, src) {
		if e.Index >= 0 && contract.RefOf(e.Object).Name == src.Name {
			sample = fmt.Sprintf(", and the name is %s entry %d, a sample the console offers, which users rename or never create", e.Key, e.Index+1)
			break
		}
	}
	return []Issue{{Pos: ctx.AnnotationPos(), Field: AnnotationPath.String() + ".name",
		Message: fmt.Sprintf("nothing in the bundle shows that %s %q, the CR the gate reads, is ever created: the CSV has no initialization resource (%s), no deployment of the operator that may create %s is given the name%s; with whenAbsent Allow the gate allows every upgrade while the CR does not exist, so if no one creates it, the gate never blocks",
			src.Kind, src.Name, v1alpha1.InitializationResourceKey, src.Kind, sample)}}
}

// operatorCreates says whether a deployment of the install strategy is
// shown to create the status source: its service account may create the
// kind, and one of its containers is given the name.
func operatorCreates(ctx *Context) bool {
	install := ctx.CSV.Obj.Spec.InstallStrategy.StrategySpec
	req := bundle.Request{Verb: "create", Group: ctx.CRD.Group(), Resource: ctx.CRD.Plural()}
	for _, d := range install.DeploymentSpecs {
		if !bundle.Grants(install, bundle.ServiceAccount(d), req, !ctx.CRD.Namespaced()) {
			continue
		}
		for _, c := range append(append([]corev1.Container{}, d.Spec.Template.Spec.InitContainers...), d.Spec.Template.Spec.Containers...) {
			if namesIt(c, ctx.Source.Name) {
				return true
			}
		}
	}
	return false
}

func namesIt(c corev1.Container, name string) bool {
	for _, a := range append(append([]string{}, c.Command...), c.Args...) {
		if a == name || strings.HasSuffix(a, "="+name) {
			return true
		}
	}
	for _, e := range c.Env {
		if e.Value == name {
			return true
		}
	}
	return false
}

// checkInstallModeRBAC holds the CSV's install modes against where the
// operator's permission to write the status source's /status comes from
// (sidecar.Modes says where OLM makes permissions reach, for the bridge's
// rules too). OLM v0 makes permissions Roles in the namespace the operator
// is installed in (pkg/controller/registry/resolver/rbac.go,
// RBACForClusterServiceVersion), copies them into each target namespace
// of a SingleNamespace or MultiNamespace OperatorGroup
// (pkg/controller/operators/olm/operatorgroup.go, ensureCSVsInNamespaces
// and ensureTenantRBAC), and lifts them to ClusterRoles only for an
// AllNamespaces one (ensureRBACInTargetNamespace, ensureSingletonRBAC);
// clusterPermissions are ClusterRoles under every mode. When the
// permission is only in permissions:
//
//   - a cluster-scoped kind is written only under AllNamespaces: every other
//     mode the CSV supports leaves the operator Forbidden (an error; with
//     AllNamespaces unsupported, status-rbac-missing reports it, and with
//     AllNamespaces the only mode, nothing is wrong);
//   - a namespaced kind in a pinned namespace is written only where a Role
//     is: the install namespace, a target namespace, or anywhere under
//     AllNamespaces. With OwnNamespace supported and neither
//     SingleNamespace nor MultiNamespace, no OperatorGroup makes the pinned
//     namespace a target but one in that namespace itself: installed in
//     OwnNamespace mode anywhere else, the operator cannot write its CR
//     (a warning, as status-source-namespace-pinned: installing there
//     works);
//   - a namespaced kind in the operator's namespace always has its Role.
func checkInstallModeRBAC(ctx *Context) []Issue {
	if ctx.CRD == nil || len(ctx.SourceProblems) > 0 {
		return nil
	}
	install := ctx.CSV.Obj.Spec.InstallStrategy.StrategySpec
	group, plural := ctx.CRD.Group(), ctx.CRD.Plural()
	grants := func(cluster bool) bool {
		for _, verb := range []string{"update", "patch"} {
			if bundle.Grants(install, "", bundle.Request{Verb: verb, Group: group, Resource: plural, Subresource: "status", Name: ctx.Source.Name}, cluster) {
				return true
			}
		}
		return false
	}
	if grants(true) || !grants(false) {
		return nil // a ClusterRole everywhere, or nothing (status-rbac-missing)
	}
	modes := sidecar.SupportedModes(ctx.CSV.Obj.Spec.InstallModes)
	if modes.Reach(ctx.CRD.Namespaced(), ctx.Source.Namespace) != sidecar.ReachSome {
		return nil // reached wherever installed, or nowhere (status-rbac-missing)
	}
	all := operatorsv1alpha1.InstallModeTypeAllNamespaces
	where := atKey(ctx.CSV.Doc, manifest.NewPath("spec", "installModes"), "")
	if !ctx.CRD.Namespaced() {
		others := modes.Others()
		where.Message = fmt.Sprintf("the permission to write %s/status in group %s is only in the install strategy's permissions, which OLM makes Roles in the install and target namespaces and lifts to ClusterRoles only under AllNamespaces; %s is cluster-scoped, so installed in %s mode, which the CSV supports, the operator cannot write its status source's status (Forbidden) and never reports %s",
			plural, group, ctx.Source.Kind, strings.Join(others, " or "), contract.ConditionUpgradeable)
		return []Issue{where}
	}
	pinned := ctx.Source.Namespace
	if !modes[operatorsv1alpha1.InstallModeTypeOwnNamespace] ||
		modes[operatorsv1alpha1.InstallModeTypeSingleNamespace] || modes[operatorsv1alpha1.InstallModeTypeMultiNamespace] {
		return nil
	}
	also := ""
	if modes[all] {
		also = " (under AllNamespaces OLM lifts them to ClusterRoles, which reach it)"
	}
	where.Message = fmt.Sprintf("the status source pins namespace %q, and the permission to write %s/status in group %s is only in the install strategy's permissions, which OLM makes Roles in the install namespace and the OperatorGroup's target namespaces; the CSV supports OwnNamespace but neither SingleNamespace nor MultiNamespace, so no OperatorGroup makes %q a target unless the operator is installed there: installed in OwnNamespace mode in any other namespace, it cannot write its status source's status (Forbidden)%s",
		pinned, plural, group, pinned, also)
	where.Severity = sev(result.Warning)
	return []Issue{where}
}

// bridgeCommand: the declared bridge container does not run `statuscheck
// bridge` (part of bridge-container-missing: no container runs the
// bridge, so nothing writes the OperatorCondition).
func bridgeCommand(ctx *Context, dep, ctr int) []Issue {
	c := ctx.CSV.Obj.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[dep].Spec.Template.Spec.Containers[ctr]
	field, err := sidecar.RunsBridge(c)
	p := manifest.NewPath("spec", "install", "spec", "deployments").Index(dep).Child("spec", "template", "spec", "containers").Index(ctr)
	if err == nil {
		// A container whose image cannot be pulled never runs.
		if err := sidecar.CheckImage(c.Image); err != nil {
			return []Issue{atKey(ctx.CSV.Doc, p.Child("image"), "container %q of deployment %q is declared to run the bridge (%s), but the kubelet cannot pull its image (%v): nothing runs the bridge, so nothing writes the OperatorCondition",
				c.Name, ctx.CSV.Obj.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[dep].Name, sidecar.AnnotationKey, err)}
		}
		return nil
	}
	if field != "" {
		p = p.Child(field)
	} else {
		p = p.Child("name")
	}
	return []Issue{atKey(ctx.CSV.Doc, p, "container %q of deployment %q is declared to run the bridge (%s), but %v: nothing runs the bridge, so nothing writes the OperatorCondition",
		c.Name, ctx.CSV.Obj.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[dep].Name, sidecar.AnnotationKey, err)}
}

// unverifiedObservedGeneration: the condition's observedGeneration comes
// back from the status write only because the CRD keeps every unknown
// field (spec.preserveUnknownFields, which an apiextensions.k8s.io/v1beta1
// CRD defaults to true): the apiserver keeps any value there (probe 1
// with an object for it), and with the field false, as every v1 CRD
// created today has it, it prunes the condition's observedGeneration
// (probeResults.ogKeptOnlyByCRD). That is conditions-schema-missing's
// "cannot be verified" for x-kubernetes-preserve-unknown-fields on
// status, one level down: a warning. Not said again when the conditions
// themselves cannot be verified.
func unverifiedObservedGeneration(ctx *Context, r *probeResults, where manifest.Path) []Issue {
	if !r.ogKeptOnlyByCRD || r.anyConditions {
		return nil
	}
	why := "spec.preserveUnknownFields is true"
	if ctx.CRD.V1beta1 != nil && ctx.CRD.V1beta1.Spec.PreserveUnknownFields == nil {
		why = "spec.preserveUnknownFields is not set, and an apiextensions.k8s.io/v1beta1 CRD defaults it to true"
	}
	also := ""
	if r.statusOGKept {
		also = "; status.observedGeneration alone satisfies only the strict policy"
	}
	is := atKey(ctx.CRD.Doc, where,
		"the apiserver keeps any value of the condition's observedGeneration (an object written there comes back): version %s of CRD %s does not describe it, and keeps it only because %s, so the CRD keeps every unknown field; pruned, as with spec.preserveUnknownFields false (every apiextensions.k8s.io/v1 CRD created today), it is dropped and OLM's gate would never open, so whether an outdated %s=True can be told from a fresh one cannot be verified%s",
		ctx.Version.Name, ctx.CRD.Name(), why, contract.ConditionUpgradeable, also)
	is.Severity = sev(result.Warning)
	return []Issue{is}
}
