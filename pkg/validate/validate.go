// Package validate checks that a bundle declares a status source that can
// work: the rules of docs/contract.md section 7, kept in one registry
// (Rules), reported as result findings.
//
// Check is the pure core: a bundle in (however it was loaded: from a
// directory, a catalog entry or documents built in memory), findings out.
// Paths and Catalog are the edge that reads bundles and catalogs from disk
// and runs Check on each.
package validate

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"

	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/catalog"
	"github.com/statuscheck/statuscheck/pkg/crd"
	"github.com/statuscheck/statuscheck/pkg/result"
)

// Check runs every rule over a loaded bundle.
func Check(b *bundle.Bundle, opts Options) result.Bundle {
	return run(Rules(), b, opts)
}

func run(rules []Rule, b *bundle.Bundle, opts Options) result.Bundle {
	ctx := NewContext(b, opts)
	res := result.Bundle{Path: b.Path, Name: b.Name(), Findings: []result.Finding{}}
	switch {
	case b.CSV() != nil:
		res.File = b.CSV().Doc.File
	case b.Metadata != nil:
		res.File = b.Metadata.Doc.File
	}
	for _, r := range rules {
		for _, is := range r.Check(ctx) {
			s := r.Severity
			if is.Severity != nil {
				s = *is.Severity
			}
			switch {
			case r.Verdict:
			case s == result.Error && !slices.Contains(ctx.staticErrors, r.ID):
				ctx.staticErrors = append(ctx.staticErrors, r.ID)
			case s == result.Warning && slices.Contains(doubtRules, r.ID) && !slices.Contains(ctx.doubts, r.ID):
				ctx.doubts = append(ctx.doubts, r.ID)
			}
			res.Findings = append(res.Findings, result.Finding{
				Rule:        r.ID,
				Severity:    s,
				File:        is.Pos.File,
				Line:        is.Pos.Line,
				Column:      is.Pos.Column,
				Field:       is.Field,
				Message:     is.Message,
				Remediation: r.Remediation,
			})
		}
	}
	for _, err := range b.Errors {
		res.Errors = append(res.Errors, err.Error())
	}
	res.Protection = Protection(ctx)
	res.Sort()
	return res
}

// Progress is told how many bundles of a catalog have been read so far.
type Progress func(bundles int)

// Paths loads and validates bundles concurrently, at most GOMAXPROCS at a
// time, sharing one probe cache (opts.Probes, or a new one). A path that
// is a file-based catalog contributes one result per bundle it carries,
// read by opts.Catalogs (without one, the catalog is an error of the run,
// ErrNoCatalogs); a directory of bundles (bundle.Roots), one per bundle in
// it. Each path is sniffed for a catalog once (catalog.IsCatalog).
// The report lists paths in the order given, whatever order they finish
// in, and a catalog's bundles by file and name.
func Paths(paths []string, opts Options, load bundle.Options, progress Progress) *result.Report {
	if opts.Probes == nil {
		opts.Probes = &ProbeCache{}
	}
	groups := make([][]result.Bundle, len(paths))
	failed := make([][]error, len(paths))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, p := range paths {
		if catalog.IsCatalog(p) {
			if opts.Catalogs == nil {
				failed[i] = []error{fmt.Errorf("%s: %w", p, ErrNoCatalogs)}
				groups[i] = []result.Bundle{{Path: p}}
				continue
			}
			groups[i] = Catalog(p, opts, progress)
			continue
		}
		roots := bundle.Roots(p, load)
		groups[i] = make([]result.Bundle, len(roots))
		failed[i] = make([]error, len(roots))
		for j, root := range roots {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				groups[i][j], failed[i][j] = pathResult(root, opts, load)
			}()
		}
	}
	wg.Wait()
	// Every bundle that could be checked is in the report; a path that
	// could not be read at all is an error of the run, not a bundle.
	rep := &result.Report{Bundles: []result.Bundle{}}
	for i, g := range groups {
		for j, b := range g {
			if j < len(failed[i]) && failed[i][j] != nil {
				rep.Errors = append(rep.Errors, result.PathError{Path: b.Path, Error: failed[i][j].Error()})
				continue
			}
			rep.Bundles = append(rep.Bundles, b)
		}
	}
	return rep
}

// ErrNoCatalogs is Paths' error for a file-based catalog when
// Options.Catalogs is nil.
var ErrNoCatalogs = errors.New("a file-based catalog, and no catalog reader to read it (validate.Options.Catalogs)")

// Catalog validates every bundle of a file-based catalog that carries its
// manifests, read by opts.Catalogs, streaming: only the findings are kept.
// Without opts.Catalogs it is the catalog's error, ErrNoCatalogs.
func Catalog(path string, opts Options, progress Progress) []result.Bundle {
	if opts.Catalogs == nil {
		return []result.Bundle{{Path: path, Findings: []result.Finding{}, Errors: []string{fmt.Errorf("%s: %w", path, ErrNoCatalogs).Error()}}}
	}
	var mu sync.Mutex
	var out []result.Bundle
	_, err := opts.Catalogs(context.Background(), path, func(file, name string, b *bundle.Bundle) error {
		res := Check(b, opts)
		res.Path, res.Name = file, name
		mu.Lock()
		out = append(out, res)
		mu.Unlock()
		return nil
	}, progress)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Name < out[j].Name
	})
	if err != nil {
		out = append(out, result.Bundle{Path: path, Findings: []result.Finding{}, Errors: []string{err.Error()}})
	}
	if len(out) == 0 {
		out = append(out, result.Bundle{Path: path, Findings: []result.Finding{{Rule: bundle.CodeCSVMissing, Severity: result.Error, File: path,
			Message: "the catalog carries no bundle with its manifests (olm.bundle.object properties); nothing to validate"}}})
	}
	return out
}

// Path loads and validates one bundle: a directory, or a CSV file with
// the manifests beside it (bundle.Load). The apiserver probes of its
// status source start while it loads, once its CSV and that CRD are
// read (prefetch).
func Path(path string, opts Options, load bundle.Options) result.Bundle {
	res, _ := pathResult(path, opts, load)
	return res
}

// pathResult is Path, and the error when the path could not be read as a
// bundle at all.
func pathResult(path string, opts Options, load bundle.Options) (result.Bundle, error) {
	if opts.Probes == nil {
		opts.Probes = &ProbeCache{} // this bundle's: where its prefetch leaves the probes
	}
	p, theirs := &prefetch{opts: opts}, load.Decoded
	load.Decoded = func(csv *bundle.CSV, c *crd.CRD) {
		p.decoded(csv, c)
		if theirs != nil {
			theirs(csv, c)
		}
	}
	b, err := bundle.Load(path, load)
	if err != nil {
		return result.Bundle{Path: path, Findings: []result.Finding{}, Errors: []string{err.Error()}}, err
	}
	return Check(b, opts), nil
}
