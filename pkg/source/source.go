// Package source resolves what simulate, record, generate and the bridge
// are run against: the status source (the CSV's annotation, or a
// --source reference), its CRD (from the bundle, or --crd files for an
// operator deployed without OLM), and that CRD's version as the apiserver
// serves it (package apiserver). It is the one place a bundle or a --crd
// path is turned into that context.
package source

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/apiserver"
	"github.com/statuscheck/statuscheck/pkg/bridge/sidecar"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/crd"
	"github.com/statuscheck/statuscheck/pkg/manifest"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Context is a resolved status source.
type Context struct {
	Source *v1alpha1.StatusSource
	// StatusSubresource is the CRD version's /status (nil when no CRD
	// was given).
	StatusSubresource *bool
	// Plural is the CRD's resource name.
	Plural string
	// Namespaced is the CRD's scope.
	Namespaced bool
	// CRD is the status source's CRD.
	CRD *crd.CRD
	// Tokens are the handshake token's JSON types, decided from the CRD
	// version's schema (crd.Version.HandshakeTokens).
	Tokens contract.Tokens
	// Resource serves the CRD version: writes are pruned, defaulted and
	// validated as the apiserver does.
	Resource *apiserver.Resource
	// Example is the CR the console creates for the kind (the CSV's
	// initialization resource, else its alm-examples entry), when the
	// bundle has one.
	Example map[string]interface{}
	// Bundle is the bundle the context came from (nil for --crd).
	Bundle *bundle.Bundle
	// Bridge is the statuscheck bridge sidecar the bundle's CSV declares
	// (sidecar.Declared, annotation sidecar.AnnotationKey), nil when it
	// declares none: a run against the bundle models it
	// (simulate.ContextConfig).
	Bridge *sidecar.Declaration
	// From says where the status source came from ("bundle DIR",
	// "--source REF").
	From string
}

// GVR is the status source's resource: its group and version, and the
// CRD's plural.
func (c *Context) GVR() schema.GroupVersionResource {
	gv := c.Source.GroupVersion()
	return schema.GroupVersionResource{Group: gv.Group, Version: gv.Version, Resource: c.Plural}
}

// FromBundle takes the status source from a bundle's CSV and the
// generation rules from its CRD. A bundle with errors validate would
// report in its files (a YAML error, two CSVs) is refused with what
// validate says.
func FromBundle(dir string) (*Context, error) {
	b, err := bundle.Load(dir, bundle.Options{})
	if err != nil {
		return nil, err
	}
	return FromLoaded(b, nil, "bundle "+dir)
}

// FromLoaded is FromBundle for a bundle already loaded (validate's), read
// from memory: no file is read again. src is the status source its CSV's
// annotation declares, when the caller has parsed it already; nil parses
// the annotation here. from says where the bundle came from, for
// messages ("bundle DIR"). The context's Bridge is the bridge the CSV
// declares (sidecar.Declared).
func FromLoaded(b *bundle.Bundle, src *v1alpha1.StatusSource, from string) (*Context, error) {
	if err := errors.Join(b.Errors...); err != nil {
		return nil, err
	}
	dir := b.Path
	csv := b.CSV()
	switch {
	case csv == nil && unreadable(b) != nil:
		return nil, unreadable(b)
	case csv == nil:
		return nil, fmt.Errorf("%s: no ClusterServiceVersion", dir)
	case len(b.CSVs) > 1:
		return nil, fmt.Errorf("%s holds %d ClusterServiceVersions (%s and %s); which status source is meant?", dir, len(b.CSVs), b.CSVs[0].Doc.File, b.CSVs[1].Doc.File)
	}
	if src == nil {
		raw, ok := csv.Obj.Annotations[v1alpha1.AnnotationKey]
		if !ok {
			return nil, fmt.Errorf("%s: the CSV %s declares no status source (run statuscheck generate)", csv.Doc.File, csv.Obj.Name)
		}
		var problems []contract.Problem
		if src, problems = contract.Parse(raw); len(problems) > 0 {
			return nil, fmt.Errorf("%s: the status-source annotation is invalid: %s (run statuscheck validate)", csv.Doc.File, problems[0])
		}
	}
	gv := src.GroupVersion()
	c := b.FindCRD(gv.Group, src.Kind)
	if c == nil {
		if err := unreadable(b); err != nil {
			return nil, fmt.Errorf("%s: no CRD in the bundle defines %s in group %s; a manifest could not be read:\n%w", dir, src.Kind, gv.Group, err)
		}
		return nil, fmt.Errorf("%s: no CRD in the bundle defines %s in group %s", dir, src.Kind, gv.Group)
	}
	ctx, err := forCRD(src, c, from)
	if err != nil {
		return nil, err
	}
	ctx.Example, _ = bundle.StatusSourceExample(csv.Obj, src)
	ctx.Bundle = b
	// A value that does not parse declares no bridge here; validate
	// reports it (bridge-container-missing).
	ctx.Bridge, _ = sidecar.Declared(csv.Obj)
	return ctx, nil
}

// unreadable is what validate says of manifests that could not be read
// (manifest-parse, manifest-limit), with their positions; nil when every
// manifest was read.
func unreadable(b *bundle.Bundle) error {
	var errs []error
	for _, p := range b.Problems {
		if p.Code == bundle.CodeParse || p.Code == bundle.CodeLimit {
			errs = append(errs, fmt.Errorf("%s: error %s: %s", p.Pos, p.Code, p.Message))
		}
	}
	return errors.Join(errs...)
}

func forCRD(src *v1alpha1.StatusSource, c *crd.CRD, from string) (*Context, error) {
	v := c.Version(src.GroupVersion().Version)
	if v == nil {
		return nil, fmt.Errorf("CRD %s has no version %s", c.Name(), src.GroupVersion().Version)
	}
	sub := v.StatusSubresource
	res, err := apiserver.NewResource(c.V1, v.Name)
	if err != nil {
		return nil, fmt.Errorf("%s: the apiserver could not serve CRD %s: %w", c.Doc.File, c.Name(), err)
	}
	tokens, typeErrs := v.HandshakeTokens(src)
	if err := crd.JoinTokenTypeErrors(typeErrs); err != nil {
		return nil, fmt.Errorf("%s: CRD %s version %s: %w (statuscheck validate reports it as handshake-path-missing)", c.Doc.File, c.Name(), v.Name, err)
	}
	return &Context{Source: src, StatusSubresource: &sub, Plural: c.Plural(), Namespaced: c.Namespaced(), CRD: c, From: from, Resource: res, Tokens: tokens}, nil
}

// ParseRef reads GROUP/VERSION/KIND/NAME or GROUP/VERSION/KIND/NAMESPACE/NAME.
func ParseRef(ref string) (*v1alpha1.StatusSource, error) {
	parts := strings.Split(ref, "/")
	src := &v1alpha1.StatusSource{}
	switch len(parts) {
	case 4:
		src.APIVersion, src.Kind, src.Name = parts[0]+"/"+parts[1], parts[2], parts[3]
	case 5:
		src.APIVersion, src.Kind, src.Namespace, src.Name = parts[0]+"/"+parts[1], parts[2], parts[3], parts[4]
	default:
		return nil, fmt.Errorf("--source %q is not GROUP/VERSION/KIND/NAME (or GROUP/VERSION/KIND/NAMESPACE/NAME)", ref)
	}
	if problems := contract.Check(src); len(problems) > 0 {
		return nil, fmt.Errorf("--source %q: %s", ref, problems[0])
	}
	return src, nil
}

// FromCRD serves operators deployed without OLM: the CRD file (or a
// directory of CRD files, as config/crd/bases) and the object's reference.
func FromCRD(path, ref string) (*Context, error) {
	src, err := ParseRef(ref)
	if err != nil {
		return nil, err
	}
	return FromCRDFor(path, src, "--source "+ref)
}

// FromCRDFor is FromCRD for a status source given as a value (a trace's
// own statusSource); from says where it came from, for messages.
func FromCRDFor(path string, src *v1alpha1.StatusSource, from string) (*Context, error) {
	gv := src.GroupVersion()
	var kinds, others []string
	files, err := crdFiles(path)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		crds, docs, err := readCRDs(f)
		if err != nil {
			return nil, err
		}
		for _, c := range crds {
			if c.Group() == gv.Group && c.Kind() == src.Kind {
				return forCRD(src, c, from)
			}
			kinds = append(kinds, c.Kind()+"."+c.Group())
		}
		for _, d := range docs {
			if k, _ := d.Object()["kind"].(string); k != crd.Kind && k != "" {
				others = append(others, k)
			}
		}
	}
	if len(kinds) == 0 {
		what := "no CustomResourceDefinition"
		if len(others) > 0 {
			what += " (it holds " + strings.Join(dedupe(others), ", ") + ")"
		}
		return nil, fmt.Errorf("--crd %s holds %s; give the CRD of %s", path, what, src.Kind)
	}
	return nil, fmt.Errorf("--crd %s defines no %s in group %s (it has %s)", path, src.Kind, gv.Group, strings.Join(kinds, ", "))
}

// LoadCRDs reads --crd: every CRD of a file, or of the manifest files of a
// directory (files there that are not CRDs, or do not parse, are skipped).
// A file that holds no CRD is an error.
func LoadCRDs(path string) ([]*crd.CRD, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("reading --crd %s: %w", path, unwrap(err))
	}
	if st.IsDir() {
		return CRDsIn(path, "")
	}
	crds, _, err := readCRDs(path)
	if err != nil {
		return nil, err
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("--crd %s holds no CustomResourceDefinition", path)
	}
	return crds, nil
}

// CRDsIn reads the CRDs among the manifest files of dir, skipping skip
// (a CSV beside them). Files that are not CRDs, or do not parse, are not
// its business.
func CRDsIn(dir, skip string) ([]*crd.CRD, error) {
	files, err := crdFiles(dir)
	if err != nil {
		return nil, err
	}
	var out []*crd.CRD
	for _, f := range files {
		if filepath.Clean(f) == filepath.Clean(skip) {
			continue
		}
		crds, _, _ := readCRDs(f)
		out = append(out, crds...)
	}
	return out, nil
}

// crdFiles is path itself, or the regular manifest files of a directory.
func crdFiles(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("reading --crd %s: %w", path, unwrap(err))
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("reading --crd %s: %w", path, unwrap(err))
	}
	var files []string
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".yaml", ".yml", ".json":
			if e.Type().IsRegular() {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
	}
	return files, nil
}

// readCRDs reads the CRD documents of one file, with all its documents.
func readCRDs(file string) ([]*crd.CRD, []*manifest.Document, error) {
	data, err := bundle.OS{}.ReadFile(file, manifest.DefaultLimits.MaxFileSize)
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", file, unwrap(err))
	}
	docs, err := manifest.Parse(file, data, manifest.DefaultLimits)
	if err != nil {
		return nil, nil, err
	}
	crds, err := crd.DecodeAll(docs)
	return crds, docs, err
}

func unwrap(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
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
