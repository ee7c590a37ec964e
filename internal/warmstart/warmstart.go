// Package warmstart starts parsing the manifests of the bundles a
// `statuscheck validate` names while the rest of the binary's packages
// initialise. Initialisation takes about as long as loading a bundle (the
// apiextensions-apiserver's registry code that validate runs links
// client-go, its schemes and etcd's protos) and keeps one core busy; the
// parse runs on another. The commands link it through internal/cli, for
// its initialisation (any other program that links internal/cli, a
// test's, has a first argument that is not validate: it does nothing);
// the validate command parses through Parsed. docs/development.md has the
// figures.
//
// Packages initialise in import-path order as far as their imports allow:
// this one waits for pkg/manifest's imports (apimachinery's runtime the
// last of them), about halfway through the binary's packages and before
// the heaviest (client-go's scheme, the apiserver's metrics registry),
// and comes after internal/gcfloor in the commands, which import both
// (gcfloor imports only standard packages): the collector is off by then.
package warmstart

import (
	"iter"
	"os"
	"path/filepath"
	"strings"

	"github.com/statuscheck/statuscheck/pkg/manifest"
)

var parsed *manifest.Preparsed

func init() {
	if len(os.Args) > 1 && os.Args[1] == "validate" {
		parsed = manifest.Preparse(Bundles(os.Args[1:]), manifest.DefaultLimits)
	}
}

// Parsed is what this process started parsing for validate, or nil. The
// command stops it (Preparsed.Stop) when it starts, so that it holds no
// more than what it parsed while the packages initialised.
func Parsed() *manifest.Preparsed { return parsed }

// Bundles are the manifest files `statuscheck ARGS...` will parse, a
// bundle at a time, as far as can be told before its flags are known:
// for validate, the files in the manifests/ directory of each argument
// that is a bundle root, or of each bundle root in an argument that is a
// directory of bundles, in order. A flag's value may be taken for a path
// and a file listed may never be read: the parse is checked against what
// the loader reads (manifest.Preparsed.Parse). Any other command has
// none. The directories are read as the sequence is drawn. (A directory
// of bundles expands as bundle.Roots expands it, near enough: importing
// pkg/bundle would hold this package back until operator-framework/api's
// imports, client-go's among them, have initialised, near the end. A
// bundle it misses is loaded as it would be without the set.)
func Bundles(args []string) iter.Seq[[]string] {
	return func(yield func([]string) bool) {
		if len(args) == 0 || args[0] != "validate" {
			return
		}
		var paths []string
		for i, a := range args[1:] {
			if a == "--" {
				paths = append(paths, args[i+2:]...)
				break
			}
			if !strings.HasPrefix(a, "-") {
				paths = append(paths, a)
			}
		}
		for _, path := range paths {
			if files := manifests(path); files != nil {
				if !yield(files) {
					return
				}
				continue
			}
			entries, err := os.ReadDir(path)
			if err != nil {
				continue
			}
			for _, e := range entries {
				if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
					continue // as bundle.Roots: no hidden bundle
				}
				if files := manifests(filepath.Join(path, e.Name())); files != nil && !yield(files) {
					return
				}
			}
		}
	}
}

// manifests: the files in root/manifests, nil if it is not a directory;
// hidden files, which the loader reports and does not read, left out.
func manifests(root string) []string {
	dir := filepath.Join(root, "manifests")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	files := []string{}
	for _, e := range entries {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	return files
}
