package validate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/guard"
	"github.com/statuscheck/statuscheck/pkg/result"
)

// Held by what statuscheck generates for clusters without OLM: validate
// knows of them from the manifests the user names with --guards FILE
// (what generate --admission-policy and --upgrade-hook print, applied
// beside the bundle or rendered from its chart), matched to the bundle by
// the CR they read and, for the policy, the Deployment it matches.

// guardsFor lists what of Options.Guards guards this bundle's status
// source, by kind (guard.FoundPolicy, guard.FoundHook).
func (ctx *Context) guardsFor() (policy, hook *guard.Found) {
	if ctx.Source == nil || ctx.CSV == nil {
		return nil, nil
	}
	var deployments []string
	for _, d := range ctx.CSV.Obj.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		deployments = append(deployments, d.Name)
	}
	for i := range ctx.Options.Guards {
		g := &ctx.Options.Guards[i]
		if !g.For(ctx.Source, deployments) {
			continue
		}
		switch g.What {
		case guard.FoundPolicy:
			policy = g
		case guard.FoundHook:
			hook = g
		}
	}
	return policy, hook
}

// guardLimits is what the admission guard does not hold.
const guardLimits = "not held still: an upgrade that renames the Deployment, deletes and recreates it, or changes no image; " +
	"the apiserver judges against its informer's copy of the CR, a watch behind the last write; " +
	"and the rest of the new version (CRDs, RBAC) is applied around the denied Deployment"

// hookLimits is what the pre-upgrade check does not hold.
const hookLimits = "it holds only the tool that runs the hook (Helm, Argo CD): another apply of the new manifests goes past it"

// olmOnlyRules judge only what OLM or its console reads, or the bridge
// that writes OLM's OperatorCondition: the CSV's owned kinds and its
// install strategy's RBAC (without OLM the operator's own manifests grant
// it), the install modes OLM makes Roles from, the handshake's request
// (only OLM writes one), the bridge, the console's alm-examples and
// initialization resource. The guards read the CR's condition themselves,
// so these errors and doubts leave them held; so do the bundle format's
// (bundle.Codes: the files as OLM loads them). Every other rule before
// the verdict's judges the CR, its CRD or what the operator writes to it,
// which they read as OLM's gate does.
var olmOnlyRules = []string{"status-source-not-owned", "status-rbac-install-mode", "status-rbac-missing",
	"handshake-request-not-observable", "handshake-path-missing", "handshake-request-not-reserved",
	"bridge-container-missing", "bridge-rbac-missing", "bridge-operatorcondition-handshake",
	"alm-examples-invalid", "initialization-resource-mismatch", "status-source-example-invalid"}

// guardSide says whether a rule's error or doubt bears on the guards
// (guardDoubt). conditions-observedgeneration-missing does only where
// status.observedGeneration is pruned too: the guards fall back to it
// (pkg/guard's FreshTrueExpression and malformed: the condition's own,
// else status.observedGeneration), and OLM's gate does not.
func (ctx *Context) guardSide(rule string) bool {
	switch {
	case slices.Contains(olmOnlyRules, rule), slices.Contains(bundle.Codes, rule):
		return false
	case rule == "conditions-observedgeneration-missing":
		r := ctx.probed()
		return r == nil || !r.statusOGKept
	}
	return true
}

// guardDoubt says why a guard that reads the CR's condition may not hold
// what it holds: the errors that stop the status source from working, or
// the warnings that put the CR in doubt (doubtRules), as OLM v0's verdict
// says them, but those that bear on OLM alone (guardSide). "" when
// nothing does.
func (ctx *Context) guardDoubt() (why, remedy string) {
	crSide := func(rules []string) []string {
		var out []string
		for _, r := range rules {
			if ctx.guardSide(r) {
				out = append(out, r)
			}
		}
		return out
	}
	if errs := crSide(ctx.staticErrors); len(errs) > 0 {
		return "but the status source cannot work as declared: " + strings.Join(errs, ", "), "fix those errors (see their findings)"
	}
	if doubts := crSide(ctx.doubts); len(doubts) > 0 {
		return "but the gate may not hold as declared: " + strings.Join(doubts, ", "), "see those warnings"
	}
	return "", ""
}

// withGuards revises the OLM v1 and without-OLM verdicts for the guards
// the bundle ships (Options.Guards); the others are returned unchanged.
// A guard holds the upgrade only while the CR it reads can work as
// declared (guardDoubt).
func withGuards(ctx *Context, ps []result.Protection) []result.Protection {
	policy, hook := ctx.guardsFor()
	if policy == nil && hook == nil {
		return ps
	}
	doubt, doubtRemedy := ctx.guardDoubt()
	judge := func(p *result.Protection, held string, limits ...string) {
		p.Held, p.Remedy = true, ""
		p.Reason = held
		if doubt != "" {
			p.Held, p.Remedy = false, doubtRemedy
			p.Reason += ", " + doubt
		}
		if len(limits) > 0 {
			p.Reason += "; " + strings.Join(limits, "; ")
		}
	}
	for i := range ps {
		p := &ps[i]
		switch p.Manager {
		case result.ManagerNone:
			var by, held, limits []string
			if hook != nil {
				by = append(by, guard.FoundHook)
				held = append(held, fmt.Sprintf("the pre-upgrade hook in %s runs statuscheck gate, which fails an upgrade by %s before anything of it is applied unless %s %q reports a fresh True", hook.File, strings.Join(hook.Tools, " or "), ctx.Source.Kind, ctx.Source.Name))
				limits = append(limits, hookLimits)
			}
			if policy != nil {
				by = append(by, guard.FoundPolicy)
				held = append(held, fmt.Sprintf("the admission policy in %s denies an image change of Deployment %s unless %s %q reports a fresh True, whatever applies it", policy.File, strings.Join(policy.Deployments, ", "), ctx.Source.Kind, ctx.Source.Name))
				limits = append(limits, guardLimits)
			}
			p.By = strings.Join(by, "+")
			judge(p, strings.Join(held, "; "), limits...)
		case result.ManagerOLMv1:
			if policy == nil {
				continue
			}
			p.By = guard.FoundPolicy
			judge(p, fmt.Sprintf("operator-controller has no gate of its own, but the admission policy in %s denies its update of Deployment %s (it applies the bundle through Helm, goes on past the error and retries with back-off) unless %s %q reports a fresh True",
				policy.File, strings.Join(policy.Deployments, ", "), ctx.Source.Kind, ctx.Source.Name), guardLimits, "a pre-upgrade hook is not run there")
		}
	}
	return ps
}
