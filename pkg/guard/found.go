package guard

import (
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/manifest"
)

// What validate is told a cluster runs beside the bundle (validate
// --guards FILE): the manifests generate --admission-policy and
// --upgrade-hook print, as applied or as a chart renders them.
const (
	// FoundPolicy is an admission guard: a ValidatingAdmissionPolicy
	// with a binding whose paramRef names a CR.
	FoundPolicy = "admission-policy"
	// FoundHook is a pre-upgrade hook Job that runs statuscheck gate.
	FoundHook = "upgrade-hook"
)

// Found is one guard read from a manifest file.
type Found struct {
	What string
	// File is where it was read.
	File string
	// Group, Kind and Name are the CR it reads (for a hook, from its
	// gate's --source).
	Group, Kind, Name string
	// Deployments are the Deployment names a policy matches.
	Deployments []string
	// Tools are, for a hook, the tools whose upgrade it holds: "Helm",
	// "Argo CD" or both.
	Tools []string
}

// Parse reads the guards among the documents of a manifest file; other
// kinds are skipped. A file that does not parse, or a guard that does not
// decode, is an error naming the file.
func Parse(file string, data []byte) ([]Found, error) {
	docs, err := manifest.Parse(file, data, manifest.DefaultLimits)
	if err != nil {
		return nil, err
	}
	policies := map[string]*admissionv1.ValidatingAdmissionPolicy{}
	var bindings []*admissionv1.ValidatingAdmissionPolicyBinding
	var out []Found
	for _, d := range docs {
		obj := d.Object()
		kind, _ := obj["kind"].(string)
		apiVersion, _ := obj["apiVersion"].(string)
		var into interface{}
		switch {
		case kind == "ValidatingAdmissionPolicy" && strings.HasPrefix(apiVersion, "admissionregistration.k8s.io/"):
			into = &admissionv1.ValidatingAdmissionPolicy{}
		case kind == "ValidatingAdmissionPolicyBinding" && strings.HasPrefix(apiVersion, "admissionregistration.k8s.io/"):
			into = &admissionv1.ValidatingAdmissionPolicyBinding{}
		case kind == "Job" && apiVersion == "batch/v1":
			into = &batchv1.Job{}
		default:
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, into); err != nil {
			return nil, fmt.Errorf("%s: decoding %s: %w", file, kind, err)
		}
		switch o := into.(type) {
		case *admissionv1.ValidatingAdmissionPolicy:
			policies[o.Name] = o
		case *admissionv1.ValidatingAdmissionPolicyBinding:
			bindings = append(bindings, o)
		case *batchv1.Job:
			if f, ok := hookOf(o); ok {
				f.File = file
				out = append(out, f)
			}
		}
	}
	for _, b := range bindings {
		p := policies[b.Spec.PolicyName]
		if p == nil || p.Spec.ParamKind == nil || b.Spec.ParamRef == nil || b.Spec.ParamRef.Name == "" || p.Spec.MatchConstraints == nil {
			continue
		}
		// A binding that only warns or audits (the override's state)
		// holds nothing, nor does a policy whose failures are ignored:
		// under failurePolicy Ignore a missing CR or a param informer that
		// has not synced admits the update.
		if !slices.Contains(b.Spec.ValidationActions, admissionv1.Deny) ||
			(p.Spec.FailurePolicy != nil && *p.Spec.FailurePolicy == admissionv1.Ignore) {
			continue
		}
		gv, _, _ := strings.Cut(p.Spec.ParamKind.APIVersion, "/")
		if !strings.Contains(p.Spec.ParamKind.APIVersion, "/") {
			gv = ""
		}
		f := Found{What: FoundPolicy, File: file, Group: gv, Kind: p.Spec.ParamKind.Kind, Name: b.Spec.ParamRef.Name}
		for _, r := range p.Spec.MatchConstraints.ResourceRules {
			if slices.Contains(r.Resources, "deployments") && slices.Contains(r.Operations, admissionv1.Update) {
				f.Deployments = append(f.Deployments, r.ResourceNames...)
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// hookOf reads a Job that runs statuscheck gate --source as a pre-upgrade
// (Helm) or PreSync (Argo CD) hook. Only a hook that runs before the
// upgrade is applied holds it, and it must do so for each tool that
// reads it as a hook:
//
//   - Helm reads helm.sh/hook: each value, trimmed and lowercased, must
//     be a hook event Helm knows, else it skips the whole Job, neither
//     run nor applied (Helm v4.3.2, pkg/release/v1/util/manifest_sorter.go,
//     sort: "skipping unknown hooks"); one of them must be pre-upgrade.
//   - Argo CD reads its own argocd.argoproj.io/hook first and Helm's only
//     when its own names no hook type it knows (gitops-engine,
//     pkg/sync/hook/hook.go, Types: "we ignore Helm hooks if we have Argo
//     hook"), mapping Helm's pre-install and pre-upgrade, exactly so
//     spelled, to PreSync (pkg/sync/hook/helm/type.go). A Job with Helm's
//     pre-upgrade and Argo CD's PostSync runs after an Argo CD sync has
//     applied the upgrade, so it is not counted.
//
// Found.Tools names the tools it holds.
func hookOf(j *batchv1.Job) (Found, bool) {
	var tools []string
	helmValue, hasHelm := j.Annotations[helmHook]
	var helm []string
	if hasHelm {
		for _, h := range strings.Split(helmValue, ",") {
			h = strings.TrimSpace(h)
			if !slices.Contains(helmHookEvents, strings.ToLower(h)) {
				return Found{}, false
			}
			helm = append(helm, h)
		}
		if !slices.ContainsFunc(helm, func(h string) bool { return strings.ToLower(h) == "pre-upgrade" }) {
			return Found{}, false
		}
		tools = append(tools, "Helm")
	}
	var argo []string
	for _, h := range strings.Split(j.Annotations[argoHook], ",") {
		if h = strings.TrimSpace(h); slices.Contains(argoHookTypes, h) {
			argo = append(argo, h)
		}
	}
	switch {
	case len(argo) > 0 && !slices.Contains(argo, "PreSync"):
		return Found{}, false
	case len(argo) > 0 || slices.Contains(helm, "pre-upgrade") || slices.Contains(helm, "pre-install"):
		tools = append(tools, "Argo CD")
	}
	if len(tools) == 0 {
		return Found{}, false
	}
	for _, c := range j.Spec.Template.Spec.Containers {
		args := append(append([]string{}, c.Command...), c.Args...)
		i := slices.Index(args, "gate")
		if i < 0 {
			continue
		}
		for k := i; k+1 < len(args); k++ {
			if args[k] == "--source" {
				parts := strings.Split(args[k+1], "/")
				if len(parts) == 4 || len(parts) == 5 {
					return Found{What: FoundHook, Group: parts[0], Kind: parts[2], Name: parts[len(parts)-1], Tools: tools}, true
				}
			}
		}
	}
	return Found{}, false
}

// helmHookEvents are the hook events Helm knows (Helm v4.3.2,
// pkg/release/v1/util/manifest_sorter.go, events).
var helmHookEvents = []string{"pre-install", "post-install", "pre-delete", "post-delete", "pre-upgrade", "post-upgrade",
	"pre-rollback", "post-rollback", "test", "test-success"}

// argoHookTypes are the hook types Argo CD reads from its own annotation:
// gitops-engine's (pkg/sync/common/types.go, NewHookType: PreSync, Sync,
// PostSync, SyncFail, Skip) and Argo CD's delete hooks (controller/hook.go:
// PreDelete, PostDelete). gitops-engine alone would read a delete hook as
// no type and fall back to Helm's annotation; counting it as Argo CD's
// own errs towards not counting the Job.
var argoHookTypes = []string{"PreSync", "Sync", "PostSync", "SyncFail", "Skip", "PreDelete", "PostDelete"}

// For says whether f guards the status source src of a CSV whose
// install strategy has the deployments named: the same kind and CR, and
// for a policy one of those deployments.
func (f Found) For(src *v1alpha1.StatusSource, deployments []string) bool {
	if f.Group != src.GroupVersion().Group || f.Kind != src.Kind || f.Name != src.Name {
		return false
	}
	if f.What == FoundHook {
		return true
	}
	for _, d := range f.Deployments {
		if slices.Contains(deployments, d) {
			return true
		}
	}
	return false
}
