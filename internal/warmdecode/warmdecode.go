// Package warmdecode is for the commands' initialisation only
// (cmd/statuscheck and cmd/statuscheck-cluster import it for that): when
// internal/warmstart parses validate's bundles ahead, it also builds, in
// the background, what the loader's first decode of a CSV and of a CRD
// costs in a process (bundle.WarmDecoders), so that the loader finds it
// built. It starts once pkg/bundle's dependencies have initialised, later
// than the parse (which needs only pkg/manifest's), and while the
// heaviest packages initialise.
package warmdecode

import (
	"github.com/statuscheck/statuscheck/internal/warmstart"
	"github.com/statuscheck/statuscheck/pkg/bundle"
)

func init() {
	if warmstart.Parsed() != nil {
		go func() {
			// A warm-up never stops the command: what it would have
			// met, the loader meets and reports.
			defer func() { _ = recover() }()
			bundle.WarmDecoders()
		}()
	}
}
