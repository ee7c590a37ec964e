package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/bridge/sidecar"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/generate"
	"github.com/statuscheck/statuscheck/pkg/guard"
	"github.com/statuscheck/statuscheck/pkg/manifest"
)

// guardFlags are generate's flags for what holds an upgrade without OLM.
type guardFlags struct {
	admissionPolicy  bool
	hookImage        string
	installNamespace string
	deployment       string
	gateTimeout      time.Duration
}

func (g *guardFlags) register(f *pflag.FlagSet) {
	f.BoolVar(&g.admissionPolicy, "admission-policy", false, "print a ValidatingAdmissionPolicy and its binding that deny an image change of the operator's Deployment unless its CR reports a fresh True (docs/without-olm.md)")
	f.StringVar(&g.hookImage, "upgrade-hook", "", "print a Helm pre-upgrade / Argo CD PreSync hook Job running statuscheck gate from the container `IMAGE`, with its ServiceAccount and get on the one CR and the operator's Deployment")
	f.StringVar(&g.installNamespace, "install-namespace", "", "with --admission-policy or --upgrade-hook: the `NAMESPACE` the operator's Deployment runs in (default: the status source's)")
	f.StringVar(&g.deployment, "deployment", "", "with --admission-policy or --upgrade-hook: the install strategy's deployment `NAME` to guard (default: the only one)")
	f.DurationVar(&g.gateTimeout, "gate-timeout", 0, "with --upgrade-hook: how long the hook's gate waits for a fresh True (`DURATION`; 0: it reads once)")
}

// runGuards prints the admission guard and/or the pre-upgrade hook of
// the bundle or CSV at path, all or nothing.
func (a *app) runGuards(path string, values generate.Values, g guardFlags, hook bool) error {
	if hook && g.hookImage == "" {
		return Usagef("--upgrade-hook needs the image that runs statuscheck")
	}
	if hook {
		// A hook Job whose image cannot be pulled never runs the gate: the
		// upgrade is held for ever with an image-pull error, not the CR's
		// reason. The same check as the bridge's image.
		if err := sidecar.CheckImage(g.hookImage); err != nil {
			return Usagef("--upgrade-hook: %v", err)
		}
	}
	if g.gateTimeout < 0 {
		return Usagef("--gate-timeout cannot be negative")
	}
	if !hook && g.gateTimeout != 0 {
		return Usagef("--gate-timeout goes with --upgrade-hook")
	}
	b, err := bundle.Load(path, bundle.Options{})
	if err != nil {
		return err
	}
	if err := errors.Join(b.Errors...); err != nil {
		return err
	}
	csv := b.CSV()
	switch {
	case csv == nil:
		return fmt.Errorf("%s: no ClusterServiceVersion", path)
	case len(b.CSVs) > 1:
		return fmt.Errorf("%s holds %d ClusterServiceVersions (%s and %s); which operator is meant?", path, len(b.CSVs), b.CSVs[0].Doc.File, b.CSVs[1].Doc.File)
	}
	file := csv.Doc.File
	d, err := generate.Derive(csv.Obj, b.CRDs, values)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	src := d.Source
	if problems := contract.Check(src); len(problems) > 0 {
		return fmt.Errorf("%s: the status source %s is invalid: %s", file, src.Marshal(), problems[0])
	}
	gv := src.GroupVersion()
	c := b.FindCRD(gv.Group, src.Kind)
	if c == nil {
		return fmt.Errorf("%s: no CRD in the bundle defines %s in group %s: the guard reads the operator's own CR", file, src.Kind, gv.Group)
	}
	if !c.Namespaced() && src.Namespace == "" && values.Namespace == nil {
		// Derive drops a namespace a cluster-scoped kind cannot have;
		// the guard refuses it instead (Resolve).
		if cur, problems := contract.Parse(csv.Obj.Annotations[v1alpha1.AnnotationKey]); cur != nil && len(problems) == 0 && cur.Kind == src.Kind {
			src.Namespace = cur.Namespace
		}
	}
	ns := g.installNamespace
	if ns == "" && c.Namespaced() {
		ns = src.Namespace
	}
	t, err := guard.Resolve(csv.Obj, file, src, c.Plural(), c.Namespaced(), ns, g.deployment)
	if err != nil {
		return err
	}
	var objs []runtime.Object
	if g.admissionPolicy {
		p, bd := guard.AdmissionPolicy(t)
		objs = append(objs, p, bd)
	}
	if hook {
		objs = append(objs, guard.UpgradeHook(t, guard.Hook{Image: g.hookImage, Timeout: g.gateTimeout})...)
	}
	out, err := guard.YAML(objs...)
	if err != nil {
		return err
	}
	_, err = a.stdout.Write(out)
	return err
}

// readGuards reads validate --guards: the admission policies and hooks
// in each file (a file that cannot be read or parsed is an error naming
// it).
func readGuards(files []string) ([]guard.Found, error) {
	var out []guard.Found
	var errs []error
	for _, f := range files {
		data, err := bundle.OS{}.ReadFile(f, manifest.DefaultLimits.MaxFileSize)
		if err != nil {
			errs = append(errs, fmt.Errorf("reading --guards %s: %w", f, err))
			continue
		}
		found, err := guard.Parse(f, data)
		if err != nil {
			errs = append(errs, fmt.Errorf("--guards %s: %w", f, err))
			continue
		}
		if len(found) == 0 {
			errs = append(errs, fmt.Errorf("--guards %s holds no ValidatingAdmissionPolicy with its binding, and no hook Job running statuscheck gate --source", f))
		}
		out = append(out, found...)
	}
	return out, errors.Join(errs...)
}
