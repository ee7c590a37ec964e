package validate

import (
	"sync"

	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/crd"
)

// probeContext is the context whose status source the rules probe for
// b: b's own when its CSV declares a source, else, when
// status-source-missing judges the CSV's initialization resource as a
// candidate, that of the copy of b that declares it (withCandidate). nil
// when there is neither.
func probeContext(b *bundle.Bundle, opts Options) *Context {
	ctx := NewContext(b, opts)
	switch {
	case ctx.CSV == nil:
		return nil
	case ctx.HasAnnotation:
		return ctx
	}
	obj, ok := candidate(ctx.CSV)
	if !ok {
		return nil
	}
	return NewContext(withCandidate(b, ctx.CSV, obj), opts)
}

// prefetch starts a bundle's apiserver probes while the loader still
// reads its other files (bundle.Options.Decoded). The probes depend on
// the CSV and the status source's CRD alone, and they are the longest of
// a bundle's checks: the apiserver validates the CRD (its defaults, its
// CEL rules compiled and costed), then builds the resource the probes are
// written through, one core's work that would otherwise start only once
// every file is read. The rules find the results in the probe cache,
// waiting for them if they still run (ProbeCache.do): the prefetch puts
// them there before the loader goes on.
//
// The loader tells of CSVs and CRDs in file-name order, each once the
// files before it are read, so that the first CSV it tells of is the
// bundle's CSV and the first CRD of the source's kind the one the rules
// find: the prefetch starts the probes the rules run, for those, and
// nothing else.
type prefetch struct {
	opts Options
	mu   sync.Mutex
	// source is the context of the CSV alone, once it is known and has
	// a source to probe.
	source *Context
	// crds are the CRDs told of before the CSV.
	crds []*crd.CRD
	// settled: the probes started, or the CSV has nothing to probe.
	settled bool
}

// decoded is the loader's bundle.Options.Decoded. It looks at each CRD
// once: the ones told of before the CSV when the CSV comes, each later
// one as it comes.
func (p *prefetch) decoded(csv *bundle.CSV, c *crd.CRD) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.settled || p.opts.Probes == nil {
		return
	}
	if p.source == nil {
		if c != nil {
			p.crds = append(p.crds, c)
		}
		if csv == nil {
			return
		}
		p.source = probeContext(&bundle.Bundle{CSVs: []*bundle.CSV{csv}}, p.opts)
		if p.source == nil || !p.source.Resolvable() {
			p.settled = true
			return
		}
		for _, c := range p.crds {
			if p.take(c) {
				return
			}
		}
		p.crds = nil
		return
	}
	if c != nil {
		p.take(c)
	}
}

// take starts the probes when c is the first CRD of the source's group
// and kind (the one the rules find), and says whether it was.
func (p *prefetch) take(c *crd.CRD) bool {
	gv := p.source.Source.GroupVersion()
	if c.Group() != gv.Group || c.Kind() != p.source.Source.Kind {
		return false
	}
	p.settled = true
	b := *p.source.Bundle
	b.CRDs = []*crd.CRD{c}
	if ctx := NewContext(&b, p.opts); ctx.probable() {
		ctx.startProbes()
	}
	return true
}
