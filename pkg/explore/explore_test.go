package explore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/simulate"
	"github.com/statuscheck/statuscheck/pkg/source"
	"github.com/statuscheck/statuscheck/pkg/trace"
)

func handshakeBundle(name string) string {
	return filepath.Join(testutil.RepoRoot(), "testdata", "bundles", "handshake", name)
}

func exploreBundle(t testing.TB, name string, p contract.Policy, depth int) (*Config, *Result) {
	return exploreDir(t, handshakeBundle(name), p, depth)
}

func exploreDir(t testing.TB, dir string, p contract.Policy, depth int) (*Config, *Result) {
	return exploreWith(t, dir, p, depth, false)
}

// exploreWith explores a bundle, with the bridge writing the
// OperatorCondition when bridge is set.
func exploreWith(t testing.TB, dir string, p contract.Policy, depth int, bridge bool) (*Config, *Result) {
	return exploreWithFaults(t, dir, p, depth, bridge, 0)
}

// exploreWithFaults is exploreWith with the bridge's faults.
func exploreWithFaults(t testing.TB, dir string, p contract.Policy, depth int, bridge bool, faults Faults) (*Config, *Result) {
	return exploreWithOptions(t, dir, p, bridge, Options{Depth: depth, Faults: faults})
}

// exploreWithOptions explores the bundle in dir under policy p, with the
// bridge or without, and the options given.
func exploreWithOptions(t testing.TB, dir string, p contract.Policy, bridge bool, opts Options) (*Config, *Result) {
	ctx, err := source.FromBundle(dir)
	require.NoError(t, err)
	cfg := simulate.ContextConfig(ctx, []contract.Policy{p}, p)
	cfg.Bridge = bridge
	res, err := Run(context.Background(), cfg, opts)
	require.NoError(t, err)
	return cfg, res
}

// steps lists a counterexample's steps as "actor verb".
func steps(c Counterexample) []string {
	var out []string
	for _, st := range c.Steps {
		out = append(out, string(st.Actor)+" "+string(st.Verb))
	}
	return out
}

func rules(res *Result) []string {
	var out []string
	for _, c := range res.Counterexamples {
		out = append(out, c.Violation.Rule)
	}
	return out
}

// TestExploreResults is the table, at the default depth.
func TestExploreResults(t *testing.T) {
	tests := []struct {
		bundle string
		policy contract.Policy
		want   string // "" means no violation at all
	}{
		{"none", contract.PolicyNaive, simulate.RuleUnsafeApproval},
		{"none", contract.PolicyOLM, simulate.RuleUpgradeWhileBlocked},
		{"request-annotation", contract.PolicyOLM, simulate.RuleUnacknowledgedUpgrade},
		{"request-spec", contract.PolicyOLM, ""},
		{"request-annotation-ack", contract.PolicyOLM, ""},
	}
	for _, tt := range tests {
		t.Run(tt.bundle+"/"+string(tt.policy), func(t *testing.T) {
			_, res := exploreBundle(t, tt.bundle, tt.policy, DefaultDepth)
			assert.Equal(t, DefaultDepth, res.Depth)
			assert.False(t, res.Stopped)
			assert.Greater(t, res.States, 100)
			if tt.want == "" {
				assert.Empty(t, res.Counterexamples, "violations: %v", rules(res))
				return
			}
			assert.Contains(t, rules(res), tt.want)
		})
	}
	// Without a handshake, olm's only flaw is the race between check and
	// replacement: it never approves on outdated information itself.
	_, res := exploreBundle(t, "none", contract.PolicyOLM, DefaultDepth)
	assert.Equal(t, []string{simulate.RuleUpgradeWhileBlocked}, rules(res))
}

// TestExploreSaysNeverUpgradeable is issue 18, item 5: on a bundle whose
// conditions lose observedGeneration no upgrade gets through the olm or
// strict gate, and --explore says so (never-upgradeable, kind
// unreachable) with the shortest path to an OLM check that blocks a True
// report; the counterexample replays to the same violation. Where an
// upgrade can happen, there is none.
func TestExploreSaysNeverUpgradeable(t *testing.T) {
	noOG := filepath.Join(testutil.RepoRoot(), "testdata", "bundles", "rules", "conditions-observedgeneration-missing", "fail")
	tests := []struct {
		name   string
		dir    string
		policy contract.Policy
		want   bool
	}{
		{name: "no observedGeneration, olm", dir: noOG, policy: contract.PolicyOLM, want: true},
		{name: "no observedGeneration, strict", dir: noOG, policy: contract.PolicyStrict, want: true},
		{name: "no observedGeneration, naive reads the condition", dir: noOG, policy: contract.PolicyNaive, want: false},
		{name: "no handshake, olm", dir: handshakeBundle("none"), policy: contract.PolicyOLM, want: false},
		{name: "OperatorCondition, olm", dir: handshakeBundle("operatorcondition"), policy: contract.PolicyOLM, want: false},
		{name: "request-spec, olm", dir: handshakeBundle("request-spec"), policy: contract.PolicyOLM, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, res := exploreDir(t, tt.dir, tt.policy, 10)
			var got []Counterexample
			for _, c := range res.Counterexamples {
				if c.Violation.Rule == simulate.RuleNeverUpgradeable {
					got = append(got, c)
				}
			}
			if !tt.want {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1)
			c := got[0]
			assert.Equal(t, simulate.KindUnreachable, c.Violation.Kind)
			assert.Equal(t, tt.policy, c.Violation.Policy)
			assert.Contains(t, c.Violation.Message, "no upgrade gets through the "+string(tt.policy)+" gate")
			assert.Contains(t, c.Violation.Message, "observedGeneration absent")
			require.NotEmpty(t, c.Steps)
			last := c.Steps[len(c.Steps)-1]
			assert.Equal(t, v1alpha1.ActorOLM, last.Actor)
			assert.Equal(t, v1alpha1.VerbCheck, last.Verb)
			// The path replays, against the bundle, to the same verdict.
			files, err := WriteCounterexamples(t.TempDir(), cfg, &Result{Policy: res.Policy, Initial: res.Initial, OperatorCondition: res.OperatorCondition, Change: res.Change, Counterexamples: got})
			require.NoError(t, err)
			tr, err := trace.Open(files[0], trace.OpenOptions{})
			require.NoError(t, err)
			defer tr.Close()
			sctx, err := source.FromBundle(tt.dir)
			require.NoError(t, err)
			rcfg, _, err := simulate.NewConfig(sctx, tr, []contract.Policy{tt.policy}, tt.policy)
			require.NoError(t, err)
			sum, err := simulate.Replay(tr, rcfg, nil)
			require.NoError(t, err)
			var replayed []string
			for _, v := range sum.Violations {
				replayed = append(replayed, v.Rule)
			}
			assert.Contains(t, replayed, simulate.RuleNeverUpgradeable)
		})
	}
}

// TestCounterexamplesReplay writes every counterexample of every bundle
// and policy as a StatusTrace and replays it: it must show the same
// violation at the same step.
func TestCounterexamplesReplay(t *testing.T) {
	testutil.Long(t)
	count := 0
	type run struct {
		bundle  string
		bridge  bool
		faults  Faults
		startUp bool
		depth   int
	}
	var runs []run
	for _, b := range []string{"none", "operatorcondition", "request-spec", "request-annotation", "request-annotation-ack"} {
		runs = append(runs, run{bundle: b, depth: DefaultDepth})
		if b != "operatorcondition" {
			runs = append(runs, run{bundle: b, bridge: true, depth: DefaultDepth},
				// Every fault's steps (the bridge's request patches, the
				// admin's and the operator's OperatorCondition writes
				// with their field managers, the CR made again), at a
				// depth that keeps this test to seconds.
				run{bundle: b, bridge: true, faults: AllFaults, depth: 10},
				// The start-up window's empty OperatorCondition.
				run{bundle: b, bridge: true, startUp: true, depth: 8})
		}
	}
	for _, r := range runs {
		b := r.bundle
		if r.bridge {
			b += "+bridge"
		}
		if r.faults != 0 {
			b += "+faults"
		}
		if r.startUp {
			b += "+startup"
		}
		for _, p := range contract.Policies() {
			cfg, res := exploreWithOptions(t, handshakeBundle(r.bundle), p, r.bridge, Options{Depth: r.depth, Faults: r.faults, StartUp: r.startUp})
			dir := t.TempDir()
			files, err := WriteCounterexamples(dir, cfg, res)
			require.NoError(t, err)
			require.Len(t, files, len(res.Counterexamples))
			for i, f := range files {
				want := res.Counterexamples[i].Violation
				t.Run(b+"/"+string(p)+"/"+filepath.Base(f), func(t *testing.T) {
					count++
					tr, err := trace.Open(f, trace.OpenOptions{})
					require.NoError(t, err)
					defer tr.Close()
					rcfg, _, err := simulate.NewConfig(nil, tr, []contract.Policy{p}, p)
					require.NoError(t, err)
					assert.Equal(t, cfg.StatusSubresource, rcfg.StatusSubresource)
					assert.Equal(t, cfg.Bridge, rcfg.Bridge, "the trace says whether the bridge writes the OperatorCondition")
					sum, err := simulate.Replay(tr, rcfg, nil)
					require.NoError(t, err)
					found := false
					for _, v := range sum.Violations {
						if v.Rule == want.Rule && v.Policy == want.Policy && v.Step == want.Step {
							found = true
						}
					}
					assert.True(t, found, "replay of %s should show %s at step %d; got %+v", f, want.Rule, want.Step, sum.Violations)
				})
			}
		}
	}
	assert.GreaterOrEqual(t, count, 40)
}

// TestExploreWithTheBridge is issue 19's model check: with the bridge
// writing the OperatorCondition from the CR (reading and writing in
// separate moves) and OLM's status copy a move of its own, freshness mode
// keeps the lag window (a spec change lands after the bridge's True and
// before OLM's check: unsafe-approval in two steps), and a RequestAck
// handshake that can tell an answer leaves no violation at the default
// depth under any policy; an annotation request without an echo cannot.
func TestExploreWithTheBridge(t *testing.T) {
	testutil.Long(t)
	tests := []struct {
		name   string
		bundle string
		policy contract.Policy
		want   []string // the rules found
		// shortest is the first counterexample's steps, as actor verb.
		shortest []string
	}{
		{name: "freshness: the lag window", bundle: "none", policy: contract.PolicyOLM,
			want: []string{simulate.RuleUnsafeApproval, simulate.RuleUpgradeWhileBlocked}, shortest: []string{"user update", "olm check"}},
		{name: "freshness, strict", bundle: "none", policy: contract.PolicyStrict,
			want: []string{simulate.RuleUnsafeApproval, simulate.RuleUpgradeWhileBlocked}, shortest: []string{"user update", "olm check"}},
		{name: "spec request", bundle: "request-spec", policy: contract.PolicyOLM},
		{name: "spec request, naive", bundle: "request-spec", policy: contract.PolicyNaive},
		{name: "annotation request with an echo", bundle: "request-annotation-ack", policy: contract.PolicyOLM},
		{name: "annotation request with an echo, strict", bundle: "request-annotation-ack", policy: contract.PolicyStrict},
		{name: "annotation request without an echo", bundle: "request-annotation", policy: contract.PolicyOLM,
			want: []string{simulate.RuleUnsafeApproval, simulate.RuleUpgradeWhileBlocked, simulate.RuleUnacknowledgedUpgrade}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, res := exploreWith(t, handshakeBundle(tt.bundle), tt.policy, DefaultDepth, true)
			assert.Equal(t, DefaultDepth, res.Depth)
			assert.Greater(t, res.States, 1000)
			assert.ElementsMatch(t, tt.want, rules(res))
			if tt.shortest == nil {
				return
			}
			assert.Equal(t, tt.shortest, steps(res.Counterexamples[0]))
		})
	}
	t.Run("the bridge's own moves", func(t *testing.T) {
		_, res := exploreWith(t, handshakeBundle("request-annotation"), contract.PolicyOLM, DefaultDepth, true)
		require.NotEmpty(t, res.Counterexamples)
		actors := map[v1alpha1.Actor]bool{}
		for _, st := range res.Counterexamples[0].Steps {
			actors[st.Actor] = true
			assert.False(t, internal(st), "traces leave out the explorer's own moves")
		}
		assert.True(t, actors[v1alpha1.ActorBridge], "the bridge writes the request and the OperatorCondition")
	})
	t.Run("not with the OperatorCondition handshake", func(t *testing.T) {
		ctx, err := source.FromBundle(handshakeBundle("operatorcondition"))
		require.NoError(t, err)
		cfg := simulate.ContextConfig(ctx, []contract.Policy{contract.PolicyOLM}, contract.PolicyOLM)
		cfg.Bridge = true
		_, err = Run(context.Background(), cfg, Options{Depth: 4})
		assert.ErrorContains(t, err, "the bridge writes the OperatorCondition in the operator's stead")
	})
}

func TestExploreIsDeterministic(t *testing.T) {
	_, a := exploreBundle(t, "request-annotation", contract.PolicyNaive, 10)
	_, b := exploreBundle(t, "request-annotation", contract.PolicyNaive, 10)
	assert.Equal(t, a.States, b.States)
	require.Equal(t, len(a.Counterexamples), len(b.Counterexamples))
	for i := range a.Counterexamples {
		assert.Equal(t, a.Counterexamples[i].Violation, b.Counterexamples[i].Violation)
		assert.Equal(t, len(a.Counterexamples[i].Steps), len(b.Counterexamples[i].Steps))
	}
}

func TestExploreStopsWhenTold(t *testing.T) {
	ctx, err := source.FromBundle(handshakeBundle("operatorcondition"))
	require.NoError(t, err)
	cfg := &Config{Source: ctx.Source, StatusSubresource: true, Policies: []contract.Policy{contract.PolicyOLM}, Primary: contract.PolicyOLM}
	c, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Run(c, cfg, Options{Depth: 30})
	require.NoError(t, err)
	assert.True(t, res.Stopped)
	res, err = Run(context.Background(), cfg, Options{Depth: 30, MaxStates: 500})
	require.NoError(t, err)
	assert.True(t, res.Stopped)
	assert.LessOrEqual(t, res.States, 500)
}

// TestExploreDepth20Memory runs the largest default model to depth 20 and
// checks the heap it needs against the 1 GiB budget.
func TestExploreDepth20Memory(t *testing.T) {
	if testing.Short() {
		t.Skip("explores to depth 20")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var res *Result
	peak := uint64(0)
	ctx, err := source.FromBundle(handshakeBundle("operatorcondition"))
	require.NoError(t, err)
	cfg := &Config{Source: ctx.Source, StatusSubresource: true, CR: ctx.Resource, Policies: []contract.Policy{contract.PolicyOLM}, Primary: contract.PolicyOLM}
	res, err = Run(context.Background(), cfg, Options{Depth: 20, Progress: func(Progress) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	}})
	require.NoError(t, err)
	runtime.ReadMemStats(&after)
	peak = max(peak, after.HeapInuse)
	t.Logf("depth 20: %d states in %v, heap in use at most %d MiB", res.States, res.Elapsed, peak>>20)
	assert.Equal(t, 20, res.Depth)
	assert.Less(t, peak, uint64(1<<30))
}

func TestTraceYAMLRoundTrip(t *testing.T) {
	ctx, err := source.FromBundle(handshakeBundle("request-annotation-ack"))
	require.NoError(t, err)
	cfg := &Config{Source: ctx.Source, StatusSubresource: true, Policies: []contract.Policy{contract.PolicyOLM}, Primary: contract.PolicyOLM}
	cr, _, _, err := exploreStart(cfg, nil)
	require.NoError(t, err)
	steps := []Step{
		{Actor: v1alpha1.ActorOLM, Verb: v1alpha1.VerbRequest},
		{Actor: v1alpha1.ActorOperator, Verb: v1alpha1.VerbUpdateStatus, Value: statusValue(cfg, true, 1, "1")},
		{Actor: v1alpha1.ActorOLM, Verb: v1alpha1.VerbCheck, Expect: contract.Allow},
		{Actor: v1alpha1.ActorOLM, Verb: v1alpha1.VerbUpgrade},
	}
	data := Trace("round-trip", "a comment", cfg, &Result{Initial: cr}, steps)
	tr, err := trace.OpenReader("rt.yaml", bytesReader(data), trace.OpenOptions{})
	require.NoError(t, err)
	var got []Step
	for {
		st, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		got = append(got, st)
	}
	require.Len(t, got, len(steps))
	for i := range steps {
		assert.Equal(t, steps[i].Actor, got[i].Actor)
		assert.Equal(t, steps[i].Verb, got[i].Verb)
		assert.Equal(t, steps[i].Expect, got[i].Expect)
		assert.Equal(t, i+9, got[i].Line, "one step per line after the 8-line header")
	}
	assert.Equal(t, "1", got[1].Value["observedUpgradeRequest"])
}

// BenchmarkExplore reports states per second on the default model to
// depth 20, and the depth a 10-second search reaches.
// BenchmarkExplore reports, for the search alone, states a second and
// the live heap it grows by at its peak per state (as the garbage
// collections during the search found it, sampled every millisecond);
// states/s-with-load counts the bundle's loading too. The memo's anchor is
// the same search deciding every write afresh (nomemo), in the same run.
//
// The bridge+faults cases are the bridge's model with every fault on
// (Options.Faults, AllFaults) at the default depth, as the README's
// fault table runs them.
func BenchmarkExplore(b *testing.B) {
	for _, name := range []string{"none/depth20", "request-spec/depth20", "operatorcondition/depth20", "operatorcondition/nomemo/depth20", "operatorcondition/depth28",
		"none/bridge+faults/depth16", "request-spec/bridge+faults/depth16"} {
		b.Run(name, func(b *testing.B) {
			rest, depthText, _ := strings.Cut(name, "/depth")
			depth, err := strconv.Atoi(depthText)
			require.NoError(b, err)
			rest, faults := strings.CutSuffix(rest, "/bridge+faults")
			bundle, noMemo := strings.CutSuffix(rest, "/nomemo")
			var states int
			var searching time.Duration
			var perState float64
			for b.Loop() {
				ctx, err := source.FromBundle(handshakeBundle(bundle))
				require.NoError(b, err)
				cfg := simulate.ContextConfig(ctx, []contract.Policy{contract.PolicyOLM}, contract.PolicyOLM)
				opts := Options{Depth: depth, NoMemo: noMemo}
				if faults {
					cfg.Bridge, opts.Faults = true, AllFaults
				}
				runtime.GC()
				base := heapObjects()
				done := make(chan struct{})
				sampled := make(chan uint64)
				go func() {
					// runtime/metrics reads without stopping the world,
					// as ReadMemStats would every millisecond.
					tick := time.NewTicker(time.Millisecond)
					defer tick.Stop()
					p := base
					for {
						select {
						case <-done:
							sampled <- max(p, heapObjects())
							return
						case <-tick.C:
							p = max(p, heapObjects())
						}
					}
				}()
				res, err := Run(context.Background(), cfg, opts)
				close(done)
				peak := <-sampled
				require.NoError(b, err)
				states += res.States
				searching += res.Elapsed
				perState = float64(peak-base) / float64(res.States)
			}
			b.ReportMetric(float64(states)/searching.Seconds(), "states/s")
			b.ReportMetric(float64(states)/b.Elapsed().Seconds(), "states/s-with-load")
			b.ReportMetric(perState, "heap-B/state")
		})
	}
	b.Run("request-spec/10s", func(b *testing.B) {
		ctx, err := source.FromBundle(handshakeBundle("request-spec"))
		require.NoError(b, err)
		cfg := &Config{Source: ctx.Source, StatusSubresource: true, CR: ctx.Resource, Policies: []contract.Policy{contract.PolicyOLM}, Primary: contract.PolicyOLM}
		for b.Loop() {
			c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			res, err := Run(c, cfg, Options{Depth: 1000})
			cancel()
			require.NoError(b, err)
			b.ReportMetric(float64(res.Depth), "depth-in-10s")
			b.ReportMetric(float64(res.States)/res.Elapsed.Seconds(), "states/s")
			b.ReportMetric(float64(res.States), "states")
		}
	})
}

// heapObjects is the heap the last garbage collection found live: what
// the search holds, without the garbage it has not collected yet.
func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func bytesReader(b []byte) io.Reader { return &sliceReader{b: b} }

type sliceReader struct{ b []byte }

func (r *sliceReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// TestExploreSpecChange is issue 11, item 14: the user's spec change is a
// field the CRD keeps, and the apiserver model accepts both values.
func TestExploreSpecChange(t *testing.T) {
	crdWith := func(spec string) string {
		return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
` + spec + `
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
`
	}
	tests := []struct {
		name string
		spec string
		path string
		err  string
	}{
		{name: "an enum", spec: "            type: object\n            properties:\n              mode: {type: string, enum: [Fast, Safe]}\n              zone: {type: string}\n", path: "spec.mode"},
		{name: "a bounded integer", spec: "            type: object\n            properties:\n              replicas: {type: integer, minimum: 3, maximum: 5}\n", path: "spec.replicas"},
		{name: "a pattern no sample value matches falls through to the next field", spec: "            type: object\n            properties:\n              a: {type: string, pattern: '^[0-9]+$'}\n              b: {type: boolean}\n", path: "spec.b"},
		{name: "a spec that keeps unknown fields", spec: "            type: object\n            x-kubernetes-preserve-unknown-fields: true\n", path: "spec.statuscheckExplore"},
		{name: "nothing a user could change", spec: "            type: object\n            properties:\n              a: {type: string, pattern: '^[0-9]+$'}\n", err: "no spec field of Widget that the apiserver keeps and accepts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "crd.yaml")
			require.NoError(t, os.WriteFile(p, []byte(crdWith(tt.spec)), 0o644))
			ctx, err := source.FromCRD(p, "example.com/v1/Widget/w")
			require.NoError(t, err)
			cfg := &Config{Source: ctx.Source, StatusSubresource: true, CR: ctx.Resource, Policies: []contract.Policy{contract.PolicyOLM}, Primary: contract.PolicyOLM}
			res, err := Run(context.Background(), cfg, Options{Depth: 4})
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.path, strings.Join(res.Change.Path, "."))
			assert.NotContains(t, fmt.Sprint(res.Initial), "storageLayer", "no invented field")
			found := false
			for _, c := range res.Counterexamples {
				found = found || c.Violation.Rule == simulate.RuleUpgradeWhileBlocked
				assert.NotEqual(t, simulate.RuleWriteRejected, c.Violation.Rule, "every explored write is one the apiserver takes")
			}
			assert.True(t, found, "the race is found with this field too")
		})
	}
}

// TestMemoChangesNothing is issue 20's check of the memo: remembering the
// apiserver model's answers, and reusing them across generations where
// the CRD cannot tell generations apart (apiserver.ShiftsGenerations),
// finds exactly what deciding every write afresh finds: the same states,
// the same counterexamples with the same steps, for every handshake, with
// and without the bridge, and on a CRD with a CEL rule (no shifting).
func TestMemoChangesNothing(t *testing.T) {
	testutil.Long(t)
	type run struct {
		name     string
		dir      string
		bridge   bool
		faults   Faults
		policies []contract.Policy
		depth    int
	}
	var runs []run
	for _, b := range []string{"none", "operatorcondition", "request-spec", "request-annotation", "request-annotation-ack"} {
		runs = append(runs, run{name: b, dir: handshakeBundle(b), policies: contract.Policies(), depth: 12})
		if b != "operatorcondition" {
			runs = append(runs, run{name: b + "+bridge", dir: handshakeBundle(b), bridge: true, policies: contract.Policies(), depth: 12})
		}
	}
	// Every fault, where the writes are most varied (the faults' writes
	// go through the memo like the rest; deciding each afresh is slow, so
	// one policy and a shallower search).
	for _, b := range []string{"none", "request-spec", "request-annotation-ack"} {
		runs = append(runs, run{name: b + "+bridge+faults", dir: handshakeBundle(b), bridge: true, faults: AllFaults, policies: []contract.Policy{contract.PolicyOLM}, depth: 8})
	}
	runs = append(runs, run{name: "a CEL rule on the conditions", dir: filepath.Join(testutil.RepoRoot(), "testdata", "bundles", "rules", "status-write-rejected", "pass"), policies: contract.Policies(), depth: 12})
	for _, r := range runs {
		for _, p := range r.policies {
			t.Run(r.name+"/"+string(p), func(t *testing.T) {
				ctx, err := source.FromBundle(r.dir)
				require.NoError(t, err)
				results := make([]*Result, 2)
				for i, noMemo := range []bool{false, true} {
					cfg := simulate.ContextConfig(ctx, []contract.Policy{p}, p)
					cfg.Bridge = r.bridge
					results[i], err = Run(context.Background(), cfg, Options{Depth: r.depth, NoMemo: noMemo, Faults: r.faults})
					require.NoError(t, err)
				}
				with, without := results[0], results[1]
				assert.Equal(t, without.States, with.States)
				assert.Equal(t, without.Depth, with.Depth)
				require.Equal(t, len(without.Counterexamples), len(with.Counterexamples))
				for i := range without.Counterexamples {
					assert.Equal(t, without.Counterexamples[i].Violation, with.Counterexamples[i].Violation)
					assert.Equal(t, without.Counterexamples[i].Steps, with.Counterexamples[i].Steps)
				}
			})
		}
	}
}

// TestExploreStartUpWindow is the start-up window in the model
// (docs/bridge.md): the traces start where OLM has made the running
// version's OperatorCondition empty and its bridge has not written yet.
// OLM does not wait for that first entry, so even a slow OLM against a
// quick bridge (SettledChecks), under which the bridge's decisions leave
// only OLM's own race between its check and the replacement, lets an
// upgrade through on the empty OperatorCondition: a spec change the
// operator has not reconciled, then OLM's check, under every handshake
// the bridge serves; under RequestAck, with no answer at all.
func TestExploreStartUpWindow(t *testing.T) {
	tests := []struct {
		name    string
		bundle  string
		startUp bool
		want    []string // the rules found
		// shortest is the first counterexample's steps, as actor verb.
		shortest []string
		message  string // the first counterexample's message contains it
	}{
		{name: "freshness, the bridge has written", bundle: "none",
			want: []string{simulate.RuleUpgradeWhileBlocked}, shortest: []string{"olm check", "user update", "bridge update", "olm updateStatus", "olm upgrade"}},
		{name: "freshness, in the window", bundle: "none", startUp: true,
			want: []string{simulate.RuleUnsafeApproval, simulate.RuleUpgradeWhileBlocked}, shortest: []string{"user update", "olm check"},
			message: "allowed on an OperatorCondition with no Upgradeable condition"},
		{name: "spec request, the bridge has written", bundle: "request-spec"},
		{name: "spec request, in the window", bundle: "request-spec", startUp: true,
			want:     []string{simulate.RuleUnsafeApproval, simulate.RuleUpgradeWhileBlocked, simulate.RuleUnacknowledgedUpgrade},
			shortest: []string{"user update", "olm check"}, message: "allowed on an OperatorCondition with no Upgradeable condition"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, res := exploreWithOptions(t, handshakeBundle(tt.bundle), contract.PolicyOLM, true, Options{Depth: DefaultDepth, SettledChecks: true, StartUp: tt.startUp})
			assert.ElementsMatch(t, tt.want, rules(res))
			if tt.shortest == nil {
				return
			}
			assert.Equal(t, tt.shortest, steps(res.Counterexamples[0]))
			assert.Contains(t, res.Counterexamples[0].Violation.Message, tt.message)
		})
	}
	t.Run("only with the bridge", func(t *testing.T) {
		ctx, err := source.FromBundle(handshakeBundle("none"))
		require.NoError(t, err)
		cfg := simulate.ContextConfig(ctx, []contract.Policy{contract.PolicyOLM}, contract.PolicyOLM)
		_, err = Run(context.Background(), cfg, Options{Depth: 4, StartUp: true})
		assert.ErrorContains(t, err, "the start-up window is the bridge's")
	})
}
