// Package bundle loads an OLM registry+v1 bundle from disk with the position
// of every document: the ClusterServiceVersion decoded into
// operator-framework/api's v1alpha1 types, CRDs into apiextensions v1 and
// v1beta1 types, and metadata/annotations.yaml. What operator-registry would
// reject about the bundle's format is recorded as a Problem with a position,
// not returned as an error, so that one broken file never hides the rest.
//
// Only failures to read (a missing path, a permission denied) are errors.
package bundle

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	apimanifests "github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/statuscheck/statuscheck/pkg/crd"
	"github.com/statuscheck/statuscheck/pkg/manifest"
	"github.com/statuscheck/statuscheck/pkg/manifest/typed"
)

// Bundle-format names, as operator-registry pkg/lib/bundle defines them
// (generate.go); bundle_test.go checks them against that package, which is
// not imported here because it drags in container-image libraries.
const (
	MediatypeLabel      = "operators.operatorframework.io.bundle.mediatype.v1"
	ManifestsLabel      = "operators.operatorframework.io.bundle.manifests.v1"
	MetadataLabel       = "operators.operatorframework.io.bundle.metadata.v1"
	PackageLabel        = "operators.operatorframework.io.bundle.package.v1"
	ChannelsLabel       = "operators.operatorframework.io.bundle.channels.v1"
	ChannelDefaultLabel = "operators.operatorframework.io.bundle.channel.default.v1"

	RegistryV1Type = "registry+v1"
	PlainType      = "plain"
	HelmType       = "helm"

	ManifestsDir    = "manifests/"
	MetadataDir     = "metadata/"
	AnnotationsFile = "annotations.yaml"
)

// CSVKind is the kind of a ClusterServiceVersion.
const CSVKind = "ClusterServiceVersion"

// supportedKinds are the kinds a registry+v1 bundle may hold, from
// operator-registry pkg/lib/bundle/supported_resources.go.
var supportedKinds = map[string]bool{
	"ClusterServiceVersion": true, "CustomResourceDefinition": true,
	"Secret": true, "ClusterRole": true, "ClusterRoleBinding": true,
	"ConfigMap": true, "ServiceAccount": true, "Service": true,
	"Role": true, "RoleBinding": true, "PrometheusRule": true,
	"ServiceMonitor": true, "PodDisruptionBudget": true, "PriorityClass": true,
	"VerticalPodAutoscaler": true, "ConsoleYAMLSample": true,
	"ConsoleQuickStart": true, "ConsoleCLIDownload": true, "ConsoleLink": true,
	"ConsolePlugin": true, "NetworkPolicy": true, "PodMonitor": true,
}

// IsSupported reports whether a registry+v1 bundle may hold kind.
func IsSupported(kind string) bool { return supportedKinds[kind] }

// SupportedKinds lists the kinds a registry+v1 bundle may hold, sorted.
func SupportedKinds() []string {
	out := make([]string, 0, len(supportedKinds))
	for k := range supportedKinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Problem codes. Each is the ID of the validate rule that reports it.
const (
	CodeParse           = "manifest-parse"
	CodeLimit           = "manifest-limit"
	CodeCSVMissing      = "bundle-csv-missing"
	CodeMultipleCSVs    = "bundle-multiple-csvs"
	CodeUnsupportedKind = "bundle-unsupported-kind"
	CodeMultiDocument   = "bundle-multi-document"
	CodeMetadataMissing = "bundle-metadata-missing"
	CodeMetadataInvalid = "bundle-metadata-invalid"
	CodeLayout          = "bundle-layout"
	CodeSymlink         = "bundle-symlink-escape"
)

// Codes lists every problem code: what the loader finds wrong with the
// files and the format OLM loads a bundle in, not with the status source.
var Codes = []string{CodeParse, CodeLimit, CodeCSVMissing, CodeMultipleCSVs, CodeUnsupportedKind,
	CodeMultiDocument, CodeMetadataMissing, CodeMetadataInvalid, CodeLayout, CodeSymlink}

// Problem is something wrong with the bundle's files or format.
type Problem struct {
	Code    string
	Pos     manifest.Position
	Field   string
	Message string
}

// CSV is a decoded ClusterServiceVersion.
type CSV struct {
	Doc *manifest.Document
	Obj *v1alpha1.ClusterServiceVersion
}

// Metadata is metadata/annotations.yaml.
type Metadata struct {
	Doc *manifest.Document
	// Annotations are the entries under "annotations", values as written.
	Annotations map[string]string
}

// Bundle is a loaded bundle.
type Bundle struct {
	// Path is the path the bundle was named by.
	Path string
	// Root is the bundle root (the directory holding manifests/), or the
	// manifests directory itself when it was named without a bundle root.
	Root string
	// ManifestsDir is the directory the manifests were read from.
	ManifestsDir string
	// Metadata is nil when there is no annotations file.
	Metadata *Metadata
	// Objects are the documents OLM sees: the first of every manifest file,
	// in file-name order.
	Objects []*manifest.Document
	// CSVs are all ClusterServiceVersions; a valid bundle has exactly one.
	CSVs []*CSV
	// CRDs are the CustomResourceDefinitions.
	CRDs []*crd.CRD
	// Problems are format problems, reported as findings.
	Problems []Problem
	// Errors are files that could not be read at all.
	Errors []error

	// files counts the manifest files (or documents) the bundle was
	// built from.
	files int
}

// CSV returns the bundle's ClusterServiceVersion: the first one, or nil.
func (b *Bundle) CSV() *CSV {
	if len(b.CSVs) == 0 {
		return nil
	}
	return b.CSVs[0]
}

// FindCRD returns the CRD of group and kind, or nil.
func (b *Bundle) FindCRD(group, kind string) *crd.CRD {
	for _, c := range b.CRDs {
		if c.Group() == group && c.Kind() == kind {
			return c
		}
	}
	return nil
}

// Name is the CSV's name, else the directory's.
func (b *Bundle) Name() string {
	if c := b.CSV(); c != nil && c.Obj.Name != "" {
		return c.Obj.Name
	}
	return filepath.Base(b.Path)
}

// Options configure Load.
type Options struct {
	// FS defaults to OS.
	FS FS
	// Limits default to manifest.DefaultLimits.
	Limits *manifest.Limits
	// Parsed, when set, holds manifest files parsed ahead of time
	// (manifest.Preparse); the loader parses through it.
	Parsed *manifest.Preparsed
	// Decoded, when set, is told of the ClusterServiceVersions and
	// CustomResourceDefinitions of a bundle directory's manifests (one of
	// the two set a call) while Load reads the others, so that work that
	// depends on them alone can start before it returns: in file-name
	// order, as they are in the Bundle's CSVs and CRDs, each once every
	// file before it is read. The calls come from the loader's
	// goroutines, one at a time; what they pass is the Bundle's, and is
	// not changed after. The bundle of a CSV file named as the path
	// (loadCSVFile, which keeps only that CSV) is not told of.
	Decoded func(csv *CSV, crd *crd.CRD)
}

func (o Options) fs() FS {
	if o.FS == nil {
		return OS{}
	}
	return o.FS
}

func (o Options) limits() manifest.Limits {
	if o.Limits == nil {
		return manifest.DefaultLimits
	}
	return *o.Limits
}

// Load reads the bundle at path: a bundle root (manifests/ and metadata/),
// a manifests directory, or a CSV file (loadCSVFile: the CSV with the
// manifests beside it). It fails only when path cannot be read as one of
// these; everything else is a Problem or an Error on the Bundle.
func Load(path string, opts Options) (*Bundle, error) {
	fsys := opts.fs()
	st, err := fsys.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("loading bundle %s: %w", path, unwrapPathError(err))
	}
	if st.Mode().IsRegular() {
		return loadCSVFile(path, opts)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("loading bundle %s: not a directory or a file (want a bundle root with manifests/ and metadata/, a manifests directory or a CSV file)", path)
	}
	if entries, err := fsys.ReadDir(path); err == nil && len(entries) == 0 {
		return nil, fmt.Errorf("loading bundle %s: an empty directory (want a bundle root with manifests/ and metadata/, or a manifests directory)", path)
	}
	if filepath.Base(filepath.Clean(path)) == "metadata" {
		// A bundle's metadata/ (annotations.yaml) is not a directory of
		// manifests: say where the bundle is.
		parent := filepath.Dir(filepath.Clean(path))
		if _, err := fsys.Stat(filepath.Join(path, "annotations.yaml")); err == nil {
			if mst, err := fsys.Stat(filepath.Join(parent, "manifests")); err == nil && mst.IsDir() {
				return nil, fmt.Errorf("loading bundle %s: this is the bundle's metadata directory; point at the bundle root, %s", path, parent)
			}
			return nil, fmt.Errorf("loading bundle %s: this is a bundle's metadata directory (annotations.yaml), not its manifests; point at the bundle root (manifests/ and metadata/)", path)
		}
	}
	b := &Bundle{Path: path, Root: path, ManifestsDir: path}
	metadataDir := ""
	if mst, err := fsys.Stat(filepath.Join(path, "manifests")); err == nil && mst.IsDir() {
		b.ManifestsDir = filepath.Join(path, "manifests")
		metadataDir = filepath.Join(path, "metadata")
		if _, err := fsys.Stat(metadataDir); err != nil {
			b.Problems = append(b.Problems, Problem{Code: CodeMetadataMissing, Pos: manifest.Position{File: path},
				Message: "the bundle has no metadata/ directory, so no metadata/annotations.yaml: operator-registry rejects it as a bundle image (fine for the old package-manifest layout)"})
			metadataDir = ""
		}
	} else if filepath.Base(filepath.Clean(path)) == "manifests" {
		parent := filepath.Dir(filepath.Clean(path))
		if mst, err := fsys.Stat(filepath.Join(parent, "metadata")); err == nil && mst.IsDir() {
			b.Root = parent
			metadataDir = filepath.Join(parent, "metadata")
		}
	} else if mst, err := fsys.Stat(filepath.Join(path, "metadata")); err == nil && mst.IsDir() && !holdsManifests(fsys, path) {
		// A bundle root with metadata/ and nothing to read beside it: its
		// manifests/ is what is missing, not a CSV among files it has.
		b.ManifestsDir = filepath.Join(path, "manifests")
		rootReal, err := fsys.EvalSymlinks(b.Root)
		if err != nil {
			return nil, fmt.Errorf("loading bundle %s: %w", path, unwrapPathError(err))
		}
		b.loadMetadata(fsys, filepath.Join(path, "metadata"), rootReal, opts.limits())
		b.Problems = append(b.Problems, Problem{Code: CodeCSVMissing, Pos: manifest.Position{File: path},
			Message: fmt.Sprintf("the bundle root %s has metadata/ but no manifests/ directory: %s does not exist, so there is no ClusterServiceVersion to check (a bundle keeps its CSV and CRDs in manifests/, as metadata/annotations.yaml says)", path, b.ManifestsDir)})
		b.checkMetadata()
		return b, nil
	}
	rootReal, err := fsys.EvalSymlinks(b.Root)
	if err != nil {
		return nil, fmt.Errorf("loading bundle %s: %w", path, unwrapPathError(err))
	}
	if metadataDir != "" {
		b.loadMetadata(fsys, metadataDir, rootReal, opts.limits())
	}
	b.loadManifests(fsys, rootReal, opts.limits(), opts.Parsed, opts.Decoded)
	b.checkMetadata()
	b.checkKinds()
	return b, nil
}

// Roots expands a directory of bundles (a subdirectory per bundle, as an
// operator's bundle/ tree or a catalog's source keeps them, and no
// manifest of its own at the top) into those bundles, in name order. Any
// other path, or one it cannot read, is itself: Load says what is wrong.
func Roots(path string, opts Options) []string {
	fsys := opts.fs()
	entries, err := fsys.ReadDir(path)
	if err != nil {
		return []string{path}
	}
	var subs, files []string
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, "."):
		case name == "manifests" || name == "metadata":
			return []string{path} // a bundle root
		case !e.IsDir():
			if isManifestName(name) {
				files = append(files, filepath.Join(path, name))
			}
		case holdsBundle(fsys, filepath.Join(path, name)):
			subs = append(subs, filepath.Join(path, name))
		}
	}
	if len(subs) == 0 || slices.ContainsFunc(files, func(f string) bool { return topLevelObject(fsys, f) }) {
		return []string{path} // a directory of manifests
	}
	return subs
}

// topLevelObject says whether a file beside subdirectories of bundles is
// a Kubernetes object, which makes the directory one of manifests, or may
// be (too large to read: a package's other files are a few lines). A
// package manifest (the old package-manifest layout's, whose versions are
// the subdirectories) is not: what operator-framework/api's loader takes
// as one is any file that decodes into a PackageManifest with a name
// (packageManifestLoader's LoadPackagesWalkFunc,
// pkg/manifests/packagemanifestloader.go). Nor is a file without an
// apiVersion or kind (community operators' ci.yaml).
func topLevelObject(fsys FS, file string) bool {
	data, err := fsys.ReadFile(file, 64<<10)
	if err != nil {
		return true
	}
	var pm apimanifests.PackageManifest
	if yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 30).Decode(&pm) == nil && !pm.IsEmpty() {
		return false
	}
	var obj struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	return yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 30).Decode(&obj) != nil || obj.APIVersion != "" || obj.Kind != ""
}

// holdsManifests: a directory with a manifest file of its own.
func holdsManifests(fsys FS, dir string) bool {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if !e.IsDir() && isManifestName(e.Name()) {
			return true
		}
	}
	return false
}

// loadCSVFile loads a CSV file as validate and generate name it: the CSV
// with the manifests beside it, read as Load reads its directory (a
// bundle's manifests/ brings the bundle's metadata/ with it). Other CSVs
// in the directory (a package-manifest directory of versions, operator-sdk's
// bases) are not this bundle's: they are left out. A file that is a
// Kubernetes object of another kind is refused; one that does not parse is
// read, and its problem is reported as it would be in the directory.
func loadCSVFile(path string, opts Options) (*Bundle, error) {
	file := filepath.Clean(path)
	opts.Decoded = nil // the directory's CSVs are not all this bundle's
	b, err := Load(filepath.Dir(file), opts)
	if err != nil {
		return nil, err
	}
	var named *CSV
	for _, c := range b.CSVs {
		if filepath.Clean(c.Doc.File) == file {
			named = c
		}
	}
	problem := false
	for _, p := range b.Problems {
		if filepath.Clean(p.Pos.File) == file && (p.Code == CodeParse || p.Code == CodeLimit || p.Code == CodeSymlink || p.Code == CodeLayout) {
			problem = true
		}
	}
	if named == nil && !problem {
		what := "not one of the manifests read there"
		for _, d := range b.Objects {
			if filepath.Clean(d.File) == file {
				k, _ := d.Object()["kind"].(string)
				what = "a " + k
			}
		}
		return nil, fmt.Errorf("loading bundle %s: %s, not a ClusterServiceVersion (want a bundle root with manifests/ and metadata/, a manifests directory or a CSV file)", path, what)
	}
	b.Path = path
	// Only the named CSV is this bundle's: the others, and what the
	// loader said about there being several, go.
	var objects []*manifest.Document
	for _, d := range b.Objects {
		if k, _ := d.Object()["kind"].(string); k != CSVKind || filepath.Clean(d.File) == file {
			objects = append(objects, d)
		}
	}
	b.Objects = objects
	b.CSVs = nil
	if named != nil {
		b.CSVs = []*CSV{named}
	}
	var problems []Problem
	for _, p := range b.Problems {
		if p.Code == CodeMultipleCSVs {
			continue
		}
		if p.Code == CodeCSVMissing && named == nil {
			continue // the file's own problem says why it is not read
		}
		problems = append(problems, p)
	}
	b.Problems = problems
	return b, nil
}

// holdsBundle: a directory with manifests/ or a manifest file of its own.
func holdsBundle(fsys FS, dir string) bool {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if (e.IsDir() && e.Name() == "manifests") || (!e.IsDir() && isManifestName(e.Name())) {
			return true
		}
	}
	return false
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// readFile reads one bundle file, refusing symlinks that leave the bundle
// and anything that is not a regular file. ok=false means it was not read;
// the reason is already recorded.
func (b *Bundle) readFile(fsys FS, file, rootReal string, lim manifest.Limits) ([]byte, bool) {
	pos := manifest.Position{File: file}
	info, err := fsys.Lstat(file)
	if err != nil {
		b.Errors = append(b.Errors, fmt.Errorf("reading %s: %w", file, unwrapPathError(err)))
		return nil, false
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		target, err := fsys.EvalSymlinks(file)
		if err != nil {
			b.Problems = append(b.Problems, Problem{Code: CodeSymlink, Pos: pos,
				Message: fmt.Sprintf("symlink cannot be resolved (%v); not followed", unwrapPathError(err))})
			return nil, false
		}
		if !within(target, rootReal) {
			b.Problems = append(b.Problems, Problem{Code: CodeSymlink, Pos: pos,
				Message: fmt.Sprintf("symlink points outside the bundle (to %s); not followed", target)})
			return nil, false
		}
		if info, err = fsys.Stat(file); err != nil {
			b.Errors = append(b.Errors, fmt.Errorf("reading %s: %w", file, unwrapPathError(err)))
			return nil, false
		}
	}
	if !info.Mode().IsRegular() {
		b.Problems = append(b.Problems, Problem{Code: CodeLayout, Pos: pos,
			Message: fmt.Sprintf("not a regular file (%s); not read", manifest.FileKind(info.Mode()))})
		return nil, false
	}
	data, err := fsys.ReadFile(file, lim.MaxFileSize)
	if err != nil {
		var tl *ErrTooLarge
		if errors.As(err, &tl) {
			b.Problems = append(b.Problems, Problem{Code: CodeLimit, Pos: pos,
				Message: tl.Error() + "; not read"})
			return nil, false
		}
		b.Errors = append(b.Errors, fmt.Errorf("reading %s: %w", file, unwrapPathError(err)))
		return nil, false
	}
	return data, true
}

func within(target, root string) bool {
	rel, err := filepath.Rel(root, target)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// fileResult is what reading one manifest file produced: its first
// document, already checked and decoded (dec), so that a worker decodes a
// file as soon as it has parsed it instead of waiting for every file to
// be parsed first.
type fileResult struct {
	doc      *manifest.Document
	dec      decoded
	problems []Problem
	errs     []error
}

func (b *Bundle) loadManifests(fsys FS, rootReal string, lim manifest.Limits, parsed *manifest.Preparsed, onDecoded func(*CSV, *crd.CRD)) {
	entries, err := fsys.ReadDir(b.ManifestsDir)
	if err != nil {
		b.Errors = append(b.Errors, fmt.Errorf("reading %s: %w", b.ManifestsDir, unwrapPathError(err)))
		return
	}
	var files []string
	var sizes []int64
	for _, e := range entries {
		file := filepath.Join(b.ManifestsDir, e.Name())
		switch {
		case strings.HasPrefix(e.Name(), "."):
			b.Problems = append(b.Problems, Problem{Code: CodeLayout, Pos: manifest.Position{File: file},
				Message: "hidden file in the manifests directory; operator-framework/api's loader rejects the bundle for it"})
		case e.IsDir():
			b.Problems = append(b.Problems, Problem{Code: CodeLayout, Pos: manifest.Position{File: file},
				Message: "directory inside the manifests directory; OLM does not read it and operator-framework/api's loader rejects the bundle for it"})
		case b.ManifestsDir == b.Root && b.Metadata == nil && !isManifestName(e.Name()):
			// A plain directory of manifests named directly: skip what is
			// plainly not a manifest (README.md, a Dockerfile).
		default:
			files = append(files, file)
			var size int64
			if info, err := e.Info(); err == nil {
				size = info.Size()
			}
			sizes = append(sizes, size)
		}
	}
	order := manifest.ParseOrder(files, sizes)
	results := make([]fileResult, len(files))
	told := teller{results: results, loaded: make([]bool, len(files)), tell: onDecoded}
	parallel(len(files), func(k int) {
		i := order[k]
		r := b.loadFile(fsys, files[i], rootReal, lim, parsed)
		if r.doc != nil {
			r.dec = decodeObject(r.doc)
		}
		results[i] = r
		told.loaded1(i)
	})
	var docs []*manifest.Document
	var decs []decoded
	for _, r := range results {
		b.Problems = append(b.Problems, r.problems...)
		b.Errors = append(b.Errors, r.errs...)
		if r.doc != nil {
			docs = append(docs, r.doc)
			decs = append(decs, r.dec)
		}
	}
	b.files = len(files)
	b.addDecoded(docs, decs)
}

// teller tells Options.Decoded of the CSVs and CRDs of the files read
// so far, in file order: each once every file before it is read, so that
// the first CSV it tells of is the Bundle's CSV and the first CRD of a
// kind the one FindCRD finds.
type teller struct {
	mu      sync.Mutex
	results []fileResult
	loaded  []bool
	next    int // the first file not told of
	tell    func(*CSV, *crd.CRD)
}

// loaded1 marks file i read (results[i] set) and tells of what is then
// in order.
func (t *teller) loaded1(i int) {
	if t.tell == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.loaded[i] = true
	for ; t.next < len(t.loaded) && t.loaded[t.next]; t.next++ {
		if d := t.results[t.next].dec; d.csv != nil || d.crd != nil {
			t.tell(d.csv, d.crd)
		}
	}
}

// parallel runs f(0..n-1) on up to GOMAXPROCS goroutines.
func parallel(n int, f func(i int)) {
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
}

// FromDocuments assembles a bundle from the documents OLM sees: the first
// document of each manifest, in file-name order, as the directory loader
// reads them and as a file-based catalog carries them (olm.bundle.object).
// Every bundle check runs on them: each object's apiVersion and kind, the
// CSV and CRDs decoded into their types, one CSV only, the kinds a
// registry+v1 bundle may hold, and, when md is given (a bundle image's
// metadata/annotations.yaml), the annotations. path names the bundle and
// where a missing CSV is reported.
func FromDocuments(path string, docs []*manifest.Document, md *Metadata) *Bundle {
	b := &Bundle{Path: path, Root: path, ManifestsDir: path, Metadata: md}
	b.files = len(docs)
	b.add(docs)
	b.checkMetadata()
	b.checkKinds()
	return b
}

// decoded is what one document decodes into.
type decoded struct {
	problems []Problem
	csv      *CSV
	crd      *crd.CRD
}

// add takes the bundle's documents: each is checked to be a Kubernetes
// object and the CSV and CRDs are decoded (concurrently: decoding is most
// of a bundle's load), then the CSV count is checked.
func (b *Bundle) add(docs []*manifest.Document) {
	results := make([]decoded, len(docs))
	parallel(len(docs), func(i int) { results[i] = decodeObject(docs[i]) })
	b.addDecoded(docs, results)
}

// addDecoded is add with the documents already decoded (results[i] is
// decodeObject(docs[i])).
func (b *Bundle) addDecoded(docs []*manifest.Document, results []decoded) {
	for i, r := range results {
		b.Problems = append(b.Problems, r.problems...)
		if len(r.problems) > 0 && r.csv == nil && r.crd == nil && !isObject(docs[i]) {
			continue // not an object: OLM does not see it
		}
		b.Objects = append(b.Objects, docs[i])
		if r.csv != nil {
			if len(b.CSVs) > 0 {
				first := b.CSVs[0]
				b.Problems = append(b.Problems, Problem{Code: CodeMultipleCSVs, Pos: r.csv.Doc.Pos(),
					Message: fmt.Sprintf("second ClusterServiceVersion %q; a bundle holds exactly one (the first is %q in %s)", r.csv.Obj.Name, first.Obj.Name, first.Doc.File)})
			}
			b.CSVs = append(b.CSVs, r.csv)
		}
		if r.crd != nil {
			b.CRDs = append(b.CRDs, r.crd)
		}
	}
	if len(b.CSVs) == 0 && !hasCSVDoc(b.Objects) && !hasCSVParseProblem(b.Problems) {
		msg := fmt.Sprintf("no ClusterServiceVersion in %s", b.ManifestsDir)
		if b.files == 0 {
			msg = fmt.Sprintf("no manifests in %s (want a bundle root with manifests/ and metadata/, or a directory of manifests)", b.ManifestsDir)
		}
		b.Problems = append(b.Problems, Problem{Code: CodeCSVMissing, Pos: manifest.Position{File: b.ManifestsDir}, Message: msg})
	}
}

func isObject(doc *manifest.Document) bool {
	obj := doc.Object()
	av, _ := obj["apiVersion"].(string)
	k, _ := obj["kind"].(string)
	return av != "" && k != ""
}

// decodeObject checks that doc is a Kubernetes object and decodes a CSV or
// a CRD into its type.
func decodeObject(doc *manifest.Document) (r decoded) {
	obj := doc.Object()
	if obj == nil {
		r.problems = append(r.problems, Problem{Code: CodeParse, Pos: doc.Pos(),
			Message: "not a Kubernetes object: the document is not a mapping"})
		return r
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if apiVersion == "" || kind == "" {
		missing := "apiVersion"
		field := "apiVersion"
		if kind == "" {
			missing, field = "kind", "kind"
			if apiVersion == "" {
				missing = "apiVersion and kind"
			}
		}
		pos, _ := doc.Locate(manifest.NewPath(field))
		r.problems = append(r.problems, Problem{Code: CodeParse, Pos: pos, Field: field,
			Message: fmt.Sprintf("not a Kubernetes object: %s missing or not a string", missing)})
		return r
	}
	switch kind {
	case CSVKind:
		csv := &v1alpha1.ClusterServiceVersion{}
		if err := typed.Decode(doc, csv); err != nil {
			r.problems = append(r.problems, parseProblem(fmt.Errorf("decoding ClusterServiceVersion: %w", err), doc.Pos()))
			return r
		}
		r.csv = &CSV{Doc: doc, Obj: csv}
	case crd.Kind:
		c, err := crd.Decode(doc)
		if err != nil {
			r.problems = append(r.problems, parseProblem(fmt.Errorf("decoding CustomResourceDefinition: %w", err), doc.Pos()))
			return r
		}
		r.crd = c
	}
	return r
}

func isManifestName(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

func hasCSVDoc(docs []*manifest.Document) bool {
	for _, d := range docs {
		if k, _ := d.Object()["kind"].(string); k == CSVKind {
			return true
		}
	}
	return false
}

// hasCSVParseProblem avoids saying "no CSV" when a CSV file failed to parse:
// the parse finding is the real news.
func hasCSVParseProblem(ps []Problem) bool {
	for _, p := range ps {
		if (p.Code == CodeParse || p.Code == CodeLimit) && manifest.NamedCSV(p.Pos.File) {
			return true
		}
	}
	return false
}

// loadFile reads one manifest file: its first document is what OLM sees
// (the others are a problem of the file), checked and decoded by add.
func (b *Bundle) loadFile(fsys FS, file, rootReal string, lim manifest.Limits, parsed *manifest.Preparsed) (r fileResult) {
	tmp := &Bundle{}
	data, ok := tmp.readFile(fsys, file, rootReal, lim)
	r.problems, r.errs = tmp.Problems, tmp.Errors
	if !ok {
		return r
	}
	docs, err := parsed.Parse(file, data, lim)
	if err != nil {
		r.problems = append(r.problems, parseProblem(err))
		if len(docs) == 0 {
			return r
		}
	}
	if len(docs) == 0 {
		r.problems = append(r.problems, Problem{Code: CodeParse, Pos: manifest.Position{File: file},
			Message: "empty manifest: no YAML or JSON document"})
		return r
	}
	if len(docs) > 1 {
		r.problems = append(r.problems, Problem{Code: CodeMultiDocument, Pos: docs[1].Pos(),
			Message: fmt.Sprintf("%d more YAML %s after the first; OLM reads only the first document of a manifest file and ignores the rest", len(docs)-1, map[bool]string{true: "document", false: "documents"}[len(docs) == 2])})
	}
	r.doc = docs[0]
	return r
}

func parseProblem(err error, fallback ...manifest.Position) Problem {
	var me *manifest.Error
	if errors.As(err, &me) {
		code := CodeParse
		if me.Limit {
			code = CodeLimit
		}
		msg := err.Error()
		// The message carries the position already; keep only the words.
		msg = strings.Replace(msg, me.Pos.String()+": ", "", 1)
		return Problem{Code: code, Pos: me.Pos, Message: msg}
	}
	p := Problem{Code: CodeParse, Message: err.Error()}
	if len(fallback) > 0 {
		p.Pos = fallback[0]
	}
	return p
}

// loadMetadata finds the annotations file. operator-registry accepts any
// file in metadata/ that decodes with an "annotations" map; annotations.yaml
// is the conventional name and is tried first.
func (b *Bundle) loadMetadata(fsys FS, dir, rootReal string, lim manifest.Limits) {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		b.Errors = append(b.Errors, fmt.Errorf("reading %s: %w", dir, unwrapPathError(err)))
		return
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || !isManifestName(e.Name()) {
			continue
		}
		if e.Name() == AnnotationsFile {
			names = append([]string{e.Name()}, names...)
		} else {
			names = append(names, e.Name())
		}
	}
	for _, name := range names {
		file := filepath.Join(dir, name)
		data, ok := b.readFile(fsys, file, rootReal, lim)
		if !ok {
			continue
		}
		docs, err := manifest.Parse(file, data, lim)
		if err != nil {
			if name == AnnotationsFile {
				b.Problems = append(b.Problems, parseProblem(err))
			}
			continue
		}
		if len(docs) == 0 {
			continue
		}
		ann := docs[0].Object()["annotations"]
		if ann == nil {
			continue
		}
		m, ok := ann.(map[string]interface{})
		if !ok {
			pos, _ := docs[0].Locate(manifest.NewPath("annotations"))
			b.Problems = append(b.Problems, Problem{Code: CodeMetadataInvalid, Pos: pos, Field: "annotations",
				Message: "annotations must be a map of label to value"})
			b.Metadata = &Metadata{Doc: docs[0], Annotations: map[string]string{}}
			return
		}
		md := &Metadata{Doc: docs[0], Annotations: map[string]string{}}
		for k, v := range m {
			switch t := v.(type) {
			case string:
				md.Annotations[k] = t
			case nil:
				md.Annotations[k] = ""
			default:
				md.Annotations[k] = fmt.Sprint(t)
			}
		}
		b.Metadata = md
		return
	}
	b.Problems = append(b.Problems, Problem{Code: CodeMetadataMissing, Pos: manifest.Position{File: dir},
		Message: fmt.Sprintf("no annotations file in %s (want %s with an annotations map)", dir, AnnotationsFile)})
}

// checkMetadata applies operator-registry's validateAnnotations
// (pkg/lib/bundle/validate.go): the five required keys, the media type
// matching the content, the directory values, and non-empty channels.
func (b *Bundle) checkMetadata() {
	md := b.Metadata
	if md == nil {
		return
	}
	annPath := manifest.NewPath("annotations")
	at := func(key string) manifest.Position {
		pos, _ := md.Doc.LocateKey(annPath.Key(key))
		return pos
	}
	add := func(key, format string, args ...interface{}) {
		b.Problems = append(b.Problems, Problem{Code: CodeMetadataInvalid, Pos: at(key),
			Field: annPath.Key(key).String(), Message: fmt.Sprintf(format, args...)})
	}
	// operator-registry's GetMediaType says registry+v1 when the manifests
	// hold a CSV. Without one (bundle-csv-missing, or a CSV that did not
	// parse) the content says nothing reliable, so the media type is not
	// compared.
	mediaType := ""
	if len(b.CSVs) > 0 || hasCSVDoc(b.Objects) {
		mediaType = RegistryV1Type
	}
	for _, key := range []string{MediatypeLabel, ManifestsLabel, MetadataLabel, PackageLabel, ChannelsLabel} {
		if _, ok := md.Annotations[key]; !ok {
			add(key, "missing annotation %q", key)
		}
	}
	if v, ok := md.Annotations[MediatypeLabel]; ok && mediaType != "" && v != mediaType {
		add(MediatypeLabel, "annotation %q is %q, but the manifests make a %q bundle", MediatypeLabel, v, mediaType)
	}
	if v, ok := md.Annotations[ManifestsLabel]; ok && v != ManifestsDir {
		add(ManifestsLabel, "annotation %q is %q; a bundle image keeps its manifests in %q", ManifestsLabel, v, ManifestsDir)
	}
	if v, ok := md.Annotations[MetadataLabel]; ok && v != MetadataDir {
		add(MetadataLabel, "annotation %q is %q; a bundle image keeps its metadata in %q", MetadataLabel, v, MetadataDir)
	}
	if v, ok := md.Annotations[PackageLabel]; ok && strings.TrimSpace(v) == "" {
		add(PackageLabel, "annotation %q is empty", PackageLabel)
	}
	if v, ok := md.Annotations[ChannelsLabel]; ok && strings.TrimSpace(v) == "" {
		add(ChannelsLabel, "annotation %q is empty", ChannelsLabel)
	}
	if v, ok := md.Annotations[ChannelDefaultLabel]; ok && strings.TrimSpace(v) == "" {
		add(ChannelDefaultLabel, "annotation %q is present but empty", ChannelDefaultLabel)
	}
}

// checkKinds reports kinds a registry+v1 bundle may not hold, as
// operator-registry's ValidateBundleContent does for registry+v1 content.
func (b *Bundle) checkKinds() {
	if len(b.CSVs) == 0 && !hasCSVDoc(b.Objects) {
		return
	}
	if b.Metadata != nil {
		if mt := b.Metadata.Annotations[MediatypeLabel]; mt == PlainType || mt == HelmType {
			return
		}
	}
	for _, d := range b.Objects {
		kind, _ := d.Object()["kind"].(string)
		if !IsSupported(kind) {
			pos, _ := d.Locate(manifest.NewPath("kind"))
			b.Problems = append(b.Problems, Problem{Code: CodeUnsupportedKind, Pos: pos, Field: "kind",
				Message: fmt.Sprintf("%s is not a kind a registry+v1 bundle may hold; operator-registry rejects the bundle", kind)})
		}
	}
}
