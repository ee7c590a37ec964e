package validate

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/manifest"
	"github.com/statuscheck/statuscheck/pkg/result"
)

func checkMissing(ctx *Context) []Issue {
	if ctx.CSV == nil || ctx.HasAnnotation {
		return nil
	}
	msg := fmt.Sprintf("the ClusterServiceVersion %q declares no status source (annotation %s); OLM will gate upgrades on its OperatorCondition only", ctx.CSV.Obj.Name, contract.AnnotationKey)
	if init, ok := ctx.CSV.Obj.Annotations[contract.InitializationResourceKey]; ok {
		if obj, err := contract.ParseObjectRef(init); err == nil && obj.Kind != "" && ownedGroupKind(ctx.CSV.Obj, obj.Group, obj.Kind) {
			msg += fmt.Sprintf("; its initialization resource %s %q is a candidate (statuscheck generate derives it)", obj.Kind, obj.Name)
		}
	}
	is := atKey(ctx.CSV.Doc, manifest.NewPath("metadata", "annotations"), "%s", msg)
	if ctx.Options.RequireStatusSource {
		is.Severity = sev(result.Error)
		is.Message += " (--require-status-source)"
	}
	return []Issue{is}
}

func checkInvalid(ctx *Context) []Issue {
	if ctx.CSV == nil || !ctx.HasAnnotation {
		return nil
	}
	pos := ctx.AnnotationPos()
	var out []Issue
	for _, p := range ctx.SourceProblems {
		field := AnnotationPath.String()
		if p.Field != "" {
			field += "." + p.Field
		}
		out = append(out, Issue{Pos: pos, Field: field, Message: "status-source annotation: " + p.String()})
	}
	return out
}

// ownedGroupKind reports whether the CSV owns group/kind. An owned entry's
// name is PLURAL.GROUP, as OLM requires.
func ownedGroupKind(csv *v1alpha1.ClusterServiceVersion, group, kind string) bool {
	for _, o := range csv.Spec.CustomResourceDefinitions.Owned {
		_, g, _ := strings.Cut(o.Name, ".")
		if o.Kind == kind && g == group {
			return true
		}
	}
	return false
}

func checkNotOwned(ctx *Context) []Issue {
	if !ctx.Resolvable() {
		return nil
	}
	gv := ctx.Source.GroupVersion()
	if ownedGroupKind(ctx.CSV.Obj, gv.Group, ctx.Source.Kind) {
		return nil
	}
	var owned []string
	for _, o := range ctx.CSV.Obj.Spec.CustomResourceDefinitions.Owned {
		owned = append(owned, o.Kind+" ("+o.Name+")")
	}
	have := "owns no CRDs"
	if len(owned) > 0 {
		have = "owns " + strings.Join(dedupe(owned), ", ")
	}
	for _, r := range ctx.CSV.Obj.Spec.CustomResourceDefinitions.Required {
		if _, g, _ := strings.Cut(r.Name, "."); r.Kind == ctx.Source.Kind && g == gv.Group {
			have += fmt.Sprintf(" (it lists %s under required: a CRD another operator provides)", r.Kind)
			break
		}
	}
	return []Issue{atKey(ctx.CSV.Doc, manifest.NewPath("spec", "customresourcedefinitions", "owned"),
		"status source %s in group %s is not an owned CRD of the CSV, which %s", ctx.Source.Kind, gv.Group, have)}
}

func checkCRDMissing(ctx *Context) []Issue {
	if !ctx.Resolvable() || ctx.CRD != nil {
		return nil
	}
	gv := ctx.Source.GroupVersion()
	var have []string
	for _, c := range ctx.Bundle.CRDs {
		have = append(have, c.Kind()+"."+c.Group())
	}
	list := "the bundle has no CRDs"
	if len(have) > 0 {
		sort.Strings(have)
		list = "CRDs in the bundle: " + strings.Join(have, ", ")
	}
	return []Issue{{Pos: ctx.AnnotationPos(), Field: AnnotationPath.String() + ".kind",
		Message: fmt.Sprintf("no CustomResourceDefinition in the bundle defines kind %s in group %s (%s)", ctx.Source.Kind, gv.Group, list)}}
}

func checkVersionNotServed(ctx *Context) []Issue {
	if ctx.CRD == nil {
		return nil
	}
	gv := ctx.Source.GroupVersion()
	if ctx.Version == nil {
		var names []string
		for _, v := range ctx.CRD.Versions() {
			names = append(names, v.Name)
		}
		is := Issue{Pos: ctx.AnnotationPos(), Field: AnnotationPath.String() + ".apiVersion",
			Message: fmt.Sprintf("CRD %s has no version %s (it has %s)", ctx.CRD.Name(), gv.Version, strings.Join(names, ", "))}
		return []Issue{is}
	}
	if !ctx.Version.Served {
		return []Issue{at(ctx.CRD.Doc, ctx.Version.Path.Child("served"),
			"version %s of CRD %s is not served, so the status source %s cannot be read", gv.Version, ctx.CRD.Name(), ctx.Source.APIVersion)}
	}
	return nil
}

func checkScope(ctx *Context) []Issue {
	if ctx.CRD == nil || ctx.Source.Namespace == "" || ctx.CRD.Namespaced() {
		return nil
	}
	return []Issue{{Pos: ctx.AnnotationPos(), Field: AnnotationPath.String() + ".namespace",
		Message: fmt.Sprintf("namespace %q is given, but %s is cluster-scoped (CRD %s has scope: Cluster)", ctx.Source.Namespace, ctx.Source.Kind, ctx.CRD.Name())}}
}

func checkNamespacePinned(ctx *Context) []Issue {
	if ctx.CRD == nil || ctx.Source.Namespace == "" || !ctx.CRD.Namespaced() {
		return nil
	}
	absent := "Allow, so the gate is silently off"
	if ctx.Source.Absent() == contract.WhenAbsentBlock {
		absent = "Block, so every upgrade is held"
	}
	return []Issue{{Pos: ctx.AnnotationPos(), Field: AnnotationPath.String() + ".namespace",
		Message: fmt.Sprintf("the status source pins namespace %q: installed in any other namespace, the gate reads a %s that does not exist there, and whenAbsent is %s", ctx.Source.Namespace, ctx.Source.Kind, absent)}}
}

func checkSubresource(ctx *Context) []Issue {
	if ctx.Version == nil || ctx.Version.StatusSubresource {
		return nil
	}
	where := "spec.versions[].subresources.status"
	if ctx.CRD.V1beta1 != nil {
		where = "spec.subresources.status (or spec.versions[].subresources.status)"
	}
	return []Issue{atKey(ctx.CRD.Doc, ctx.Version.SubresourcesPath.Child("status"),
		"version %s of CRD %s has no status subresource (%s): every status write then bumps metadata.generation, so observedGeneration can never catch up", ctx.Version.Name, ctx.CRD.Name(), where)}
}

// conditionsSchema finds status.conditions in the version's schema. state
// says what was found.
type schemaState int

const (
	schemaOK schemaState = iota
	schemaUnverifiable
	schemaMissing
)

type conditionsInfo struct {
	state  schemaState
	why    string
	status *apiextv1.JSONSchemaProps
	conds  *apiextv1.JSONSchemaProps
	items  *apiextv1.JSONSchemaProps
	// path is the deepest schema path that exists on the way.
	path manifest.Path
}

func preserves(s *apiextv1.JSONSchemaProps) bool {
	return s != nil && s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
}

// conditions is where status.conditions stands in the version's schema,
// worked out once per bundle for the four checks that read it.
func (ctx *Context) conditions() conditionsInfo {
	if ctx.conds == nil {
		ci := ctx.findConditions()
		if ci.state == schemaMissing && ctx.CRD.V1.Spec.PreserveUnknownFields {
			// apiextensions.k8s.io/v1beta1 defaults spec.preserveUnknownFields
			// to true: the apiserver prunes nothing and keeps any status.
			ci.state = schemaUnverifiable
			ci.why += " and the CRD keeps unknown fields (spec.preserveUnknownFields, true by default in apiextensions.k8s.io/v1beta1)"
		}
		ctx.conds = &ci
	}
	return *ctx.conds
}

func (ctx *Context) findConditions() conditionsInfo {
	v := ctx.Version
	ci := conditionsInfo{path: v.SchemaPath}
	root := v.Schema
	if root == nil {
		ci.state, ci.why = schemaUnverifiable, "the version has no openAPIV3Schema (the apiserver keeps any status)"
		if ctx.CRD.V1beta1 == nil {
			ci.path = v.Path
		}
		return ci
	}
	status, ok := root.Properties["status"]
	if !ok {
		if preserves(root) {
			ci.state, ci.why = schemaUnverifiable, "the schema preserves unknown fields and does not describe status"
		} else {
			ci.state, ci.why = schemaMissing, "the schema has no status property"
		}
		ci.path = v.SchemaPath.Child("properties")
		return ci
	}
	ci.status = &status
	ci.path = v.SchemaPath.Child("properties", "status")
	conds, ok := status.Properties["conditions"]
	if !ok {
		if preserves(&status) {
			ci.state, ci.why = schemaUnverifiable, "status is x-kubernetes-preserve-unknown-fields and does not describe conditions"
		} else {
			ci.state, ci.why = schemaMissing, "status has no conditions property"
		}
		return ci
	}
	ci.conds = &conds
	ci.path = ci.path.Child("properties", "conditions")
	if conds.Type != "array" {
		ci.state, ci.why = schemaMissing, fmt.Sprintf("status.conditions is of type %q, not an array", conds.Type)
		return ci
	}
	if conds.Items == nil || conds.Items.Schema == nil {
		ci.state, ci.why = schemaMissing, "status.conditions has no items schema"
		return ci
	}
	items := conds.Items.Schema
	ci.items = items
	if items.Type != "object" {
		ci.state, ci.why = schemaMissing, fmt.Sprintf("status.conditions items are of type %q, not objects", items.Type)
		ci.path = ci.path.Child("items")
		return ci
	}
	return ci
}

func checkConditionsSchema(ctx *Context) []Issue {
	if ctx.Version == nil {
		return nil
	}
	ci := ctx.conditions()
	switch ci.state {
	case schemaMissing:
		return []Issue{atKey(ctx.CRD.Doc, ci.path, "version %s of CRD %s: %s; the gate has no conditions to read", ctx.Version.Name, ctx.CRD.Name(), ci.why)}
	case schemaUnverifiable:
		is := atKey(ctx.CRD.Doc, ci.path, "version %s of CRD %s: %s, so status.conditions cannot be verified", ctx.Version.Name, ctx.CRD.Name(), ci.why)
		is.Severity = sev(result.Warning)
		return []Issue{is}
	}
	return nil
}

func isInteger(s apiextv1.JSONSchemaProps) bool { return s.Type == "integer" }

func checkObservedGeneration(ctx *Context) []Issue {
	if ctx.Version == nil {
		return nil
	}
	ci := ctx.conditions()
	if ci.state != schemaOK {
		return nil
	}
	itemsPath := ci.path.Child("items", "properties")
	if og, ok := ci.items.Properties["observedGeneration"]; ok {
		if isInteger(og) {
			return nil
		}
		return []Issue{atKey(ctx.CRD.Doc, itemsPath.Child("observedGeneration", "type"),
			"status.conditions[].observedGeneration is of type %q, not integer", og.Type)}
	}
	if og, ok := ci.status.Properties["observedGeneration"]; ok {
		if isInteger(og) {
			return nil
		}
		p := ctx.Version.SchemaPath.Child("properties", "status", "properties", "observedGeneration", "type")
		return []Issue{atKey(ctx.CRD.Doc, p, "status.observedGeneration is of type %q, not integer", og.Type)}
	}
	if preserves(ci.items) || ctx.CRD.V1.Spec.PreserveUnknownFields {
		return nil // an undeclared observedGeneration is kept
	}
	return []Issue{atKey(ctx.CRD.Doc, itemsPath,
		"version %s of CRD %s: condition items have no observedGeneration and status has none either, so an outdated Upgradeable=True cannot be told from a fresh one", ctx.Version.Name, ctx.CRD.Name())}
}

func checkListType(ctx *Context) []Issue {
	if ctx.Version == nil {
		return nil
	}
	ci := ctx.conditions()
	if ci.state != schemaOK {
		return nil
	}
	lt := ""
	if ci.conds.XListType != nil {
		lt = *ci.conds.XListType
	}
	if lt == "map" && slices.Equal(ci.conds.XListMapKeys, []string{"type"}) {
		return nil
	}
	desc := "has no x-kubernetes-list-type"
	switch {
	case lt == "map":
		desc = fmt.Sprintf("is a map list keyed by %v, not by type", ci.conds.XListMapKeys)
	case lt != "":
		desc = fmt.Sprintf("is x-kubernetes-list-type: %s", lt)
	}
	return []Issue{atKey(ctx.CRD.Doc, ci.path, "status.conditions of CRD %s version %s %s: two conditions of one type can coexist, and OLM reads only the first", ctx.CRD.Name(), ctx.Version.Name, desc)}
}

func checkSpelling(ctx *Context) []Issue {
	var out []Issue
	if ctx.Source != nil {
		for i, c := range ctx.Source.Conditions {
			if contract.IsNearMiss(c) {
				out = append(out, Issue{Pos: ctx.AnnotationPos(), Field: fmt.Sprintf("%s.conditions[%d]", AnnotationPath, i),
					Message: fmt.Sprintf("condition type %q in the status-source annotation is a misspelling of %q; OLM never reads it", c, contract.ConditionUpgradeable)})
			}
		}
	}
	if ctx.Version != nil {
		if ci := ctx.conditions(); ci.state == schemaOK {
			if t, ok := ci.items.Properties["type"]; ok && len(t.Enum) > 0 {
				var has bool
				var near []string
				for _, e := range t.Enum {
					var s string
					if err := yaml.Unmarshal(e.Raw, &s); err != nil {
						continue
					}
					if s == contract.ConditionUpgradeable {
						has = true
					}
					if contract.IsNearMiss(s) {
						near = append(near, s)
					}
				}
				if len(near) > 0 && !has {
					out = append(out, atKey(ctx.CRD.Doc, ci.path.Child("items", "properties", "type", "enum"),
						"the CRD's condition types allow %q but not %q; OLM reads only %q", strings.Join(near, ", "), contract.ConditionUpgradeable, contract.ConditionUpgradeable))
				}
			}
		}
	}
	return out
}

func checkInitResource(ctx *Context) []Issue {
	if !ctx.Resolvable() {
		return nil
	}
	raw, ok := ctx.CSV.Obj.Annotations[contract.InitializationResourceKey]
	if !ok {
		return nil
	}
	p := manifest.NewPath("metadata", "annotations").Key(contract.InitializationResourceKey)
	ir, err := contract.ParseObjectRef(raw)
	if err != nil {
		return []Issue{at(ctx.CSV.Doc, p, "the initialization resource cannot be read (%v), so it cannot be compared with the status source", err)}
	}
	src := ctx.Source
	gv := src.GroupVersion()
	var diffs []string
	if ir.Kind != src.Kind || ir.Group != gv.Group {
		diffs = append(diffs, fmt.Sprintf("kind %s.%s, not %s.%s", ir.Kind, orCore(ir.Group), src.Kind, gv.Group))
	}
	if ir.Name != src.Name {
		diffs = append(diffs, fmt.Sprintf("name %q, not %q", ir.Name, src.Name))
	}
	if ir.Namespace != "" && src.Namespace != "" && ir.Namespace != src.Namespace {
		diffs = append(diffs, fmt.Sprintf("namespace %q, not %q", ir.Namespace, src.Namespace))
	}
	if len(diffs) == 0 {
		return nil
	}
	return []Issue{at(ctx.CSV.Doc, p, "the initialization resource has %s: the CR created at install time is not the one the gate reads", strings.Join(diffs, "; "))}
}

func orCore(g string) string {
	if g == "" {
		return "core"
	}
	return g
}

// ruleAllows reports whether an RBAC rule grants verb on group/resource
// (with subresource) for the named object, following Kubernetes'
// pkg/apis/rbac/v1/evaluation_helpers.go: "*" matches any verb, group or
// resource, "*/status" matches the status subresource of any resource, and
// resourceNames, when set, must list the object.
func ruleAllows(r rbacv1.PolicyRule, verbs []string, group, resource, subresource, name string) bool {
	verbOK := false
	for _, v := range r.Verbs {
		if v == rbacv1.VerbAll || slices.Contains(verbs, v) {
			verbOK = true
		}
	}
	if !verbOK {
		return false
	}
	if !slices.Contains(r.APIGroups, rbacv1.APIGroupAll) && !slices.Contains(r.APIGroups, group) {
		return false
	}
	combined := resource + "/" + subresource
	resOK := false
	for _, res := range r.Resources {
		if res == rbacv1.ResourceAll || res == combined || res == "*/"+subresource {
			resOK = true
		}
	}
	if !resOK {
		return false
	}
	return len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, name)
}

func checkRBAC(ctx *Context) []Issue {
	if ctx.CRD == nil {
		return nil
	}
	group, plural := ctx.CRD.Group(), ctx.CRD.Plural()
	install := ctx.CSV.Obj.Spec.InstallStrategy.StrategySpec
	accounts := map[string]bool{}
	for _, d := range install.DeploymentSpecs {
		sa := d.Spec.Template.Spec.ServiceAccountName
		if sa == "" {
			sa = "default"
		}
		accounts[sa] = true
	}
	applies := func(p v1alpha1.StrategyDeploymentPermissions) bool {
		return len(accounts) == 0 || accounts[p.ServiceAccountName]
	}
	verbs := []string{"update", "patch"}
	grants := func(perms []v1alpha1.StrategyDeploymentPermissions) bool {
		for _, p := range perms {
			if !applies(p) {
				continue
			}
			for _, r := range p.Rules {
				if ruleAllows(r, verbs, group, plural, "status", ctx.Source.Name) {
					return true
				}
			}
		}
		return false
	}
	// permissions become Roles in the operator's namespaces; only
	// clusterPermissions (ClusterRoles) reach a cluster-scoped kind.
	if grants(install.ClusterPermissions) || (ctx.CRD.Namespaced() && grants(install.Permissions)) {
		return nil
	}
	scope := "permissions or clusterPermissions"
	if !ctx.CRD.Namespaced() {
		scope = "clusterPermissions (the kind is cluster-scoped, so namespaced permissions cannot grant it)"
	}
	return []Issue{atKey(ctx.CSV.Doc, manifest.NewPath("spec", "install", "spec", "clusterPermissions"),
		"no rule in the install strategy's %s lets the operator's service account update or patch %s/status in group %s", scope, plural, group)}
}

func checkRequestObservable(ctx *Context) []Issue {
	if ctx.Source == nil || ctx.Source.Mode() != contract.HandshakeRequestAck {
		return nil
	}
	h := ctx.Source.Handshake
	if h.Request == nil || h.Request.Annotation == "" || (h.Ack != nil && h.Ack.StatusPath != "") {
		return nil
	}
	return []Issue{{Pos: ctx.AnnotationPos(), Field: AnnotationPath.String() + ".handshake.ack",
		Message: fmt.Sprintf("the handshake requests through annotation %q without ack.statusPath: writing an annotation does not bump metadata.generation, so a fresh Upgradeable=True may predate the request and OLM cannot tell whether the operator saw it", h.Request.Annotation)}}
}

// schemaHas reports whether a field path exists in the schema: defined as a
// property all the way, or kept by x-kubernetes-preserve-unknown-fields on
// the way.
func schemaHas(s *apiextv1.JSONSchemaProps, fields []string) (found bool, leaf *apiextv1.JSONSchemaProps) {
	cur := s
	for _, f := range fields {
		next, ok := cur.Properties[f]
		if !ok {
			return preserves(cur), nil
		}
		cur = &next
	}
	return true, cur
}

func checkHandshakePaths(ctx *Context) []Issue {
	if ctx.Version == nil || ctx.Version.Schema == nil || ctx.Source.Mode() != contract.HandshakeRequestAck {
		return nil
	}
	h := ctx.Source.Handshake
	var out []Issue
	check := func(path, field string) {
		if path == "" {
			return
		}
		found, leaf := schemaHas(ctx.Version.Schema, contract.FieldPath(path))
		switch {
		case !found:
			out = append(out, Issue{Pos: ctx.AnnotationPos(), Field: AnnotationPath.String() + "." + field,
				Message: fmt.Sprintf("%s %s is not in the schema of CRD %s version %s, so the apiserver prunes it", field, path, ctx.CRD.Name(), ctx.Version.Name)})
		case leaf != nil && leaf.Type != "" && leaf.Type != "string" && leaf.Type != "integer":
			out = append(out, Issue{Pos: ctx.AnnotationPos(), Field: AnnotationPath.String() + "." + field,
				Message: fmt.Sprintf("%s %s is of type %q in CRD %s; a handshake token is a string or an integer", field, path, leaf.Type, ctx.CRD.Name())})
		}
	}
	if h.Request != nil {
		check(h.Request.SpecPath, "handshake.request.specPath")
	}
	if h.Ack != nil {
		check(h.Ack.StatusPath, "handshake.ack.statusPath")
	}
	return out
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
