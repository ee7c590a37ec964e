package validate

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/bridge/sidecar"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/crd"
	"github.com/statuscheck/statuscheck/pkg/explore"
	"github.com/statuscheck/statuscheck/pkg/result"
	"github.com/statuscheck/statuscheck/pkg/simulate"
	"github.com/statuscheck/statuscheck/pkg/source"
)

// The verdict answers the question a bundle's author has: is my upgrade
// held while my operator says wait? It is judged for each lifecycle
// manager the bundle can meet (result.Manager):
//
//   - OLM v0 gates the replacement of a CSV on the OperatorCondition named
//     after it, and on nothing else: isOperatorUpgradeable in
//     operator-lifecycle-manager pkg/controller/operators/olm/operatorconditions.go
//     reads only the OperatorCondition's Upgradeable entry (v0.46.0 does
//     not read operatorframework.io/status-source). The upgrade is held
//     only when something writes that entry from the CR: the bridge the
//     CSV declares, or the operator itself under the OperatorCondition
//     handshake; and then only as well as the protocol search on the
//     bundle's own configuration says (checkProtocol). What holds it is
//     this version's: OLM reads the OperatorCondition of the CSV being
//     replaced, so the verdict is about the upgrade away from this
//     version, to the next.
//   - OLM v1 (operator-controller) has no gate an operator can hold an
//     upgrade on: its documentation (docs/project/olmv1_limitations.md)
//     says it does not support the OperatorConditions API, and its upgrade
//     preflights (CRD upgrade safety) judge the new bundle's CRDs, not the
//     operator's readiness.
//   - Without OLM (plain manifests, Helm, kustomize) nothing reads the
//     condition.
//
// Only OLM v0 is something the bundle can fix, so only it is a finding
// (upgrade-not-held-olm-v0); the other two are in the verdict with what the
// user can do instead.

// wiring says what writes the OperatorCondition's Upgradeable entry from
// the status source on OLM v0: "bridge", "operatorcondition" (the
// operator, under the OperatorCondition handshake), or "" (nothing), with
// why not when both claim it.
func wiring(ctx *Context) (by string, conflict bool) {
	if ctx.Source == nil {
		return "", false
	}
	bridge := ctx.bridgeMeant()
	oc := ctx.Source.Mode() == v1alpha1.HandshakeOperatorCondition
	switch {
	case bridge && oc:
		return "", true
	case bridge:
		return result.HeldByBridge, false
	case oc:
		return result.HeldByOperatorCondition, false
	}
	return "", false
}

// bridgeMeant reports whether the CSV declares the bridge. The declaration
// is the author's intent: a broken one (no such container, a value that
// does not parse, a container that does not run the bridge) is
// bridge-container-missing's error, and the verdict then says the status
// source cannot work as declared.
func (ctx *Context) bridgeMeant() bool {
	_, ok := ctx.CSV.Obj.Annotations[sidecar.AnnotationKey]
	return ok
}

// operatorWritesOC names the service accounts whose rules in the install
// strategy name operatorconditions (group operators.coreos.com) with update
// or patch: an operator that asks for that writes its OperatorCondition
// itself (operator-lib's conditions package does), beside the Role OLM
// makes for every CSV. Wildcard rules are not taken as that intent.
func (ctx *Context) operatorWritesOC() []string {
	install := ctx.CSV.Obj.Spec.InstallStrategy.StrategySpec
	var out []string
	for _, perms := range [][]operatorsv1alpha1.StrategyDeploymentPermissions{install.Permissions, install.ClusterPermissions} {
		for _, p := range perms {
			for _, r := range p.Rules {
				if !slices.Contains(r.Resources, contract.OperatorConditionResource.Resource) ||
					!slices.Contains(r.APIGroups, contract.OperatorConditionResource.Group) && !slices.Contains(r.APIGroups, "*") {
					continue
				}
				if (slices.Contains(r.Verbs, "update") || slices.Contains(r.Verbs, "patch") || slices.Contains(r.Verbs, "*")) && !slices.Contains(out, p.ServiceAccountName) {
					out = append(out, p.ServiceAccountName)
				}
			}
		}
	}
	return out
}

// judged reports whether the verdict applies: a CSV whose annotation
// decodes without problems. An invalid annotation is status-source-invalid
// and nothing else is judged on it.
func (ctx *Context) judged() bool {
	return ctx.CSV != nil && ctx.HasAnnotation && ctx.Source != nil && len(ctx.SourceProblems) == 0
}

// bundleArg is the bundle as a command line names it.
func (ctx *Context) bundleArg() string {
	if ctx.Bundle.Path == "" {
		return "BUNDLE"
	}
	return ctx.Bundle.Path
}

// fixes says how to make OLM v0 hold the upgrade, as a command a user can
// paste once IMAGE is theirs: the bridge, under a RequestAck handshake
// with a spec request, which the protocol search finds no violation in
// (the None handshake leaves OLM's race between its check and the
// replacement; the OperatorCondition handshake's copy lags the CR). The
// command names --bridge-deployment when the install strategy has several
// deployments, and the request field the CRD reserves (or says the CRD
// change it needs first). image is the declared bridge's, "" for the
// IMAGE placeholder, which generate refuses.
func (ctx *Context) fixes() string {
	return ctx.requestAckCommand(ctx.declaredImage()) + "; the bridge alone leaves OLM's race between its check and the replacement, and an operator that writes its OperatorCondition itself (`--handshake OperatorCondition`) holds it with a copy that lags the CR"
}

// declaredImage is the image of the container the CSV declares the
// bridge in, "" when there is none (or it cannot be pulled).
func (ctx *Context) declaredImage() string {
	d, dep, ctr, issue := declaredBridge(ctx)
	if d == nil || issue != nil || ctr < 0 {
		return ""
	}
	img := ctx.CSV.Obj.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[dep].Spec.Template.Spec.Containers[ctr].Image
	if sidecar.CheckImage(img) != nil {
		return ""
	}
	return img
}

// requestAckCommand is the generate command that adds (or keeps) the
// bridge under a RequestAck handshake with a spec request, with what the
// user must do before it works.
func (ctx *Context) requestAckCommand(image string) string {
	words := []string{"statuscheck", "generate", "-w", "--bridge"}
	before := ""
	if image == "" {
		words = append(words, "IMAGE")
		before = "IMAGE is the statuscheck image your cluster pulls (`make image` builds one; generate refuses the word IMAGE itself)"
	} else {
		words = append(words, image)
	}
	if d, _, _, _ := declaredBridge(ctx); d != nil {
		words = append(words, "--bridge-deployment", d.Deployment)
	} else if deps := ctx.CSV.Obj.Spec.InstallStrategy.StrategySpec.DeploymentSpecs; len(deps) > 1 {
		if name := ctx.operatorDeployment(); name != "" {
			words = append(words, "--bridge-deployment", name)
		} else {
			words = append(words, "--bridge-deployment", "DEPLOYMENT")
			var names []string
			for _, d := range deps {
				names = append(names, d.Name)
			}
			before = joinNonEmpty(before, "DEPLOYMENT is the operator's deployment, one of "+strings.Join(names, ", "))
		}
	}
	field, change := ctx.requestField()
	words = append(words, "--request-spec-path", field, ctx.bundleArg())
	before = joinNonEmpty(before, change)
	cmd := "run `" + strings.Join(words, " ") + "` (statuscheck bridge, a sidecar, writes the OperatorCondition from the CR; " + field + " carries OLM's request, so that the operator defers new work once it has said True)"
	if before != "" {
		cmd += "; before that: " + before
	}
	return cmd
}

func joinNonEmpty(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// operatorDeployment is the deployment whose service account may write the
// status source's status: the operator, which the bridge joins; "" when
// that is not one deployment.
func (ctx *Context) operatorDeployment() string {
	if ctx.CRD == nil {
		return ""
	}
	install := ctx.CSV.Obj.Spec.InstallStrategy.StrategySpec
	sub := "status"
	if ctx.Version != nil && !ctx.Version.StatusSubresource {
		sub = ""
	}
	var found []string
	for _, d := range install.DeploymentSpecs {
		sa := bundle.ServiceAccount(d)
		for _, verb := range []string{"update", "patch"} {
			req := bundle.Request{Verb: verb, Group: ctx.CRD.Group(), Resource: ctx.CRD.Plural(), Subresource: sub, Name: ctx.Source.Name}
			if (bundle.Grants(install, sa, req, false) || bundle.Grants(install, sa, req, true)) && !slices.Contains(found, d.Name) {
				found = append(found, d.Name)
			}
		}
	}
	if len(found) == 1 {
		return found[0]
	}
	// Several deployments share the account (an operator and its
	// webhook): the one named as the operator, when that is one.
	var named []string
	for _, n := range found {
		if strings.HasSuffix(n, "operator") || strings.Contains(n, "controller-manager") {
			named = append(named, n)
		}
	}
	if len(named) == 1 {
		return named[0]
	}
	return ""
}

// requestField is the spec field for OLM's request: the one the handshake
// already names, else one the CRD reserves for it (crd.Version.RequestReserved),
// else .spec.upgradeRequest, with the CRD change it needs first where the
// apiserver prunes it. That is decided as handshake-path-missing decides it
// once the command is followed: by the apiserver's own pruning, on probe 2
// at that field (probeResults.reservedKept), not by the schema alone. A CRD
// that keeps unknown fields keeps the field undeclared: one written as
// apiextensions.k8s.io/v1beta1 without spec.preserveUnknownFields: false
// does, since the apiserver defaults it to true
// (k8s.io/apiextensions-apiserver pkg/apis/apiextensions/v1beta1/defaults.go,
// SetDefaults_CustomResourceDefinitionSpec), a default crd.Decode applies
// with the apiserver's scheme and package apiserver prunes by. Where the
// probes did not run (the apiserver cannot serve the CRD, which its own
// findings say first), nothing shows the field is pruned, and no change
// is claimed.
func (ctx *Context) requestField() (field, change string) {
	if r := ctx.Source.Request(); r != nil && r.SpecPath != "" && ctx.Version != nil && ctx.Version.RequestReserved(v1alpha1.FieldPath(r.SpecPath)) {
		if _, declared := ctx.Version.TypeAt(v1alpha1.FieldPath(r.SpecPath)); declared {
			return r.SpecPath, ""
		}
	}
	field = reservedRequestPath
	if ctx.Version == nil || ctx.Version.Schema == nil {
		return field, ""
	}
	if spec, ok := ctx.Version.Schema.Properties["spec"]; ok {
		for _, name := range slices.Sorted(maps.Keys(spec.Properties)) {
			if p := []string{"spec", name}; ctx.Version.RequestReserved(p) {
				return ".spec." + name, ""
			}
		}
	}
	if r := ctx.probed(); r == nil || r.reservedKept {
		// Kept as the CRD stands (declared, or undeclared where the CRD
		// keeps unknown fields), or nothing shows it is not: the probe,
		// not the schema, decides, since a field the schema keeps may
		// still be refused (a spec of one property at most, a CEL rule).
		return field, ""
	}
	crdName := ""
	if ctx.CRD != nil {
		crdName = " of CRD " + ctx.CRD.Name() + " version " + ctx.Version.Name
	}
	return field, fmt.Sprintf("RequestAck needs a CRD change: add %s (type: string; a field of its own, which only OLM writes and the operator only reads to answer) to the spec schema%s, which does not keep it today, and have the operator defer new work while it differs from the last request it answered", crd.ReservedRequestName, crdName)
}

func checkNotHeldOLMv0(ctx *Context) []Issue {
	if !ctx.judged() {
		return nil
	}
	if by, conflict := wiring(ctx); by != "" || conflict {
		// Two writers are bridge-operatorcondition-handshake's.
		return nil
	}
	fix := ctx.fixes()
	if len(ctx.staticErrors) > 0 {
		fix = "first fix " + strings.Join(ctx.staticErrors, ", ") + " (see their findings): until then a bridge would copy a condition OLM cannot use"
	}
	return []Issue{at(ctx.CSV.Doc, AnnotationPath,
		"OLM v0 does not hold this upgrade: it gates the replacement of CSV %q on its OperatorCondition only and does not read %s, and nothing writes the OperatorCondition from %s %q: no bridge is declared (%s) and the handshake is %s, so OLM replaces the operator whatever the CR says; %s",
		ctx.CSV.Obj.Name, v1alpha1.AnnotationKey, ctx.Source.Kind, ctx.Source.Name, sidecar.AnnotationKey, ctx.Source.Mode(), fix)}
}

// Protection is the verdict for each lifecycle manager the bundle can
// meet, nil when the CSV declares no (valid) status source. OLM v0's
// counts the errors the rules found (Check computes it after them) and the
// protocol search's (run here if no check ran it yet).
func Protection(ctx *Context) []result.Protection {
	if !ctx.judged() {
		return nil
	}
	v0 := result.Protection{Manager: result.ManagerOLMv0}
	by, conflict := wiring(ctx)
	writers := ctx.operatorWritesOC()
	switch {
	case conflict:
		v0.Reason = "the bridge and the operator (OperatorCondition handshake) would both write the OperatorCondition's Upgradeable entry; OLM reads whichever wrote last"
		v0.Remedy = "keep one writer: drop the bridge, or use handshake None or RequestAck with it"
	case by == "" && len(writers) > 0:
		v0.Reason = fmt.Sprintf("OLM v0 reads only the OperatorCondition (of the CSV being replaced, when the next version comes), and the operator writes it itself (service account %s is granted update or patch on operatorconditions), from its own logic: nothing in the bundle says it copies %s %q's condition there, so the operator decides, not the CR", strings.Join(writers, ", "), ctx.Source.Kind, ctx.Source.Name)
		v0.Remedy = fmt.Sprintf("if the operator writes its OperatorCondition from the CR's condition, declare it: `statuscheck generate -w --handshake OperatorCondition %s`; otherwise have it stop writing Upgradeable and %s", ctx.bundleArg(), ctx.fixes())
	case by == "" && len(ctx.staticErrors) > 0:
		v0.Reason = fmt.Sprintf("OLM v0 reads only the OperatorCondition (of the CSV being replaced, when the next version comes), nothing writes it from %s %q, and the status source cannot work as declared: %s", ctx.Source.Kind, ctx.Source.Name, strings.Join(ctx.staticErrors, ", "))
		v0.Remedy = "fix those errors first (see their findings): a bridge that copied this status source's condition to OLM would hold every upgrade or none"
	case by == "":
		v0.Reason = fmt.Sprintf("OLM v0 reads only the OperatorCondition (of the CSV being replaced, when the next version comes), and nothing writes it from %s %q", ctx.Source.Kind, ctx.Source.Name)
		v0.Remedy = ctx.fixes()
	case by == result.HeldByBridge && len(writers) > 0:
		// The bridge never overwrites another writer's entry (it yields,
		// by design): what OLM reads is the operator's.
		v0.Reason = fmt.Sprintf("the bridge is declared, but the operator writes its OperatorCondition itself (service account %s is granted update or patch on operatorconditions), and the bridge yields to another writer's Upgradeable entry by design: the operator decides, not %s %q", strings.Join(writers, ", "), ctx.Source.Kind, ctx.Source.Name)
		v0.Remedy = "keep one writer: have the operator stop writing Upgradeable to its OperatorCondition (and drop update and patch on operatorconditions from its rules) so that the bridge writes it from the CR; or, if the operator writes it from the CR's condition, drop the bridge and declare `--handshake OperatorCondition`"
	default:
		// Fail closed: held only on a search that ran and found nothing,
		// with no error and no warning that puts the gate in doubt.
		v0.By = by
		var races []string
		res := ctx.search()
		if res != nil {
			for _, c := range res.Counterexamples {
				if ProtocolRule(c.Violation.Rule) && c.Violation.Severity == result.Error && !slices.Contains(races, c.Violation.Rule) {
					races = append(races, c.Violation.Rule)
				}
			}
		}
		writer := map[string]string{result.HeldByBridge: "statuscheck bridge writes the OperatorCondition from the CR", result.HeldByOperatorCondition: "the operator writes the OperatorCondition itself (OperatorCondition handshake)"}[by]
		switch {
		case len(ctx.staticErrors) > 0:
			v0.Reason = writer + ", but the status source cannot work as declared: " + strings.Join(ctx.staticErrors, ", ")
			v0.Remedy = "fix those errors (see their findings)"
		case res == nil:
			v0.Reason = writer + ", but the protocol search could not model the bundle's configuration, so nothing shows the upgrade is held: " + ctx.searchErr
			v0.Remedy = "see upgrade-unverified"
		case len(races) > 0:
			v0.Reason = writer + ", but the protocol search found " + strings.Join(races, ", ")
			v0.Remedy = "see those findings"
			if by == result.HeldByOperatorCondition {
				v0.Remedy += "; the operator's OperatorCondition copy lags its CR: " + ctx.fixes()
			} else if ctx.Source.Mode() != v1alpha1.HandshakeRequestAck {
				v0.Remedy += "; a RequestAck handshake with a spec request closes OLM's race between its check and the replacement: " + ctx.requestAckCommand(ctx.declaredImage())
			}
		case len(ctx.doubts) > 0:
			v0.Reason = writer + ", and the protocol search found no violation, but the gate may not hold as declared: " + strings.Join(ctx.doubts, ", ")
			v0.Remedy = "see those warnings"
		default:
			v0.Held = true
			v0.Reason = writer + "; the protocol search on the bundle's configuration found no violation"
			if by == result.HeldByBridge {
				// OLM makes a new CSV's OperatorCondition empty, and an
				// empty one allows: no bridge that has not run yet can
				// hold it (docs/bridge.md, The start-up window).
				v0.Reason += "; except in the start-up window: from this version's CSV Succeeded until its bridge's first entry, its new OperatorCondition is empty, which OLM reads as allowed (a chain published together can go through it)"
			}
		}
	}
	v1 := result.Protection{Manager: result.ManagerOLMv1,
		Reason: "operator-controller has no gate an operator can hold an upgrade on: it does not support the OperatorConditions API (its docs, Limitations), reads no condition of the CR, and its upgrade preflights judge the new bundle's CRDs, not the operator's readiness",
		Remedy: "pin the ClusterExtension's version (spec.source.catalog.version) and raise it only once the CR reports a fresh Upgradeable=True"}
	if ctx.Source.Mode() == v1alpha1.HandshakeOperatorCondition {
		v1.Reason += "; an operator that writes its OperatorCondition may not even start there, since the API is not served"
	}
	return withGuards(ctx, []result.Protection{
		v0,
		v1,
		{Manager: result.ManagerNone,
			Reason: "applied as plain manifests (kubectl, Helm, kustomize), nothing reads the condition before the new operator replaces the old",
			Remedy: ctx.waitRemedy()},
	})
}

// waitRemedy is what a user applying plain manifests can do: wait for a
// fresh True before applying the new version. kubectl wait compares
// generations, but not as OLM does: k8s.io/kubectl pkg/cmd/wait/condition.go
// (checkCondition, getObservedGeneration, v0.36.2) returns false while the
// condition's observedGeneration, else status.observedGeneration, is below
// metadata.generation (OLM's gate refuses any difference), and skips the
// comparison when neither is set.
func (ctx *Context) waitRemedy() string {
	cond := ctx.Source.ConditionTypes()[0]
	ref := strings.ToLower(ctx.Source.Kind)
	if g := ctx.Source.GroupVersion().Group; g != "" {
		ref += "." + g
	}
	ref += "/" + ctx.Source.Name
	if ctx.Source.Namespace != "" {
		ref += " -n " + ctx.Source.Namespace
	}
	return fmt.Sprintf("before applying the new version, wait until the CR's %s condition is True at its current generation: `kubectl wait --for=condition=%s=True %s` (in the operator's namespace for a namespaced kind) does that only while the operator sets observedGeneration: kubectl waits while the condition's observedGeneration (else status.observedGeneration) is below metadata.generation, where OLM's gate refuses any difference, and skips the comparison when neither is set", cond, cond, ref)
}

// doubtRules are the warnings that put the gate in doubt: the CR may never
// exist or be another than the one the gate reads, or what the operator
// writes cannot be verified. The verdict is not held while one stands.
var doubtRules = []string{"status-source-may-not-exist", "status-source-namespace-pinned", "initialization-resource-mismatch",
	"conditions-schema-missing", "conditions-observedgeneration-missing", "conditions-list-type", "condition-type-spelling",
	"status-rbac-install-mode", "alm-examples-invalid", "handshake-request-not-observable"}

// checkUnverified reports a protocol search that could not model the
// bundle's configuration, where something writes the OperatorCondition
// and no error explains it.
func checkUnverified(ctx *Context) []Issue {
	if !ctx.judged() || len(ctx.staticErrors) > 0 {
		return nil
	}
	if by, conflict := wiring(ctx); by == "" || conflict {
		return nil
	}
	if ctx.search() != nil || ctx.searchErr == "" {
		return nil
	}
	return []Issue{at(ctx.CSV.Doc, AnnotationPath, "the protocol search could not model the bundle's configuration, so nothing shows that OLM v0 holds the upgrade: %s", ctx.searchErr)}
}

// protocolKinds are the violations of simulate's registry that the
// protocol search reports as findings, under the olm policy (the gate OLM
// ships): the race and the upgrade round the gate, an approval on outdated
// information, an upgrade without the acknowledgement the handshake asks
// for, and a gate that can never open.
var protocolKinds = []string{simulate.RuleUnsafeApproval, simulate.RuleUpgradeWhileBlocked, simulate.RuleUnacknowledgedUpgrade, simulate.RuleNeverUpgradeable, simulate.RuleWriteRejected}

// ProtocolRule reports whether a rule's findings come from the protocol
// search.
func ProtocolRule(id string) bool { return slices.Contains(protocolKinds, id) }

// protocolRules are the registry's entries for the protocol search: the
// ID, severity and remediation are the violation's own (simulate.Kinds,
// their one home).
func protocolRules() []Rule {
	var out []Rule
	for _, k := range simulate.Kinds() {
		if !ProtocolRule(k.ID) {
			continue
		}
		out = append(out, Rule{ID: k.ID, Severity: k.Severity, Verdict: true,
			Summary:     "The bounded protocol search on the bundle's own configuration (its status source, CRD, handshake and the bridge it declares, policy olm; what `simulate --explore --bundle` runs) finds a trace to this violation: " + k.Summary,
			Remediation: k.Remediation, Check: checkProtocol(k.ID)})
	}
	return out
}

// search is the protocol search's result for the bundle, run once; nil
// when there is nothing to search (no judged status source, no CRD the
// apiserver serves, or two writers of the OperatorCondition, which
// bridge-operatorcondition-handshake reports).
func (ctx *Context) search() *explore.Result {
	if ctx.searched {
		return ctx.searchResult
	}
	ctx.searched = true
	if !ctx.judged() || ctx.probed() == nil {
		return nil
	}
	by, conflict := wiring(ctx)
	if conflict {
		return nil
	}
	// The bundle first: what stops the model is the bundle's own (two
	// CSVs, a token type the schema does not give), whatever another
	// bundle of the run with the same probes found.
	sctx, err := source.FromLoaded(ctx.Bundle, ctx.Source, "bundle "+ctx.bundleArg())
	if err != nil {
		// What stops the model is another rule's finding
		// (bundle-multiple-csvs, handshake-path-missing).
		ctx.searchErr = err.Error()
		return nil
	}
	cache, key := ctx.Options.Probes, ""
	if cache != nil && ctx.probeKey != "" {
		key = ctx.probeKey + "\x00" + by
		if res, ok := cache.getSearch(key); ok {
			ctx.searchResult = res
			return res
		}
	}
	cfg := simulate.ContextConfig(sctx, []contract.Policy{contract.PolicyOLM}, contract.PolicyOLM)
	cfg.Bridge = by == result.HeldByBridge
	res, err := explore.Quick(context.Background(), cfg, sctx.Example)
	if err != nil {
		// A model that cannot start (no spec field the apiserver keeps, a
		// CR the CRD refuses to create) is said by the errors already
		// found, or else by upgrade-unverified: the verdict is then not
		// held, never a crash of the run.
		ctx.searchErr = err.Error()
		return nil
	}
	ctx.searchResult = res
	if key != "" {
		cache.putSearch(key, res)
	}
	return res
}

// checkProtocol reports the search's counterexample for one violation, at
// the annotation, with its shortest trace.
func checkProtocol(id string) func(*Context) []Issue {
	return func(ctx *Context) []Issue {
		res := ctx.search()
		if res == nil {
			return nil
		}
		var out []Issue
		for _, c := range res.Counterexamples {
			if c.Violation.Rule != id {
				continue
			}
			where := "of OLM reading the CR as the contract says"
			if by, _ := wiring(ctx); by == result.HeldByBridge {
				where = "of OLM v0 with the declared bridge"
			} else if by == result.HeldByOperatorCondition {
				where = "of OLM v0 with the operator writing its OperatorCondition"
			}
			steps := make([]string, len(c.Steps))
			for i, st := range c.Steps {
				steps[i] = fmt.Sprintf("%s %s", st.Actor, st.Action())
			}
			trail := ""
			if len(steps) > 0 {
				unit := "steps"
				if len(steps) == 1 {
					unit = "step"
				}
				trail = fmt.Sprintf(" in %d %s (%s)", len(steps), unit, strings.Join(steps, "; "))
			}
			msg := c.Violation.Message
			if id == simulate.RuleNeverUpgradeable {
				if pruned := ctx.prunedGate(); pruned != "" {
					msg += "; " + pruned
				}
			}
			is := at(ctx.CSV.Doc, AnnotationPath, "the protocol search %s, under the olm policy, found a trace%s: %s; `statuscheck simulate --explore --bundle %s` shows it",
				where, trail, msg, ctx.bundleArg())
			is.Severity = sev(c.Violation.Severity)
			out = append(out, is)
		}
		return out
	}
}

// prunedGate says, for never-upgradeable, what of the status write the
// gate reads the apiserver prunes because the CRD's schema does not
// describe it (the probes' facts), and what to add to the schema; "" when
// nothing the gate reads is pruned. The rule's remediation (make
// observedGeneration able to catch up) is about the operator and the
// status subresource: this is the cause it does not name. What the gate
// reads is the CR's conditions, as OLM's gate compares them (the
// condition's own observedGeneration) or as the bridge does (the strict
// policy, which falls back to status.observedGeneration); an operator
// that writes its OperatorCondition itself does not copy the CR there,
// so no pruning of the CR is a cause then.
func (ctx *Context) prunedGate() string {
	r := ctx.probed()
	if r == nil || r.statusRefused != nil {
		return ""
	}
	by, _ := wiring(ctx)
	if by == result.HeldByOperatorCondition {
		return ""
	}
	prefix := fmt.Sprintf("the apiserver drops what the gate reads: version %s of CRD %s does not describe", ctx.Version.Name, ctx.CRD.Name())
	if !r.conditionsKept {
		return prefix + " status.conditions, so every status write the operator makes loses the conditions, and no Upgradeable=True ever reaches the gate; add status.conditions to the schema, a list of metav1.Condition (type, status, observedGeneration, lastTransitionTime, reason, message)"
	}
	var paths, effects, adds []string
	for _, f := range r.conditionPruned {
		var effect, add string
		switch f {
		case "type":
			effect, add = "without its type a condition is not the one the gate reads", "type (type: string)"
		case "status":
			effect, add = "without its status a condition is never True", "status (type: string)"
		case "observedGeneration":
			if by == result.HeldByBridge && r.statusOGKept {
				continue // the bridge reads status.observedGeneration instead
			}
			effect, add = "without its observedGeneration a condition never counts as fresh", "observedGeneration (type: integer, format: int64)"
		}
		paths = append(paths, "status.conditions[]."+f)
		effects = append(effects, effect)
		adds = append(adds, add)
	}
	if len(paths) == 0 {
		return ""
	}
	it := "it"
	if len(paths) > 1 {
		it = "them"
	}
	return fmt.Sprintf("%s %s, so every status write the operator makes loses %s, and %s; add %s to the properties of the items of status.conditions, as metav1.Condition has %s",
		prefix, strings.Join(paths, " or "), it, strings.Join(effects, ", and "), strings.Join(adds, " and "), it)
}

// verdictRules are the IDs of the registry's Verdict rules, made once.
var verdictRules = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, r := range Rules() {
		if r.Verdict {
			m[r.ID] = true
		}
	}
	return m
})

// VerdictRule reports whether id is one of the verdict's rules (Rule.Verdict):
// they judge whether the bundle's upgrade is held, not the value of the
// status source, so generate, which writes only the annotation, reports
// them as notes instead of refusing to write.
func VerdictRule(id string) bool { return verdictRules()[id] }
