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
		// holds nothing.
		if !slices.Contains(b.Spec.ValidationActions, admissionv1.Deny) {
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
// (Helm) or PreSync (Argo CD) hook.
func hookOf(j *batchv1.Job) (Found, bool) {
	// Only a hook that runs before the upgrade is applied holds it:
	// Helm's pre-upgrade, Argo CD's PreSync (either may be one of a
	// comma-separated list).
	hookIn := func(key, want string) bool {
		for _, h := range strings.Split(j.Annotations[key], ",") {
			if strings.TrimSpace(h) == want {
				return true
			}
		}
		return false
	}
	if !hookIn(helmHook, "pre-upgrade") && !hookIn(argoHook, "PreSync") {
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
					return Found{What: FoundHook, Group: parts[0], Kind: parts[2], Name: parts[len(parts)-1]}, true
				}
			}
		}
	}
	return Found{}, false
}

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
