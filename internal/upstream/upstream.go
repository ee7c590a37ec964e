// Package upstream generates, from the module cache, copies of the
// apiserver's code that pkg/apiserver runs, so that statuscheck links it
// without the packages beside it that it does not run.
//
// k8s.io/apiextensions-apiserver's pkg/registry/customresource and
// pkg/registry/customresourcedefinition hold two things: the strategies
// (strategy.go, status_strategy.go, validator.go: what the apiserver does
// to a create, an update, a status write, which is what statuscheck's
// probes ask) and the REST storage (etcd.go). The storage imports
// k8s.io/apiserver's generic registry, whose options import the storage
// backend's factory, and through it etcd's client: about 320 packages that
// every statuscheck process initialised and none ran. The strategies use
// two helpers of that registry (its matcher.go), and pkg/apiserver one
// function of its store (ShouldDeleteDuringUpdate). The CRD validation
// (pkg/apis/apiextensions/validation) checks a conversion webhook's URL,
// service and CA bundle with k8s.io/apiserver/pkg/util/webhook's
// validation.go, a package whose clients bring egress selection, gRPC and
// OpenTelemetry's exporters: 140 packages more.
//
// So the subpackages are those files, byte for byte but for the import
// paths of each other (Rewrites) and a header naming their source:
// customresource, customresourcedefinition, validation, generic
// (matcher.go), webhook (validation.go) and registry
// (ShouldDeleteDuringUpdate alone, cut out of store.go with its doc
// comment). Upstream's own tests of those files come with them and run on
// the copies. Generate makes them from the versions go.mod requires; `make
// upstream` (go generate) writes them, and a test fails when the files
// differ from what Generate makes, as after a Kubernetes update.
package upstream

//go:generate go run ./gen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ImportPath is this package's import path; the copies are below it.
const ImportPath = "github.com/statuscheck/statuscheck/internal/upstream"

// Source is one upstream file and where its copy goes.
type Source struct {
	// Module is the module the file is in, at the version go.mod requires.
	Module string
	// File is the file's path in the module.
	File string
	// Package is the copy's directory under internal/upstream (its package
	// name is the upstream package's).
	Package string
	// Funcs, when set, are the only declarations copied (with the file's
	// licence header and the imports they use): a function cut out of a
	// file whose other declarations link what the copies are for leaving
	// out.
	Funcs []string
}

// Sources are the files copied.
var Sources = []Source{
	{Module: "k8s.io/apiextensions-apiserver", File: "pkg/registry/customresource/strategy.go", Package: "customresource"},
	{Module: "k8s.io/apiextensions-apiserver", File: "pkg/registry/customresource/status_strategy.go", Package: "customresource"},
	{Module: "k8s.io/apiextensions-apiserver", File: "pkg/registry/customresource/validator.go", Package: "customresource"},
	{Module: "k8s.io/apiextensions-apiserver", File: "pkg/registry/customresource/strategy_test.go", Package: "customresource"},
	{Module: "k8s.io/apiextensions-apiserver", File: "pkg/registry/customresource/status_strategy_test.go", Package: "customresource"},
	{Module: "k8s.io/apiextensions-apiserver", File: "pkg/registry/customresourcedefinition/strategy.go", Package: "customresourcedefinition"},
	{Module: "k8s.io/apiextensions-apiserver", File: "pkg/registry/customresourcedefinition/strategy_test.go", Package: "customresourcedefinition"},
	{Module: "k8s.io/apiextensions-apiserver", File: "pkg/apis/apiextensions/validation/validation.go", Package: "validation"},
	{Module: "k8s.io/apiextensions-apiserver", File: "pkg/apis/apiextensions/validation/cel_validation.go", Package: "validation"},
	{Module: "k8s.io/apiextensions-apiserver", File: "pkg/apis/apiextensions/validation/validation_test.go", Package: "validation"},
	{Module: "k8s.io/apiserver", File: "pkg/registry/generic/matcher.go", Package: "generic"},
	{Module: "k8s.io/apiserver", File: "pkg/util/webhook/validation.go", Package: "webhook"},
	{Module: "k8s.io/apiserver", File: "pkg/util/webhook/validation_test.go", Package: "webhook"},
	{Module: "k8s.io/apiserver", File: "pkg/registry/generic/registry/store.go", Package: "registry", Funcs: []string{"ShouldDeleteDuringUpdate"}},
}

// origin names the source in the copy's header and in errors: module,
// version and file, and the functions cut out of it.
func (s Source) origin(version string) string {
	o := s.Module + "@" + version + "/" + s.File
	if len(s.Funcs) > 0 {
		o += " (" + strings.Join(s.Funcs, ", ") + ")"
	}
	return o
}

// Rewrites are the import paths the copies take from each other instead:
// every package copied, so that no copy (a test in an external package
// among them) reaches the original.
var Rewrites = map[string]string{
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource":           ImportPath + "/customresource",
	"k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition": ImportPath + "/customresourcedefinition",
	"k8s.io/apiserver/pkg/registry/generic/registry":                       ImportPath + "/registry",
	"k8s.io/apiserver/pkg/registry/generic":                                ImportPath + "/generic",
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation":     ImportPath + "/validation",
	"k8s.io/apiserver/pkg/util/webhook":                                    ImportPath + "/webhook",
}

// Module is a module as `go list -m` gives it.
type Module struct {
	Path, Version, Dir string
}

// Modules finds, with `go list -m` in dir (a directory of statuscheck's
// module), the modules Sources name, at the versions go.mod requires.
func Modules(dir string) (map[string]Module, error) {
	var paths []string
	for _, s := range Sources {
		if !slices.Contains(paths, s.Module) {
			paths = append(paths, s.Module)
		}
	}
	cmd := exec.Command("go", append([]string{"list", "-m", "-json"}, paths...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -m %s: %w: %s", strings.Join(paths, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	mods := map[string]Module{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var m Module
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("reading go list -m: %w", err)
		}
		if m.Dir == "" {
			return nil, fmt.Errorf("module %s@%s is not in the module cache (go mod download %s)", m.Path, m.Version, m.Path)
		}
		mods[m.Path] = m
	}
	return mods, nil
}

// Generate makes every copy and each copied package's doc.go from the
// modules mods: file names relative to internal/upstream, and their
// contents.
func Generate(mods map[string]Module) (map[string][]byte, error) {
	out := map[string][]byte{}
	var errs []error
	from := map[string][]string{}
	for _, s := range Sources {
		m, ok := mods[s.Module]
		if !ok {
			errs = append(errs, fmt.Errorf("module %s: not given", s.Module))
			continue
		}
		src, err := os.ReadFile(filepath.Join(m.Dir, filepath.FromSlash(s.File)))
		if err != nil {
			errs = append(errs, fmt.Errorf("reading %s@%s: %w", s.Module, m.Version, err))
			continue
		}
		b, err := copyFile(s, m, src)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.origin(m.Version), err))
			continue
		}
		out[path.Join(s.Package, path.Base(s.File))] = b
		if !strings.HasSuffix(s.File, "_test.go") {
			from[s.Package] = append(from[s.Package], s.origin(m.Version))
		}
	}
	for pkg, files := range from {
		out[path.Join(pkg, "doc.go")] = docFile(pkg, files)
	}
	return out, errors.Join(errs...)
}

// importName is the name an import of path p without a name declares,
// as Go's conventions spell it: the last element, skipping a major
// version (k8s.io/klog/v2 is klog) and dropping a gopkg.in version
// (gopkg.in/yaml.v3 is yaml). A package named otherwise is reported as a
// name no import has.
func importName(p string) string {
	elems := strings.Split(p, "/")
	name := elems[len(elems)-1]
	if len(elems) > 1 && len(name) > 1 && name[0] == 'v' && strings.Trim(name[1:], "0123456789") == "" {
		name = elems[len(elems)-2]
	}
	if i := strings.Index(name, ".v"); i > 0 && strings.HasPrefix(p, "gopkg.in/") {
		name = name[:i]
	}
	return name
}

// header is the first line of every file Generate makes: Go's mark of
// generated code, with the source.
func header(what string) string {
	return "// Code generated by internal/upstream/gen from " + what + ". DO NOT EDIT.\n\n"
}

func docFile(pkg string, files []string) []byte {
	var b strings.Builder
	b.WriteString(header("the sources below"))
	fmt.Fprintf(&b, "// Package %s is a copy, made by internal/upstream/gen, of\n//\n", pkg)
	for _, f := range files {
		fmt.Fprintf(&b, "//   - %s\n", f)
	}
	fmt.Fprintf(&b, "//\n// for pkg/apiserver, apart from the other files of its package upstream,\n// which link what statuscheck does not run (see package upstream).\npackage %s\n", pkg)
	return []byte(b.String())
}

// copyFile is src with its imports rewritten (Rewrites), or, with Funcs,
// the licence header, the package clause, the imports the functions use
// and the functions, each as upstream writes it.
func copyFile(s Source, m Module, src []byte) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, s.File, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	if f.Name.Name != s.Package && f.Name.Name != s.Package+"_test" {
		return nil, fmt.Errorf("package %s, copied to %s: the names must agree", f.Name.Name, s.Package)
	}
	text := func(from, to token.Pos) string {
		return string(src[fset.Position(from).Offset:fset.Position(to).Offset])
	}
	importPath := func(spec *ast.ImportSpec) string {
		p, _ := strconv.Unquote(spec.Path.Value)
		if r, ok := Rewrites[p]; ok {
			return strconv.Quote(r)
		}
		return spec.Path.Value
	}
	var body string
	if len(s.Funcs) == 0 {
		// The whole file: only the import paths change.
		var b strings.Builder
		last := 0
		for _, spec := range f.Imports {
			p, _ := strconv.Unquote(spec.Path.Value)
			r, ok := Rewrites[p]
			if !ok {
				continue
			}
			b.Write(src[last:fset.Position(spec.Path.Pos()).Offset])
			b.WriteString(strconv.Quote(r))
			last = fset.Position(spec.Path.End()).Offset
		}
		b.Write(src[last:])
		body = b.String()
	} else {
		var b strings.Builder
		// The licence header: the comments before the package clause.
		if len(f.Comments) > 0 && f.Comments[0].Pos() < f.Package {
			b.WriteString(text(f.Comments[0].Pos(), f.Comments[0].End()))
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "package %s\n\n", f.Name.Name)
		var decls []*ast.FuncDecl
		for _, name := range s.Funcs {
			var found *ast.FuncDecl
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == name {
					found = fd
				}
			}
			if found == nil {
				return nil, fmt.Errorf("no function %s", name)
			}
			decls = append(decls, found)
		}
		// The qualifiers the functions use: identifiers before a dot that
		// the parser resolved to nothing in the file (package names).
		used := map[string]bool{}
		for _, d := range decls {
			ast.Inspect(d, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && id.Obj == nil {
						used[id.Name] = true
					}
				}
				return true
			})
		}
		b.WriteString("import (\n")
		for _, spec := range f.Imports {
			p, _ := strconv.Unquote(spec.Path.Value)
			name := importName(p)
			if spec.Name != nil {
				name = spec.Name.Name
			}
			if !used[name] {
				continue
			}
			delete(used, name)
			b.WriteString("\t")
			if spec.Name != nil {
				b.WriteString(spec.Name.Name + " ")
			}
			b.WriteString(importPath(spec) + "\n")
		}
		b.WriteString(")\n")
		if len(used) > 0 {
			var names []string
			for n := range used {
				names = append(names, n)
			}
			slices.Sort(names)
			return nil, fmt.Errorf("%s: no import of the file is named %s", strings.Join(s.Funcs, ", "), strings.Join(names, ", "))
		}
		for _, d := range decls {
			from := d.Pos()
			if d.Doc != nil {
				from = d.Doc.Pos()
			}
			b.WriteString("\n" + text(from, d.End()) + "\n")
		}
		body = b.String()
	}
	out, err := format.Source([]byte(header(s.origin(m.Version)) + body))
	if err != nil {
		return nil, fmt.Errorf("formatting the copy: %w", err)
	}
	return out, nil
}
