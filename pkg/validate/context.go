package validate

import (
	"fmt"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/catalog"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/crd"
	"github.com/statuscheck/statuscheck/pkg/explore"
	"github.com/statuscheck/statuscheck/pkg/guard"
	"github.com/statuscheck/statuscheck/pkg/manifest"
	"github.com/statuscheck/statuscheck/pkg/result"
)

// Options change what the rules report.
type Options struct {
	// RequireStatusSource makes status-source-missing an error.
	RequireStatusSource bool
	// Probes, when set, remembers the apiserver probes' results across
	// bundles (a catalog repeats one CRD many times); nil runs them for
	// each bundle.
	Probes *ProbeCache
	// Guards are what holds the upgrade without OLM beside the bundle
	// (validate --guards: the admission policy and pre-upgrade hook
	// generate prints); the verdict reads those that guard the bundle's
	// status source (withGuards).
	Guards []guard.Found
	// Catalogs reads the file-based catalogs among Paths' paths (fbc.Walk,
	// which links operator-registry's declcfg); nil refuses them, a
	// PathError each.
	Catalogs catalog.Walker
}

// Context is what every rule's check reads: the bundle and the status
// source resolved against it once, so that checks stay small and agree.
type Context struct {
	Bundle  *bundle.Bundle
	Options Options

	// CSV is the bundle's ClusterServiceVersion, nil when there is none.
	CSV *bundle.CSV
	// HasAnnotation is set when the CSV carries the annotation.
	HasAnnotation bool
	// Annotation is its raw value.
	Annotation string
	// Source is the decoded annotation, nil when it is not a JSON object.
	Source *v1alpha1.StatusSource
	// SourceProblems are what contract.Parse found wrong with it.
	SourceProblems []contract.Problem
	// CRD is the bundle's CRD for the source's group and kind, or nil.
	CRD *crd.CRD
	// Version is the CRD's version named by the source, or nil.
	Version *crd.Version

	probe    *probeResults // memo of probes()
	probeKey string        // its key in Options.Probes, when it has one

	// staticErrors are the rules with error findings among those before
	// the verdict's (run records them as it goes; Protection reads them).
	staticErrors []string
	// doubts are the rules with warnings among doubtRules.
	doubts       []string
	searchErr    string          // why search() found no result
	searched     bool            // search() ran
	searchResult *explore.Result // its memo
}

// NewContext resolves the status source of b.
func NewContext(b *bundle.Bundle, opts Options) *Context {
	ctx := &Context{Bundle: b, Options: opts, CSV: b.CSV()}
	if ctx.CSV == nil {
		return ctx
	}
	ctx.Annotation, ctx.HasAnnotation = ctx.CSV.Obj.Annotations[v1alpha1.AnnotationKey]
	if !ctx.HasAnnotation {
		return ctx
	}
	ctx.Source, ctx.SourceProblems = contract.Parse(ctx.Annotation)
	if !ctx.Resolvable() {
		return ctx
	}
	gv := ctx.Source.GroupVersion()
	ctx.CRD = b.FindCRD(gv.Group, ctx.Source.Kind)
	if ctx.CRD != nil {
		ctx.Version = ctx.CRD.Version(gv.Version)
	}
	return ctx
}

// Resolvable reports whether the source names a group, version and kind
// that can be looked up.
func (c *Context) Resolvable() bool {
	if c.Source == nil || c.Source.Kind == "" {
		return false
	}
	gv := c.Source.GroupVersion()
	return gv.Group != "" && gv.Version != ""
}

// AnnotationPath is the field path of the annotation in the CSV.
var AnnotationPath = manifest.NewPath("metadata", "annotations").Key(v1alpha1.AnnotationKey)

// AnnotationPos is where the annotation's value is written.
func (c *Context) AnnotationPos() manifest.Position {
	pos, _ := c.CSV.Doc.Locate(AnnotationPath)
	return pos
}

// Issue is what a check reports: a place and a message. The rule supplies
// the ID, severity and remediation; Severity overrides the rule's default
// when set.
type Issue struct {
	Pos      manifest.Position
	Field    string
	Message  string
	Severity *result.Severity
}

func sev(s result.Severity) *result.Severity { return &s }

// at is a helper for issues located by a path in a document. The field is
// the node the position points at: p, or the deepest part of it that
// exists.
func at(doc *manifest.Document, p manifest.Path, format string, args ...interface{}) Issue {
	pos, _ := doc.Locate(p)
	return Issue{Pos: pos, Field: doc.Found(p).String(), Message: fmt.Sprintf(format, args...)}
}

// atKey is at, pointing at the key of the deepest entry that exists.
func atKey(doc *manifest.Document, p manifest.Path, format string, args ...interface{}) Issue {
	pos, _ := doc.LocateKey(p)
	return Issue{Pos: pos, Field: doc.Found(p).String(), Message: fmt.Sprintf(format, args...)}
}
