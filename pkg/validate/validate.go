// Package validate checks that a bundle declares a status source that can
// work: the rules of docs/contract.md section 7, kept in one registry (Rules), run
// over bundles loaded by package bundle, reported as result findings.
package validate

import (
	"context"
	"runtime"
	"sort"
	"sync"

	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/catalog"
	"github.com/statuscheck/statuscheck/pkg/result"
)

// Bundle runs every rule over a loaded bundle.
func Bundle(b *bundle.Bundle, opts Options) result.Bundle {
	return run(Rules(), b, opts)
}

func run(rules []Rule, b *bundle.Bundle, opts Options) result.Bundle {
	ctx := NewContext(b, opts)
	res := result.Bundle{Path: b.Path, Name: b.Name(), Findings: []result.Finding{}}
	for _, r := range rules {
		for _, is := range r.Check(ctx) {
			s := r.Severity
			if is.Severity != nil {
				s = *is.Severity
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
	res.Sort()
	return res
}

// Paths loads and validates bundles concurrently, at most GOMAXPROCS at a
// time. A path that is a file-based catalog contributes one result per
// bundle it carries. The report lists paths in the order given, whatever
// order they finish in, and a catalog's bundles by file and name.
func Paths(paths []string, opts Options, load bundle.Options) *result.Report {
	groups := make([][]result.Bundle, len(paths))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, p := range paths {
		if catalog.IsCatalog(p) {
			groups[i] = Catalog(p, opts)
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			groups[i] = []result.Bundle{Path(p, opts, load)}
		}()
	}
	wg.Wait()
	rep := &result.Report{Bundles: []result.Bundle{}}
	for _, g := range groups {
		rep.Bundles = append(rep.Bundles, g...)
	}
	return rep
}

// Catalog validates every bundle of a file-based catalog that carries its
// manifests, streaming: only the findings are kept.
func Catalog(path string, opts Options) []result.Bundle {
	var mu sync.Mutex
	var out []result.Bundle
	_, err := catalog.Walk(context.Background(), path, func(file, name string, b *bundle.Bundle) error {
		res := Bundle(b, opts)
		res.Path, res.Name = file, name
		mu.Lock()
		out = append(out, res)
		mu.Unlock()
		return nil
	}, opts.CatalogProgress)
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

// Path loads and validates one bundle.
func Path(path string, opts Options, load bundle.Options) result.Bundle {
	b, err := bundle.Load(path, load)
	if err != nil {
		return result.Bundle{Path: path, Findings: []result.Finding{}, Errors: []string{err.Error()}}
	}
	return Bundle(b, opts)
}
