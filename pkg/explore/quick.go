package explore

import "context"

// The quick search is the protocol search validate runs on each bundle's
// own configuration (its status source, its CRD served by package
// apiserver, the bridge it declares) within validate's time budget: a few
// milliseconds a bundle on average (tens for a bundle that declares the
// bridge), where the DefaultDepth search of a bundle with the bridge takes
// about half a second.
//
// Its bounds were chosen on the repository's bundles (every bundle under
// testdata/bundles/handshake and testdata/bundles/rules/*/{fail,pass} with
// a status source the model can run, with and without the bridge, under
// every policy) and on a CRD with a CEL transition rule: with them it
// finds exactly the violation rules the DefaultDepth search finds,
// write-rejected included (TestQuickFindsWhatDefaultDepthFinds), and
// BenchmarkQuick measures them side by side with the DefaultDepth search
// and with one spec change a trace. What the cheaper bounds miss:
//
//   - one spec change per trace misses a write the CRD refuses on the
//     second: a transition rule that refuses a spec change while the
//     status says Upgradeable is not True (write-rejected in 3 steps: user
//     update, operator updateStatus False, user update). Two changes cost
//     about three times one (BenchmarkQuick: quick against quick1). Every
//     other violation the model finds needs at most one (an outdated True
//     needs one change; the race between OLM's check and the replacement
//     needs one); the depth, not the user, bounds the rest. No user change
//     at all would miss every violation on outdated information
//     (unsafe-approval, the race's upgrade-while-blocked).
//   - depth 12 misses upgrade-while-blocked under the naive policy for an
//     annotation request without an ack path under the bridge (its
//     shortest trace is 9 steps, 13 moves with the bridge's reads and
//     OLM's making of the replacing CSV, which traces leave out); depths
//     10 and 11 miss it under every policy; at depth 9 and below no
//     upgrade gets through the bridge's model of an annotation request
//     with an ack path, so never-upgradeable would be reported where the
//     gate does open.
//
// A bound found on a corpus is not a proof for every bundle: the
// counterexamples Quick reports are real (each replays to its violation),
// but a violation whose shortest trace is longer than QuickDepth moves is
// left to `simulate --explore`, and never-upgradeable from Quick is judged
// to QuickDepth with at most QuickMaxUserChanges spec changes (its message
// says so).
const (
	// QuickDepth is the quick search's depth, in moves.
	QuickDepth = 13
	// QuickMaxUserChanges is the user's spec changes a quick trace holds.
	QuickMaxUserChanges = 2
)

// QuickOptions are the quick search's options, starting from example (the
// CR the console creates for the kind, source.Context.Example; nil: an
// empty spec).
func QuickOptions(example map[string]interface{}) Options {
	return Options{Depth: QuickDepth, MaxUserChanges: QuickMaxUserChanges, Example: example}
}

// Quick runs the quick search (QuickOptions) on cfg under its primary
// policy, cfg.Policies[0], as Run does: each violation once with its
// shortest trace, and never-upgradeable when no upgrade gets through in
// the states it reached. It is pure: it reads no file and writes nothing,
// and the same configuration gives the same result. Build cfg from a
// loaded bundle with source.FromLoaded and simulate.ContextConfig (which
// sets cfg.Bridge when the bundle declares the bridge); an error is a
// configuration the model cannot run (no spec field a user could change,
// a status the CRD refuses, the bridge with the OperatorCondition
// handshake). When ctx is done the search stops early and says so
// (Result.Stopped), and reports no never-upgradeable.
func Quick(ctx context.Context, cfg *Config, example map[string]interface{}) (*Result, error) {
	return Run(ctx, cfg, QuickOptions(example))
}
