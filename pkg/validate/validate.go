// Package validate checks that a bundle declares a status source that can
// work: the rules of SPEC.md section 6, kept in one registry (Rules), run
// over bundles loaded by package bundle, reported as result findings.
package validate

import (
	"runtime"
	"sync"

	"github.com/statuscheck/statuscheck/pkg/bundle"
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
// time. The report lists them in the order given, whatever order they
// finish in.
func Paths(paths []string, opts Options, load bundle.Options) *result.Report {
	rep := &result.Report{Bundles: make([]result.Bundle, len(paths))}
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			rep.Bundles[i] = Path(p, opts, load)
		}()
	}
	wg.Wait()
	return rep
}

// Path loads and validates one bundle.
func Path(path string, opts Options, load bundle.Options) result.Bundle {
	b, err := bundle.Load(path, load)
	if err != nil {
		return result.Bundle{Path: path, Findings: []result.Finding{}, Errors: []string{err.Error()}}
	}
	return Bundle(b, opts)
}
