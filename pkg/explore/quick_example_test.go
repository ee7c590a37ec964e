package explore_test

import (
	"context"
	"fmt"

	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/explore"
	"github.com/statuscheck/statuscheck/pkg/simulate"
	"github.com/statuscheck/statuscheck/pkg/source"
)

// Quick on a bundle already loaded, as validate runs it: the status source
// resolved from memory (source.FromLoaded), the configuration under OLM's
// own policy (simulate.ContextConfig, with the bridge when the bundle
// declares it), and the search from the console's example CR. This
// bundle's annotation request has no ack path: the operator's answer
// cannot be told from an older report.
func ExampleQuick() {
	dir := "../../testdata/bundles/handshake/request-annotation"
	b, err := bundle.Load(dir, bundle.Options{})
	if err != nil {
		panic(err)
	}
	sctx, err := source.FromLoaded(b, nil, "bundle "+dir)
	if err != nil {
		panic(err)
	}
	cfg := simulate.ContextConfig(sctx, []contract.Policy{contract.PolicyOLM}, contract.PolicyOLM)
	res, err := explore.Quick(context.Background(), cfg, sctx.Example)
	if err != nil {
		panic(err)
	}
	fmt.Printf("bridge %v, every reachable state explored %v\n", cfg.Bridge, res.Exhausted)
	for _, c := range res.Counterexamples {
		fmt.Printf("%s %s in %d steps:", c.Violation.Severity, c.Violation.Rule, len(c.Steps))
		for _, st := range c.Steps {
			fmt.Printf(" %s %s;", st.Actor, st.Action())
		}
		fmt.Println()
	}
	// Output:
	// bridge false, every reachable state explored true
	// error unacknowledged-upgrade in 3 steps: olm request; olm check; olm upgrade;
	// error upgrade-while-blocked in 4 steps: olm request; olm check; user update; olm upgrade;
}
