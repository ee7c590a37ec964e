package explore

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/simulate"
	"github.com/statuscheck/statuscheck/pkg/source"
)

// quickBundle is a bundle of the corpus Quick's bounds are held to, with
// its status source resolved as validate resolves it (source.FromLoaded).
type quickBundle struct {
	name string
	sctx *source.Context
}

// quickCorpus is every bundle under testdata/bundles/handshake and
// testdata/bundles/rules/*/{fail,pass} whose status source resolves
// (those that do not, validate's other rules report, and nothing is
// searched).
func quickCorpus(t testing.TB) []quickBundle {
	t.Helper()
	root := testutil.RepoRoot()
	var dirs []string
	for _, pattern := range []string{"testdata/bundles/handshake/*", "testdata/bundles/rules/*/fail", "testdata/bundles/rules/*/pass"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		require.NoError(t, err)
		dirs = append(dirs, m...)
	}
	var out []quickBundle
	for _, d := range dirs {
		b, err := bundle.Load(d, bundle.Options{})
		if err != nil {
			continue // not a bundle (handshake's README.md)
		}
		sctx, err := source.FromLoaded(b, nil, "bundle "+d)
		if err != nil {
			continue
		}
		name, err := filepath.Rel(filepath.Join(root, "testdata", "bundles"), d)
		require.NoError(t, err)
		out = append(out, quickBundle{name: name, sctx: sctx})
	}
	require.Greater(t, len(out), 30, "the corpus")
	return out
}

// modelKey says what a search on a bundle depends on: the status source,
// the CRD, the example and the bridge. Bundles alike in all four (the rule
// fixtures share the cool operator's) are searched once.
func modelKey(t testing.TB, q quickBundle, bridge bool) string {
	crd, err := json.Marshal(q.sctx.CRD.V1)
	require.NoError(t, err)
	example, err := json.Marshal(q.sctx.Example)
	require.NoError(t, err)
	return fmt.Sprintf("%s\x00%s\x00%s\x00%v", q.sctx.Source.Marshal(), crd, example, bridge)
}

// violations are a result's violation rules with their policies, sorted.
func violations(res *Result) []string {
	var out []string
	for _, c := range res.Counterexamples {
		out = append(out, c.Violation.Rule+"/"+string(c.Violation.Policy))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestQuickFindsWhatDefaultDepthFinds holds Quick's bounds to the
// DefaultDepth search: on every bundle of the corpus, with and without the
// bridge (not with the OperatorCondition handshake, which the bridge does
// not run), under every policy, Quick finds exactly the same violation
// rules (write-rejected too, which validate reports from the search as
// well); where the model cannot run the bundle, both say the same. A CEL
// transition rule on the good and protected bundles' CRD adds a write
// refused only on the user's second spec change.
func TestQuickFindsWhatDefaultDepthFinds(t *testing.T) {
	wantRejected := false
	check := func(t *testing.T, q quickBundle, bridge bool, p contract.Policy) {
		cfg := simulate.ContextConfig(q.sctx, []contract.Policy{p}, p)
		cfg.Bridge = bridge
		def, derr := Run(context.Background(), cfg, Options{Depth: DefaultDepth, Example: q.sctx.Example})
		quick, qerr := Quick(context.Background(), cfg, q.sctx.Example)
		if derr != nil {
			require.Error(t, qerr)
			assert.Equal(t, derr.Error(), qerr.Error())
			return
		}
		require.NoError(t, qerr)
		assert.False(t, quick.Stopped)
		assert.True(t, quick.Depth == QuickDepth || quick.Exhausted, "depth %d", quick.Depth)
		// Every rule, write-rejected too: validate reports each.
		assert.Equal(t, violations(def), violations(quick), "default: %d states; quick: %d states", def.States, quick.States)
		if wantRejected {
			assert.Contains(t, violations(def), simulate.RuleWriteRejected+"/", "the case finds write-rejected")
		}
	}
	t.Run("none", func(t *testing.T) {
		// The short part: one small model.
		sctx, err := source.FromBundle(handshakeBundle("none"))
		require.NoError(t, err)
		check(t, quickBundle{name: "handshake/none", sctx: sctx}, false, contract.PolicyOLM)
	})
	t.Run("cel transition rule", func(t *testing.T) {
		// A CRD that refuses a change of spec.storageLayer while the
		// status says Upgradeable is not True: the second of two user
		// changes, made while the operator migrates, is refused
		// (write-rejected in 3 steps: user update, operator updateStatus
		// False, user update).
		wantRejected = true
		defer func() { wantRejected = false }()
		for _, name := range []string{"good", "protected"} {
			sctx, err := source.FromBundle(editedBundle(t, name, celTransitionRule...))
			require.NoError(t, err)
			for _, bridge := range []bool{false, true} {
				for _, p := range contract.Policies() {
					t.Run(fmt.Sprintf("%s/bridge=%v/%s", name, bridge, p), func(t *testing.T) {
						check(t, quickBundle{name: name + "+cel", sctx: sctx}, bridge, p)
					})
				}
			}
		}
	})
	t.Run("corpus", func(t *testing.T) {
		testutil.Long(t)
		seen := map[string]bool{}
		searched := 0
		for _, q := range quickCorpus(t) {
			for _, bridge := range []bool{false, true} {
				if bridge && q.sctx.Source.Mode() == v1alpha1.HandshakeOperatorCondition {
					continue
				}
				if k := modelKey(t, q, bridge); seen[k] {
					continue
				} else {
					seen[k] = true
				}
				for _, p := range contract.Policies() {
					searched++
					t.Run(fmt.Sprintf("%s/bridge=%v/%s", q.name, bridge, p), func(t *testing.T) { check(t, q, bridge, p) })
				}
			}
		}
		t.Logf("%d models searched both ways", searched)
	})
}

// BenchmarkQuick measures the quick search against the DefaultDepth search
// in the same run, per bundle of the corpus, on each bundle's own
// configuration (the bridge where it declares one) under policy olm, as
// validate runs it: ms/bundle is the mean over the bundles and the
// iterations, with the median and the 95th percentile. quick1 is the
// quick search with one spec change a trace instead of
// QuickMaxUserChanges, what the second change costs. The bridge cases run every bundle with the bridge (where its
// handshake lets it run), the costliest model. load is
// source.FromLoaded, which validate pays before the search.
func BenchmarkQuick(b *testing.B) {
	corpus := quickCorpus(b)
	search := func(b *testing.B, bridge bool, run func(cfg *Config, q quickBundle) (*Result, error)) {
		var cfgs []*Config
		var bundles []quickBundle
		for _, q := range corpus {
			cfg := simulate.ContextConfig(q.sctx, []contract.Policy{contract.PolicyOLM}, contract.PolicyOLM)
			if bridge {
				if q.sctx.Source.Mode() == v1alpha1.HandshakeOperatorCondition {
					continue
				}
				cfg.Bridge = true
			}
			if _, err := Quick(context.Background(), cfg, q.sctx.Example); err != nil {
				continue // the model cannot run it: nothing is searched
			}
			cfgs, bundles = append(cfgs, cfg), append(bundles, q)
		}
		var times []time.Duration
		var total time.Duration
		for b.Loop() {
			for i, cfg := range cfgs {
				start := time.Now()
				_, err := run(cfg, bundles[i])
				d := time.Since(start)
				require.NoError(b, err)
				total += d
				times = append(times, d)
			}
		}
		slices.Sort(times)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(ms(total)/float64(len(times)), "ms/bundle")
		b.ReportMetric(ms(times[len(times)/2]), "median-ms/bundle")
		b.ReportMetric(ms(times[len(times)*95/100]), "p95-ms/bundle")
		b.ReportMetric(float64(len(cfgs)), "bundles")
	}
	quick := func(cfg *Config, q quickBundle) (*Result, error) {
		return Quick(context.Background(), cfg, q.sctx.Example)
	}
	def := func(cfg *Config, q quickBundle) (*Result, error) {
		return Run(context.Background(), cfg, Options{Depth: DefaultDepth, Example: q.sctx.Example})
	}
	// The bound before QuickMaxUserChanges was 2: one spec change a trace.
	oneChange := func(cfg *Config, q quickBundle) (*Result, error) {
		return Run(context.Background(), cfg, Options{Depth: QuickDepth, MaxUserChanges: 1, Example: q.sctx.Example})
	}
	b.Run("quick", func(b *testing.B) { search(b, false, quick) })
	b.Run("quick1", func(b *testing.B) { search(b, false, oneChange) })
	b.Run("default", func(b *testing.B) { search(b, false, def) })
	b.Run("quick/bridge", func(b *testing.B) { search(b, true, quick) })
	b.Run("quick1/bridge", func(b *testing.B) { search(b, true, oneChange) })
	b.Run("default/bridge", func(b *testing.B) { search(b, true, def) })
	b.Run("load", func(b *testing.B) {
		var loaded []*bundle.Bundle
		for _, q := range corpus {
			loaded = append(loaded, q.sctx.Bundle)
		}
		var total time.Duration
		n := 0
		for b.Loop() {
			for _, bl := range loaded {
				start := time.Now()
				_, err := source.FromLoaded(bl, nil, "bundle")
				total += time.Since(start)
				require.NoError(b, err)
				n++
			}
		}
		b.ReportMetric(float64(total.Microseconds())/1000/float64(n), "ms/bundle")
	})
}
