package simulate

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/source"
	"github.com/statuscheck/statuscheck/pkg/trace"
)

// celCRD has CEL rules on spec (see its header).
const celCRD = "testdata/traces/crds/cooloperators-cel.yaml"

// replayed is a whole replay: every row and the summary.
type replayed struct {
	rows []Row
	sum  *Summary
	err  error
}

// replayWith replays path against crd ("" for none), with a replay's
// memo or without any, keeping every row.
func replayWith(t testing.TB, path, crd string, memo *Memo) replayed {
	t.Helper()
	var out replayed
	out.sum, out.err = replayConfigured(t, path, crd, memo, func(r Row) error {
		out.rows = append(out.rows, r)
		return nil
	})
	return out
}

// replayWithEmit is Replay (its own memo) against crd, rows to emit.
func replayWithEmit(t testing.TB, path, crd string, emit func(Row) error) *Summary {
	t.Helper()
	sum, err := replayConfigured(t, path, crd, NewReplayMemo(), emit)
	require.NoError(t, err)
	return sum
}

func replayConfigured(t testing.TB, path, crd string, memo *Memo, emit func(Row) error) (*Summary, error) {
	t.Helper()
	var ctx *source.Context
	opts := trace.OpenOptions{Limits: trace.DefaultLimits}
	if crd != "" {
		var err error
		ctx, err = source.FromCRD(filepath.Join(testutil.RepoRoot(), crd), "cool.operators.corp/v1beta1/CoolOperator/cool-operator")
		require.NoError(t, err)
		opts.Source, opts.Plural, opts.StatusSubresource = ctx.Source, ctx.Plural, ctx.StatusSubresource
	}
	tr, err := trace.Open(path, opts)
	require.NoError(t, err)
	defer tr.Close()
	if ctx != nil && tr.Source != nil {
		ctx.Source = tr.Source // the trace's handshake
	}
	cfg, _, err := NewConfig(ctx, tr, contract.Policies(), contract.PolicyOLM)
	require.NoError(t, err)
	cfg.Memo = memo
	return replay(tr, cfg, emit)
}

// assertSameReplay replays path with and without the memo and requires
// the same rows (generation, condition, outcome and violations of every
// step) and the same summary; it returns the memo's abstract hits.
func assertSameReplay(t testing.TB, path, crd string) int {
	t.Helper()
	memo := NewReplayMemo()
	with := replayWith(t, path, crd, memo)
	without := replayWith(t, path, crd, nil)
	require.Equal(t, without.err, with.err)
	require.Equal(t, len(without.rows), len(with.rows))
	for i := range without.rows {
		require.Equal(t, without.rows[i], with.rows[i], "%s: step %d", path, i+1)
	}
	require.Equal(t, without.sum, with.sum)
	return memo.Hits()
}

// TestBenchTraceIsAccepted: the benchmarks' trace is one the good CRD
// takes step by step (no refusal, nothing pruned away), so what they time
// is the apiserver's work on accepted writes.
func TestBenchTraceIsAccepted(t *testing.T) {
	p := filepath.Join(t.TempDir(), "trace.yaml")
	writeTrace(t, p, 400)
	got := replayWith(t, p, goodCRD, NewReplayMemo())
	require.NoError(t, got.err)
	assert.Empty(t, got.sum.Violations)
	for i, r := range got.rows {
		require.Equal(t, int64(2+i/4), r.Generation, "step %d: every user update bumps generation", i+1)
		if i%4 == 3 {
			assert.Equal(t, fmt.Sprintf("True og=%d", 2+i/4), r.Condition, "step %d", i+1)
		}
	}
	require.Len(t, got.sum.Final, len(contract.Policies()))
	assert.Equal(t, v1alpha1.Allow, got.sum.Final[0].Verdict)
}

// TestReplayMemoChangesNothing replays every trace of testdata/traces and
// the benchmarks' trace with a replay's memo and without one: the same
// rows, violations and summary. On the benchmarks' trace nearly every
// write is answered by the memo (new generations, new timestamps), which
// is why the test can fail: a reused answer with a value in the wrong
// place shows in the rows.
func TestReplayMemoChangesNothing(t *testing.T) {
	for _, tc := range fidelityCases {
		t.Run("fidelity/"+tc.trace+"/"+tc.crd, func(t *testing.T) {
			assertSameReplay(t, fidelityPath(tc.trace), tc.crd)
		})
	}
	dir := filepath.Join(testutil.RepoRoot(), "testdata", "traces")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		for _, crd := range []string{"", goodCRD, defaultsCRD, celCRD} {
			t.Run(e.Name()+"/"+crd, func(t *testing.T) {
				p := filepath.Join(dir, e.Name())
				if crd == "" && strings.HasSuffix(p, ".jsonl") {
					t.Skip("an audit log needs the status source")
				}
				assertSameReplay(t, p, crd)
			})
		}
	}
	t.Run("bench", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "trace.yaml")
		writeTrace(t, p, 2000)
		hits := assertSameReplay(t, p, goodCRD)
		// 1500 writes; the first round of each kind is computed.
		assert.Greater(t, hits, 1490, "the memo answers the trace's writes")
	})
}

// randomTrace writes a trace of n steps drawn from r: spec and status
// writes with values the good CRD takes and values it refuses (a status
// outside the enum, a reason past its length, a timestamp that is not
// one, a missing field, a duplicate condition type, unknown fields), new
// and repeated timestamps, right and wrong observedGenerations, metadata
// writes, deletes and OLM's checks.
//
// A tame trace draws only values the CRD takes, with a stamp that is new
// or the last again and the generation right or one behind, so that
// writes recur as the memo's abstract questions.
func randomTrace(t testing.TB, path string, r *rand.Rand, n int, tame bool) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	w := bufio.NewWriter(f)
	fmt.Fprint(w, testutil.CoolTrace("random", "{storageLayer: PostgreSQL}", ""))
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := 0
	pick := func(vs ...interface{}) interface{} { return vs[r.Intn(len(vs))] }
	// wild picks one of vs, in a tame trace one of the first n.
	wild := func(n int, vs ...interface{}) interface{} {
		if tame {
			return vs[r.Intn(n)]
		}
		return pick(vs...)
	}
	stamp := func() interface{} {
		switch r.Intn(6) {
		case 0:
			if !tame {
				return "yesterday"
			}
		case 1:
			return start.Add(time.Duration(clock) * time.Second).Format(time.RFC3339) // the last again
		}
		clock++
		return start.Add(time.Duration(clock) * time.Second).Format(time.RFC3339)
	}
	gen := int64(1)
	cond := func() map[string]interface{} {
		c := map[string]interface{}{
			"type":               pick("Upgradeable", "Upgradeable", "Ready"),
			"status":             wild(3, "True", "False", "True", "Maybe"),
			"reason":             wild(2, "Idle", "Migrating", strings.Repeat("r", 1025)),
			"message":            pick("ready", "migrating", ""),
			"lastTransitionTime": stamp(),
			"observedGeneration": wild(4, gen, gen, gen-1, gen+1, fmt.Sprint(gen)),
		}
		if !tame && r.Intn(8) == 0 {
			delete(c, pick("message", "lastTransitionTime", "reason").(string))
		}
		return c
	}
	for i := 0; i < n; i++ {
		var step map[string]interface{}
		switch k := r.Intn(12); {
		case k < 3:
			spec := map[string]interface{}{"storageLayer": wild(2, "PostgreSQL", "MariaDB", "Oracle")}
			if r.Intn(3) == 0 {
				spec["upgradeRequest"] = pick("a", "b", fmt.Sprint(i))
			}
			if r.Intn(4) == 0 {
				spec["round"] = i // not in the schema: pruned
			}
			step = map[string]interface{}{"actor": "user", "update": map[string]interface{}{"spec": spec}}
			gen++ // a guess: the operator's reports aim at it
		case k < 8:
			conds := []interface{}{cond()}
			if !tame && r.Intn(4) == 0 {
				conds = append(conds, cond())
			}
			st := map[string]interface{}{"conditions": conds, "observedGeneration": wild(2, gen, gen-1, float64(gen), fmt.Sprint(gen))}
			if r.Intn(3) == 0 {
				st["observedUpgradeRequest"] = pick("a", "b", "c")
			}
			step = map[string]interface{}{"actor": "operator", "updateStatus": st}
		case k < 9:
			md := map[string]interface{}{"finalizers": pick(nil, []interface{}{"cool.operators.corp/cleanup"})}
			step = map[string]interface{}{"actor": "operator", "update": map[string]interface{}{"metadata": md}}
		case k < 10 && r.Intn(100) == 0:
			step = map[string]interface{}{"actor": "user", "delete": map[string]interface{}{}}
		default:
			step = map[string]interface{}{"actor": "olm", "check": map[string]interface{}{}}
		}
		b, err := json.Marshal(step)
		require.NoError(t, err)
		fmt.Fprintf(w, "- %s\n", b)
	}
	require.NoError(t, w.Flush())
	require.NoError(t, f.Close())
}

// TestReplayMemoChangesNothingOnRandomTraces: random traces with refused
// and accepted writes, against the good CRD, the one with defaults and
// none, give the same replay with and without the memo.
func TestReplayMemoChangesNothingOnRandomTraces(t *testing.T) {
	hits := 0
	for seed := int64(1); seed <= 20; seed++ {
		p := filepath.Join(t.TempDir(), "trace.yaml")
		randomTrace(t, p, rand.New(rand.NewSource(seed)), 400, seed%2 == 0)
		for _, crd := range []string{goodCRD, defaultsCRD, celCRD, ""} {
			hits += assertSameReplay(t, p, crd)
		}
	}
	t.Logf("%d writes answered by the memo", hits)
	assert.Greater(t, hits, 40, "some writes are answered by the memo")
}

// FuzzReplayMemo is TestReplayMemoChangesNothingOnRandomTraces on traces
// the fuzzer draws.
func FuzzReplayMemo(f *testing.F) {
	f.Add(int64(1), uint8(40), false)
	f.Add(int64(7), uint8(200), true)
	f.Fuzz(func(t *testing.T, seed int64, n uint8, tame bool) {
		p := filepath.Join(t.TempDir(), "trace.yaml")
		randomTrace(t, p, rand.New(rand.NewSource(seed)), int(n)+1, tame)
		assertSameReplay(t, p, goodCRD)
		assertSameReplay(t, p, celCRD)
	})
}

// TestMemoTellsGenerationTypesApart: a generation written as a string or
// a float is not the integer it reads as (jsonobj.Int would take both):
// the CRD refuses the string, and a float is kept a float, so neither may
// reuse the answer to the integer's write of the round before.
func TestMemoTellsGenerationTypesApart(t *testing.T) {
	for _, og := range []string{`"4"`, `4.0`, `4`} {
		t.Run(og, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "trace.yaml")
			require.NoError(t, os.WriteFile(p, []byte(testutil.CoolTrace("types", "{storageLayer: PostgreSQL}", "")+`- {actor: user, update: {spec: {storageLayer: MariaDB}}}
- {actor: operator, updateStatus: {observedGeneration: 2, conditions: [{type: Upgradeable, status: "True", reason: R, message: m, lastTransitionTime: "2026-01-01T00:00:00Z", observedGeneration: 2}]}}
- {actor: user, update: {spec: {storageLayer: PostgreSQL}}}
- {actor: operator, updateStatus: {observedGeneration: 3, conditions: [{type: Upgradeable, status: "True", reason: R, message: m, lastTransitionTime: "2026-01-01T00:00:00Z", observedGeneration: 3}]}}
- {actor: user, update: {spec: {storageLayer: MariaDB}}}
- {actor: operator, updateStatus: {observedGeneration: `+og+`, conditions: [{type: Upgradeable, status: "True", reason: R, message: m, lastTransitionTime: "2026-01-01T00:00:00Z", observedGeneration: 4}]}}
`), 0o644))
			hits := assertSameReplay(t, p, goodCRD)
			if og == "4" {
				assert.Positive(t, hits, "the integer's write is the round before's")
			}
			if og == `"4"` {
				got := replayWith(t, p, goodCRD, NewReplayMemo())
				assert.Equal(t, 1, got.sum.Counts[RuleWriteRejected], "the CRD refuses a string")
			}
		})
	}
}

// TestMemoLeavesRuledValuesAlone: on the CEL CRD a rule reads
// spec.upgradeRequest, so a write of "b" (which the rule refuses) is not
// the question of the writes of other values before it, though the schema
// alone could not tell them apart.
func TestMemoLeavesRuledValuesAlone(t *testing.T) {
	var b strings.Builder
	b.WriteString(testutil.CoolTrace("ruled", "{storageLayer: PostgreSQL, upgradeRequest: r0}", ""))
	for i := 1; i <= 5; i++ {
		fmt.Fprintf(&b, "- {actor: user, update: {spec: {upgradeRequest: r%d}}}\n", i)
	}
	b.WriteString("- {actor: user, update: {spec: {upgradeRequest: b}}}\n")
	p := filepath.Join(t.TempDir(), "trace.yaml")
	require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o644))
	assertSameReplay(t, p, celCRD)
	got := replayWith(t, p, celCRD, NewReplayMemo())
	assert.Equal(t, 1, got.sum.Counts[RuleWriteRejected], "the rule refuses b")
	// Without the rule the same writes are one question at other
	// generations: the memo answers them.
	assert.Positive(t, assertSameReplay(t, p, goodCRD))
}
