package validate

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/apiserver"
	"github.com/statuscheck/statuscheck/pkg/bridge/sidecar"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/crd"
	"github.com/statuscheck/statuscheck/pkg/manifest"
	"github.com/statuscheck/statuscheck/pkg/result"
)

func checkMissing(ctx *Context) []Issue {
	if ctx.CSV == nil || ctx.HasAnnotation {
		return nil
	}
	msg := fmt.Sprintf("the ClusterServiceVersion %q declares no status source (annotation %s); OLM v0 gates its upgrades on the OperatorCondition, which the operator writes itself", ctx.CSV.Obj.Name, v1alpha1.AnnotationKey)
	if obj, ok := candidate(ctx.CSV); ok {
		adopted := withCandidate(ctx.Bundle, ctx.CSV, obj)
		if errs := candidateErrors(ctx, adopted); len(errs) > 0 {
			msg += fmt.Sprintf("; its initialization resource %s %q cannot be the status source as the bundle stands (generate refuses it: %s)", obj.Kind, obj.Name, strings.Join(errs, ", "))
		} else {
			// The command the verdict gives once it is declared, so that
			// following it holds the upgrade on OLM v0: the bridge alone
			// leaves OLM's race between its check and the replacement.
			cctx := NewContext(adopted, ctx.Options)
			msg += fmt.Sprintf("; its initialization resource %s %q is a candidate: to adopt it, %s", obj.Kind, obj.Name, cctx.requestAckCommand(""))
		}
	}
	is := atKey(ctx.CSV.Doc, manifest.NewPath("metadata", "annotations"), "%s", msg)
	if ctx.Options.RequireStatusSource {
		is.Severity = sev(result.Error)
		is.Message += " (--require-status-source)"
	}
	return []Issue{is}
}

// candidate is the initialization resource of a CSV that declares no
// status source, when it is one of the bundle's own kinds:
// status-source-missing judges it as a candidate status source.
func candidate(csv *bundle.CSV) (contract.ObjectRef, bool) {
	init, ok := csv.Obj.Annotations[v1alpha1.InitializationResourceKey]
	if !ok {
		return contract.ObjectRef{}, false
	}
	obj, err := contract.ParseObjectRef(init)
	if err != nil || obj.Kind == "" || !bundle.Owns(csv.Obj, obj.Group, obj.Kind) {
		return contract.ObjectRef{}, false
	}
	return obj, true
}

// withCandidate is a copy of b whose CSV declares obj its status source.
func withCandidate(b *bundle.Bundle, csv *bundle.CSV, obj contract.ObjectRef) *bundle.Bundle {
	src := v1alpha1.StatusSource{APIVersion: obj.APIVersion(), Kind: obj.Kind, Name: obj.Name}
	adopted := *csv
	adopted.Obj = csv.Obj.DeepCopy()
	adopted.Obj.Annotations[v1alpha1.AnnotationKey] = src.Marshal()
	c := *b
	c.CSVs = []*bundle.CSV{&adopted}
	return &c
}

// candidateErrors are the rules generate would refuse a candidate status
// source with: the error findings of the rules that judge the value (not
// the verdict's) on b, the copy of the bundle whose CSV declares it
// (withCandidate).
func candidateErrors(ctx *Context, b *bundle.Bundle) []string {
	var rules []Rule
	for _, r := range Rules() {
		// The rules about the value; a bundle's other errors stand with
		// or without it.
		if !r.Verdict && r.ID != "status-source-missing" && (strings.HasPrefix(r.ID, "status-") || strings.HasPrefix(r.ID, "condition")) {
			rules = append(rules, r)
		}
	}
	var out []string
	for _, f := range run(rules, b, ctx.Options).Findings {
		if f.Severity >= result.Error && !slices.Contains(out, f.Rule) {
			out = append(out, f.Rule)
		}
	}
	return out
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

func checkNotOwned(ctx *Context) []Issue {
	if !ctx.Resolvable() {
		return nil
	}
	gv := ctx.Source.GroupVersion()
	if bundle.Owns(ctx.CSV.Obj, gv.Group, ctx.Source.Kind) {
		return nil
	}
	var owned []string
	seen := map[string]bool{}
	for _, o := range ctx.CSV.Obj.Spec.CustomResourceDefinitions.Owned {
		if s := o.Kind + " (" + o.Name + ")"; !seen[s] {
			seen[s] = true
			owned = append(owned, s)
		}
	}
	have := "owns no CRDs"
	if len(owned) > 0 {
		have = "owns " + strings.Join(owned, ", ")
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
	if ctx.Source.Absent() == v1alpha1.WhenAbsentBlock {
		absent = "Block, so every upgrade is held until an admin overrides it on the OperatorCondition"
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

// probable says whether the probes can run: the status source's CRD and
// a served version of it are in the bundle.
func (ctx *Context) probable() bool {
	return ctx.CSV != nil && ctx.CRD != nil && ctx.Version != nil && ctx.Version.Served
}

// probed returns the probe results when the probes ran to the end (the
// apiserver takes the CRD), else nil.
func (ctx *Context) probed() *probeResults {
	if !ctx.probable() || len(ctx.SourceProblems) > 0 {
		// No probes on an invalid value: status-source-invalid says what
		// to fix, and a probe of it would only echo that.
		return nil
	}
	if r := ctx.probes(); r.serveErr == nil {
		return r
	}
	return nil
}

// statusWriteText describes probe 1 for messages.
const statusWriteText = "the status write an operator makes with metav1.Condition (statuscheck writes each gated condition True, then False, with reason, message, lastTransitionTime and observedGeneration)"

func checkCRDInvalid(ctx *Context) []Issue {
	if !ctx.probable() {
		return nil
	}
	r := ctx.probes()
	if r.crd == nil {
		if r.serveErr != nil {
			return []Issue{at(ctx.CRD.Doc, ctx.Version.Path, "the apiserver could not serve version %s of CRD %s: %v", ctx.Version.Name, ctx.CRD.Name(), r.serveErr)}
		}
		return nil
	}
	var out []Issue
	storage := false
	for _, fe := range r.crd.Fields {
		storage = storage || (fe.Field == "spec.versions" && strings.Contains(fe.Detail, "storage version"))
	}
	for _, fe := range r.crd.Fields {
		if storage && fe.Field == "status.storedVersions" {
			// The apiserver derives storedVersions from the one storage
			// version (customresourcedefinition strategy, PrepareForCreate):
			// with none, or two, this error only repeats that one.
			continue
		}
		out = append(out, at(ctx.CRD.Doc, ctx.crdPath(fe.Field), "the apiserver refuses CRD %s: %s: %s", ctx.CRD.Name(), fe.Field, withoutDump(fe.Detail)))
	}
	if len(out) == 0 {
		out = append(out, at(ctx.CRD.Doc, manifest.Path{}, "the apiserver refuses CRD %s: %s", ctx.CRD.Name(), r.crd.Error()))
	}
	return out
}

// withoutDump drops the value of an apiserver "Invalid value: V: detail"
// when V is a list or an object (the apiserver's internal struct as JSON,
// which repeats the manifest): the detail is what it says.
func withoutDump(msg string) string {
	const prefix = "Invalid value: "
	rest, ok := strings.CutPrefix(msg, prefix)
	if !ok || (!strings.HasPrefix(rest, "[") && !strings.HasPrefix(rest, "{")) {
		return msg
	}
	dec := json.NewDecoder(strings.NewReader(rest))
	var v interface{}
	if dec.Decode(&v) != nil {
		return msg
	}
	if detail, ok := strings.CutPrefix(rest[dec.InputOffset():], ": "); ok {
		return detail
	}
	return msg
}

func checkStatusWriteRejected(ctx *Context) []Issue {
	r := ctx.probed()
	if r == nil || r.statusRefused == nil {
		return nil
	}
	var out []Issue
	for _, fe := range r.statusRefused.Fields {
		out = append(out, atKey(ctx.CRD.Doc, ctx.schemaAt(fe.Field), "the apiserver refuses %s, at Upgradeable=%s: %s: %s", statusWriteText, r.statusRefusedStatus, fe.Field, fe.Detail))
	}
	if len(out) == 0 {
		out = append(out, atKey(ctx.CRD.Doc, ctx.schemaAt("status"), "the apiserver refuses %s, at Upgradeable=%s: %s", statusWriteText, r.statusRefusedStatus, r.statusRefused.Error()))
	}
	return out
}

func checkExampleInvalid(ctx *Context) []Issue {
	r := ctx.probed()
	if r == nil {
		return nil
	}
	var out []Issue
	if r.exampleRefused != nil {
		out = append(out, ctx.refusedExample(r.exampleKey, r.exampleIndex, r.exampleRefused,
			"the apiserver refuses to create the %s example of %s (statuscheck creates it as the console does): %s", ctx.Source.Kind, r.exampleKey, r.exampleRefused.Error()))
	}
	for _, o := range r.othersRefused {
		out = append(out, ctx.refusedExample(o.example.Key, o.example.Index, o.refusal,
			"the apiserver refuses to create the %s example %s (statuscheck creates it as the console does): %s", ctx.Source.Kind, o.example.Describe(), o.refusal.Error()))
	}
	return out
}

// conditionsUndescribed says whether the probes show that the version
// does not describe status.conditions at all: the status write comes back
// without them (pruned), or any value there is kept (unknown fields are
// preserved). That is conditions-schema-missing; the rules about how the
// conditions are described (conditions-list-type) then say nothing more,
// since their fix needs the conditions in the schema first.
func (r *probeResults) conditionsUndescribed() bool {
	return r.statusRefused == nil && (!r.conditionsKept || r.anyConditions)
}

// refusedExample is the finding on an example the apiserver refuses, the
// entry index of alm-examples or the initialization resource (index -1),
// both under the CSV annotation key. It points at the first field the
// refusal names that can be placed in the example (of one the example
// lacks, as a required field, the deepest part it has), else at the
// annotation: inExample says which can.
func (ctx *Context) refusedExample(key string, index int, rf *apiserver.Refusal, format string, args ...interface{}) Issue {
	is := at(ctx.CSV.Doc, manifest.NewPath("metadata", "annotations").Key(key), format, args...)
	var entry manifest.Path
	if index >= 0 {
		entry = entry.Index(index)
	}
	var example interface{}
	if json.Unmarshal([]byte(ctx.CSV.Obj.Annotations[key]), &example) != nil {
		return is
	}
	for _, fe := range rf.Fields {
		field := manifest.ParsePath(fe.Field)
		for depth := len(field); depth > 0; depth-- {
			inner := append(entry[:len(entry):len(entry)], field[:depth]...)
			if !dottedOnPath(example, inner) && ctx.inExample(&is, key, inner) {
				return is
			}
		}
	}
	return is
}

// dottedOnPath says whether an object on the way to inner in v, the
// decoded JSON of a CSV annotation, has a key with a dot. The apiserver's schema
// errors join keys with dots (kube-openapi's ObjectValidator.Validate:
// o.Path+"."+key), so that spec.tier.gold names the key "tier.gold" of
// spec as well as gold of spec.tier: a path parsed from it may be the
// wrong place, and a shorter one, above the dotted key, is not.
func dottedOnPath(v interface{}, inner manifest.Path) bool {
	for _, e := range inner {
		switch c := v.(type) {
		case map[string]interface{}:
			for k := range c {
				if strings.Contains(k, ".") {
					return true
				}
			}
			name, _ := e.Name()
			v = c[name]
		case []interface{}:
			i, ok := e.Index()
			if !ok || i < 0 || i >= len(c) {
				return false
			}
			v = c[i]
		default:
			return false
		}
	}
	return false
}

// inExample points is at the value at inner inside the JSON of the CSV
// annotation key, and names it in is.Field, when its line and column can
// be told exactly (the annotation is a literal block scalar, as
// operator-sdk writes alm-examples: manifest.EmbeddedJSONPos); otherwise
// it leaves is as it is and returns false.
func (ctx *Context) inExample(is *Issue, key string, inner manifest.Path) bool {
	p := manifest.NewPath("metadata", "annotations").Key(key)
	pos, ok := ctx.CSV.Doc.LocateEmbedded(p, inner)
	if !ok {
		return false
	}
	is.Pos, is.Field = pos, append(p, inner...).String()
	return true
}

func checkConditionsSchema(ctx *Context) []Issue {
	r := ctx.probed()
	if r == nil || !r.conditionsUndescribed() {
		return nil
	}
	p := ctx.schemaAt("status.conditions")
	if name, _ := p[len(p)-1].Name(); name == "properties" && len(p) > len(ctx.Version.SchemaPath) {
		p = p[:len(p)-1] // status (or the root) describes no conditions: point at it
	}
	where := atKey(ctx.CRD.Doc, p, "")
	switch {
	case !r.conditionsKept:
		where.Message = fmt.Sprintf("%s comes back without status.conditions: the apiserver prunes them, because version %s of CRD %s does not describe them; the gate has no conditions to read", statusWriteText, ctx.Version.Name, ctx.CRD.Name())
	default: // r.anyConditions
		where.Message = fmt.Sprintf("the apiserver keeps any value of status.conditions (a string written there comes back): version %s of CRD %s does not describe the conditions (unknown fields are kept), so status.conditions cannot be verified", ctx.Version.Name, ctx.CRD.Name())
		where.Severity = sev(result.Warning)
	}
	return []Issue{where}
}

func checkObservedGeneration(ctx *Context) []Issue {
	r := ctx.probed()
	if r == nil || r.statusRefused != nil || !r.conditionsKept {
		return nil
	}
	where := ctx.schemaAt("status.conditions[0].observedGeneration")
	if r.conditionOGKept() {
		return unverifiedObservedGeneration(ctx, r, where)
	}
	if r.statusOGKept {
		// OLM's isOperatorUpgradeable compares the condition's own
		// observedGeneration (metav1.Condition: absent reads as 0) with
		// the generation (operatorconditions.go); status.observedGeneration
		// is the contract's extension, which only the strict policy reads.
		// An error: a gate that never opens stops every upgrade (issue 27,
		// item 4).
		is := atKey(ctx.CRD.Doc, where,
			"%s keeps status.observedGeneration but not the condition's observedGeneration: version %s of CRD %s prunes it, and OLM's gate compares the condition's own observedGeneration (absent reads as 0), so it would never open on such a condition; only the strict policy reads status.observedGeneration", statusWriteText, ctx.Version.Name, ctx.CRD.Name())
		if ctx.bridgeMeant() {
			// statuscheck bridge judges the CR under the strict policy
			// (pkg/bridge.Decide), which reads status.observedGeneration:
			// on OLM v0 with the bridge the gate opens; only a lifecycle
			// manager reading the CR under the olm policy would not.
			is.Severity = sev(result.Info)
			is.Message += "; the declared bridge applies the strict policy, so OLM v0 with it is not affected, but a lifecycle manager reading the CR itself under the olm policy would be"
		}
		return []Issue{is}
	}
	return []Issue{atKey(ctx.CRD.Doc, where,
		"%s comes back with neither the condition's observedGeneration nor status.observedGeneration: version %s of CRD %s prunes both, so an outdated Upgradeable=True cannot be told from a fresh one", statusWriteText, ctx.Version.Name, ctx.CRD.Name())}
}

func checkListType(ctx *Context) []Issue {
	r := ctx.probed()
	// Where the version does not describe the conditions at all,
	// conditions-schema-missing says so, and how to describe them: that
	// they are no map list follows, and x-kubernetes-list-type cannot be
	// set on a field the schema does not have.
	if r == nil || !r.duplicatesAccepted || r.conditionsUndescribed() {
		return nil
	}
	p := ctx.schemaAt("status.conditions")
	desc := "has no x-kubernetes-list-type"
	if node := ctx.schemaNode(p); node != nil && node.XListType != nil {
		desc = "is x-kubernetes-list-type: " + *node.XListType
		if *node.XListType == "map" {
			desc = fmt.Sprintf("is a map list keyed by %s, not by type", strings.Join(node.XListMapKeys, ", "))
		}
	}
	return []Issue{atKey(ctx.CRD.Doc, p, "the apiserver accepts two %s conditions in one status (a status write holding both, True and False, is accepted): status.conditions of CRD %s version %s %s, and OLM reads only the first",
		contract.ConditionUpgradeable, ctx.CRD.Name(), ctx.Version.Name, desc)}
}

// schemaNode returns the schema at a path schemaAt gave.
func (ctx *Context) schemaNode(p manifest.Path) *apiextv1.JSONSchemaProps {
	s := ctx.Version.Schema
	base := len(ctx.Version.SchemaPath)
	if s == nil || len(p) < base {
		return nil
	}
	for i := base; i < len(p); i++ {
		name, isIndex := p[i].Name()
		switch {
		case isIndex:
			return nil
		case name == "properties" && i+1 < len(p):
			field, _ := p[i+1].Name()
			next, ok := s.Properties[field]
			if !ok {
				return nil
			}
			s = &next
			i++
		case name == "items" && s.Items != nil && s.Items.Schema != nil:
			s = s.Items.Schema
		case name == "additionalProperties" && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
			s = s.AdditionalProperties.Schema
		default:
			return nil
		}
	}
	return s
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
		p := ctx.schemaAt("status.conditions[0].type")
		if t := ctx.schemaNode(p); t != nil && len(t.Enum) > 0 && strings.HasSuffix(p.String(), "properties.type") {
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
				out = append(out, atKey(ctx.CRD.Doc, p.Child("enum"),
					"the CRD's condition types allow %q but not %q; OLM reads only %q", strings.Join(near, ", "), contract.ConditionUpgradeable, contract.ConditionUpgradeable))
			}
		}
	}
	return out
}

func checkInitResource(ctx *Context) []Issue {
	if !ctx.Resolvable() {
		return nil
	}
	raw, ok := ctx.CSV.Obj.Annotations[v1alpha1.InitializationResourceKey]
	if !ok {
		return nil
	}
	p := manifest.NewPath("metadata", "annotations").Key(v1alpha1.InitializationResourceKey)
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
	is := at(ctx.CSV.Doc, p, "the initialization resource has %s: the CR created at install time is not the one the gate reads", strings.Join(diffs, "; "))
	if field := initResourceField(raw, ir, src); field != nil {
		ctx.inExample(&is, v1alpha1.InitializationResourceKey, field)
	}
	return []Issue{is}
}

// initResourceField is the field of the initialization resource raw that
// differs first from the status source (kind, then the group in
// apiVersion, name, namespace), as ir read it; nil when the JSON does not
// hold ir's value there (ParseObjectRef also reads YAML, and matches keys
// regardless of case).
func initResourceField(raw string, ir contract.ObjectRef, src *v1alpha1.StatusSource) manifest.Path {
	var obj map[string]interface{}
	if json.Unmarshal([]byte(raw), &obj) != nil {
		return nil
	}
	str := func(p ...string) string {
		var v interface{} = obj
		for _, k := range p {
			m, _ := v.(map[string]interface{})
			v = m[k]
		}
		s, _ := v.(string)
		return s
	}
	group, _, versioned := strings.Cut(str("apiVersion"), "/")
	if !versioned {
		group = "" // the core group: "v1"
	}
	// The field, when it holds what ParseObjectRef read there.
	field := func(same bool, p ...string) manifest.Path {
		if !same {
			return nil
		}
		return manifest.NewPath(p...)
	}
	switch gv := src.GroupVersion(); {
	case ir.Kind != src.Kind:
		return field(str("kind") == ir.Kind, "kind")
	case ir.Group != gv.Group:
		return field(group == ir.Group, "apiVersion")
	case ir.Name != src.Name:
		return field(str("metadata", "name") == ir.Name, "metadata", "name")
	default:
		return field(str("metadata", "namespace") == ir.Namespace, "metadata", "namespace")
	}
}

func orCore(g string) string {
	if g == "" {
		return "core"
	}
	return g
}

func checkRBAC(ctx *Context) []Issue {
	if ctx.CRD == nil {
		return nil
	}
	group, plural := ctx.CRD.Group(), ctx.CRD.Plural()
	install := ctx.CSV.Obj.Spec.InstallStrategy.StrategySpec
	// Only where permissions reach the CR under no supported mode must the
	// rule be in clusterPermissions (a cluster-scoped kind without
	// AllNamespaces, under which OLM lifts permissions to ClusterRoles);
	// status-rbac-install-mode judges where they reach it under some
	// modes only.
	modes := sidecar.SupportedModes(ctx.CSV.Obj.Spec.InstallModes)
	cluster := modes.Reach(ctx.CRD.Namespaced(), ctx.Source.Namespace) == sidecar.ReachNone
	// Without a status subresource the status is written with the object
	// itself (status-subresource-disabled says what that costs): the
	// permission that counts is on the resource.
	sub, what := "status", plural+"/status"
	if ctx.Version != nil && !ctx.Version.StatusSubresource {
		sub, what = "", plural+" (the version has no status subresource, so the status is written with the object)"
	}
	for _, verb := range []string{"update", "patch"} {
		if bundle.Grants(install, "", bundle.Request{Verb: verb, Group: group, Resource: plural, Subresource: sub, Name: ctx.Source.Name}, cluster) {
			return nil
		}
	}
	scope := "permissions or clusterPermissions"
	if cluster {
		scope = "clusterPermissions (" + modes.NotReached(ctx.CRD.Namespaced(), ctx.Source.Namespace) + ")"
	}
	return []Issue{atKey(ctx.CSV.Doc, manifest.NewPath("spec", "install", "spec", "clusterPermissions"),
		"no rule in the install strategy's %s lets the operator's service account update or patch %s in group %s", scope, what, group)}
}

func checkRequestObservable(ctx *Context) []Issue {
	if ctx.Source == nil || ctx.Source.Mode() != v1alpha1.HandshakeRequestAck {
		return nil
	}
	h := ctx.Source.Handshake
	if h.Request == nil || h.Request.Annotation == "" || (h.Ack != nil && h.Ack.StatusPath != "") {
		return nil
	}
	return []Issue{{Pos: ctx.AnnotationPos(), Field: AnnotationPath.String() + ".handshake.ack",
		Message: fmt.Sprintf("the handshake requests through annotation %q without ack.statusPath: writing an annotation does not bump metadata.generation, so a fresh Upgradeable=True may predate the request and OLM cannot tell whether the operator saw it", h.Request.Annotation)}}
}

// checkRequestReserved reports a spec request field that nothing shows is
// reserved for OLM's request (crd.Version.RequestReserved). A field the
// schema does not declare is handshake-path-missing's, unless the CRD
// keeps unknown fields there.
func checkRequestReserved(ctx *Context) []Issue {
	if ctx.Source == nil || ctx.Version == nil || ctx.Source.Mode() != v1alpha1.HandshakeRequestAck {
		return nil
	}
	r := ctx.Source.Request()
	if r == nil || r.SpecPath == "" {
		return nil
	}
	path := v1alpha1.FieldPath(r.SpecPath)
	if _, declared := ctx.Version.TypeAt(path); !declared || ctx.Version.RequestReserved(path) {
		return nil
	}
	return []Issue{{Pos: ctx.AnnotationPos(), Field: AnnotationPath.String() + ".handshake.request.specPath",
		Message: fmt.Sprintf("the request field %s of CRD %s version %s is not reserved for OLM's request (it is not named %s and its schema's description does not say \"upgrade request\"): OLM would overwrite whatever it means with its token; add a field of its own, .spec.%s", r.SpecPath, ctx.CRD.Name(), ctx.Version.Name, crd.ReservedRequestName, crd.ReservedRequestName)}}
}

func checkHandshakePaths(ctx *Context) []Issue {
	r := ctx.probed()
	if r == nil || ctx.Source.Mode() != v1alpha1.HandshakeRequestAck {
		return nil
	}
	h := ctx.Source.Handshake
	issue := func(field, format string, args ...interface{}) Issue {
		return Issue{Pos: ctx.AnnotationPos(), Field: AnnotationPath.String() + "." + field, Message: fmt.Sprintf(format, args...)}
	}
	var out []Issue
	for _, e := range r.tokenErrs {
		out = append(out, atKey(ctx.CRD.Doc, ctx.schemaAt(strings.Join(e.Schema, ".")), "CRD %s version %s: %s", ctx.CRD.Name(), ctx.Version.Name, e.Error()))
	}
	if h.Request != nil && h.Request.SpecPath != "" && r.tokenTypeError("request.specPath") == nil {
		switch {
		case r.requestRefused != nil:
			out = append(out, issue("handshake.request.specPath", "the apiserver refuses a token at %s of CRD %s version %s (statuscheck's test write of the handshake request): %s", h.Request.SpecPath, ctx.CRD.Name(), ctx.Version.Name, r.requestRefused.Error()))
		case !r.requestKept:
			out = append(out, issue("handshake.request.specPath", "a token written at %s comes back without it (statuscheck's test write of the handshake request): CRD %s version %s prunes the field", h.Request.SpecPath, ctx.CRD.Name(), ctx.Version.Name))
		}
	}
	if h.Ack != nil && h.Ack.StatusPath != "" && r.statusRefused == nil && !r.ackKept && r.tokenTypeError("ack.statusPath") == nil {
		out = append(out, issue("handshake.ack.statusPath", "a token echoed at %s comes back without it (statuscheck's test status write): CRD %s version %s prunes the field", h.Ack.StatusPath, ctx.CRD.Name(), ctx.Version.Name))
	}
	return out
}

// bridgePath is where the bridge's declaration is written.
var bridgePath = manifest.NewPath("metadata", "annotations").Key(sidecar.AnnotationKey)

// declaredBridge is the CSV's bridge declaration and where its container
// is (sidecar.Find), or an issue saying why it cannot be found.
func declaredBridge(ctx *Context) (d *sidecar.Declaration, dep, ctr int, issue *Issue) {
	if ctx.CSV == nil {
		return nil, -1, -1, nil
	}
	d, err := sidecar.Declared(ctx.CSV.Obj)
	if err != nil {
		is := at(ctx.CSV.Doc, bridgePath, "the bridge annotation %s: %v", sidecar.AnnotationKey, err)
		return nil, -1, -1, &is
	}
	if d == nil {
		return nil, -1, -1, nil
	}
	install := ctx.CSV.Obj.Spec.InstallStrategy.StrategySpec
	dep, ctr = sidecar.Find(install, *d)
	switch {
	case dep < 0:
		var names []string
		for _, s := range install.DeploymentSpecs {
			names = append(names, strconv.Quote(s.Name))
		}
		has := "none"
		if len(names) > 0 {
			has = strings.Join(names, ", ")
		}
		is := at(ctx.CSV.Doc, bridgePath, "the bridge is declared in deployment %q, which the install strategy does not have (it has %s)", d.Deployment, has)
		return d, dep, ctr, &is
	case ctr < 0:
		is := atKey(ctx.CSV.Doc, manifest.NewPath("spec", "install", "spec", "deployments").Index(dep).Child("spec", "template", "spec", "containers"),
			"deployment %q has no container %q to run the bridge declared in %s, so nothing writes the OperatorCondition", d.Deployment, d.Container, sidecar.AnnotationKey)
		return d, dep, ctr, &is
	}
	return d, dep, ctr, nil
}

func checkBridgeContainer(ctx *Context) []Issue {
	d, dep, ctr, issue := declaredBridge(ctx)
	if issue != nil {
		return []Issue{*issue}
	}
	if d != nil && !ctx.HasAnnotation {
		return []Issue{at(ctx.CSV.Doc, bridgePath, "the bridge is declared but the CSV has no %s annotation for it to read, so it cannot start", v1alpha1.AnnotationKey)}
	}
	if d != nil {
		return bridgeCommand(ctx, dep, ctr)
	}
	return nil
}

// declaredBridgeRBAC is the declared bridge as its permissions depend on
// it, with its deployment's service account; ok is false when there is no
// bridge to judge (the container's rule, or the status source's, says why).
func declaredBridgeRBAC(ctx *Context) (b sidecar.Bridge, sa string, ok bool) {
	d, dep, ctr, issue := declaredBridge(ctx)
	if d == nil || issue != nil || ctr < 0 || ctx.Source == nil || ctx.CRD == nil {
		return sidecar.Bridge{}, "", false
	}
	deployment := ctx.CSV.Obj.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[dep]
	return sidecar.Bridge{Source: ctx.Source, CSV: ctx.CSV.Obj.Name, Plural: ctx.CRD.Plural(), Namespaced: ctx.CRD.Namespaced(),
		Container: deployment.Spec.Template.Spec.Containers[ctr], InstallModes: ctx.CSV.Obj.Spec.InstallModes}, bundle.ServiceAccount(deployment), true
}

func checkBridgeRBAC(ctx *Context) []Issue {
	b, sa, ok := declaredBridgeRBAC(ctx)
	if !ok {
		return nil
	}
	var out []Issue
	for _, m := range sidecar.Missing(ctx.CSV.Obj.Spec.InstallStrategy.StrategySpec, sa, b.Needs()) {
		where := "permissions or clusterPermissions"
		if m.Cluster {
			where = "clusterPermissions (" + m.Where + ")"
		}
		out = append(out, atKey(ctx.CSV.Doc, manifest.NewPath("spec", "install", "spec", sidecar.Field(m.Cluster)),
			"the bridge's service account %q is not granted %s in the install strategy's %s: the bridge %s", sa, m.Describe(), where, m.Why))
	}
	return out
}

func checkBridgeRBACBroad(ctx *Context) []Issue {
	b, sa, ok := declaredBridgeRBAC(ctx)
	if !ok {
		return nil
	}
	var out []Issue
	for _, e := range b.Broad(ctx.CSV.Obj.Spec.InstallStrategy.StrategySpec, sa) {
		key := sidecar.Field(e.Cluster)
		out = append(out, at(ctx.CSV.Doc, manifest.NewPath("spec", "install", "spec", key).Index(e.Entry).Child("rules").Index(e.Index),
			"the rule granting the bridge's service account %q %s in %s is broader than the bridge needs: %s", sa, sidecar.Describe(e.Rule), key, e.Fix))
	}
	return out
}

func checkBridgeOneWriter(ctx *Context) []Issue {
	d, _, _, _ := declaredBridge(ctx)
	if d == nil {
		return nil
	}
	if err := sidecar.OneWriter(ctx.Source); err != nil {
		return []Issue{at(ctx.CSV.Doc, bridgePath, "the bridge is declared, but %v", err)}
	}
	return nil
}
