package simulate

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/source"
	"github.com/statuscheck/statuscheck/pkg/trace"
)

// writeTrace writes a native trace of n steps that the good bundle's CRD
// accepts, as a recording of a busy operator would read: rounds of a
// user's change of spec.storageLayer (PostgreSQL and MariaDB in turn),
// the operator's False (migrating) and True (ready) reports for the new
// generation, each with a new lastTransitionTime, and OLM's check.
func writeTrace(tb testing.TB, path string, n int) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(i int) string { return start.Add(time.Duration(i) * time.Second).Format(time.RFC3339) }
	fmt.Fprint(w, testutil.CoolTrace("generated", "{storageLayer: PostgreSQL}",
		fmt.Sprintf(`{observedGeneration: 1, conditions: [{type: Upgradeable, status: "True", reason: OperatorIdle, message: PostgreSQL is ready, lastTransitionTime: "%s", observedGeneration: 1}]}`, at(0))))
	gen := 1
	layer := "PostgreSQL"
	for i := 0; i < n; i++ {
		switch i % 4 {
		case 0:
			gen++
			layer = map[string]string{"PostgreSQL": "MariaDB", "MariaDB": "PostgreSQL"}[layer]
			fmt.Fprintf(w, "- {actor: user, update: {spec: {storageLayer: %s}}}\n", layer)
		case 1:
			fmt.Fprintf(w, "- {actor: operator, updateStatus: {observedGeneration: %d, conditions: [{type: Upgradeable, status: \"False\", reason: Migrating, message: migrating to %s, lastTransitionTime: \"%s\", observedGeneration: %d}]}}\n", gen, layer, at(i), gen)
		case 2:
			fmt.Fprintf(w, "- {actor: operator, updateStatus: {observedGeneration: %d, conditions: [{type: Upgradeable, status: \"True\", reason: OperatorIdle, message: %s is ready, lastTransitionTime: \"%s\", observedGeneration: %d}]}}\n", gen, layer, at(i), gen)
		case 3:
			fmt.Fprintf(w, "- {actor: olm, check: {}}\n")
		}
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

func benchConfig() *Config {
	return &Config{Source: &v1alpha1.StatusSource{APIVersion: "cool.operators.corp/v1beta1", Kind: "CoolOperator", Name: "cool-operator"},
		StatusSubresource: true, Policies: []contract.Policy{contract.PolicyOLM}, Primary: contract.PolicyOLM}
}

var traceCache = map[int]string{}

func generated(tb testing.TB, n int) string {
	if p, ok := traceCache[n]; ok {
		return p
	}
	dir, err := os.MkdirTemp("", "statuscheck-bench")
	if err != nil {
		tb.Fatal(err)
	}
	p := filepath.Join(dir, "trace.yaml")
	writeTrace(tb, p, n)
	traceCache[n] = p
	return p
}

func decodeAll(tb testing.TB, path string) int {
	t, err := trace.Open(path, trace.OpenOptions{Limits: trace.DefaultLimits})
	if err != nil {
		tb.Fatal(err)
	}
	defer t.Close()
	n := 0
	for {
		if _, err := t.Next(); err != nil {
			if errors.Is(err, io.EOF) {
				return n
			}
			tb.Fatal(err)
		}
		n++
	}
}

func replayAll(tb testing.TB, path string, emit func(Row) error) *Summary {
	t, err := trace.Open(path, trace.OpenOptions{Limits: trace.DefaultLimits})
	if err != nil {
		tb.Fatal(err)
	}
	defer t.Close()
	sum, err := Replay(t, benchConfig(), emit)
	if err != nil {
		tb.Fatal(err)
	}
	return sum
}

const benchSteps = 1_000_000

// sampleHeap is a replay's emit that keeps the largest heap in use seen
// every 100,000 steps in most.
func sampleHeap(most *uint64) func(Row) error {
	return func(r Row) error {
		if r.Outcome.Step%100_000 == 0 {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			*most = max(*most, ms.HeapInuse)
		}
		return nil
	}
}

// BenchmarkDecode1M only reads the generated trace: the floor replay is
// measured against.
func BenchmarkDecode1M(b *testing.B) {
	path := generated(b, benchSteps)
	for b.Loop() {
		if n := decodeAll(b, path); n != benchSteps {
			b.Fatalf("decoded %d steps", n)
		}
	}
	b.ReportMetric(float64(benchSteps)*float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}

// BenchmarkReplay1M decodes and replays the same trace through the core.
func BenchmarkReplay1M(b *testing.B) {
	path := generated(b, benchSteps)
	for b.Loop() {
		if sum := replayAll(b, path, nil); sum.Steps != benchSteps {
			b.Fatalf("replayed %d steps", sum.Steps)
		}
	}
	b.ReportMetric(float64(benchSteps)*float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}

// BenchmarkReplayVsDecode times both in one iteration and reports the
// ratio, and the largest heap seen while replaying.
func BenchmarkReplayVsDecode(b *testing.B) {
	path := generated(b, benchSteps)
	var dec, rep time.Duration
	var maxHeap uint64
	for b.Loop() {
		start := time.Now()
		decodeAll(b, path)
		dec += time.Since(start)
		start = time.Now()
		replayAll(b, path, sampleHeap(&maxHeap))
		rep += time.Since(start)
	}
	b.ReportMetric(float64(rep)/float64(dec), "replay/decode")
	b.ReportMetric(float64(benchSteps)*float64(b.N)/rep.Seconds(), "replay-steps/s")
	b.ReportMetric(float64(maxHeap)/(1<<20), "max-heap-MiB")
}

// BenchmarkReplayCRD1M replays the generated million-step trace with a
// CRD (every write through the apiextensions-apiserver's code, or the
// memo's answer) and without one (the schemaless fast path), side by side
// in one iteration: the ratio is issue 20's replay figure, the largest
// heap seen with the CRD says whether memory stays flat. good-crd is the
// good bundle's CRD; cel-on-spec has CEL rules on spec
// (testdata/traces/crds/cooloperators-cel.yaml: nothing under them is
// renamed); cel-on-root is the good CRD with a rule on the whole object,
// which may read any value, so no answer is reused for another write:
// the cost of every write decided afresh.
func BenchmarkReplayCRD1M(b *testing.B) {
	good := filepath.Join(testutil.RepoRoot(), goodCRD)
	text, err := os.ReadFile(good)
	if err != nil {
		b.Fatal(err)
	}
	const root = "        type: object\n        properties:\n          apiVersion:"
	if !strings.Contains(string(text), root) {
		b.Fatal("the good CRD's root moved")
	}
	onRoot := filepath.Join(b.TempDir(), "cel-on-root.yaml")
	withRule := strings.Replace(string(text), root, "        type: object\n        x-kubernetes-validations:\n        - rule: self.spec.storageLayer != ''\n        properties:\n          apiVersion:", 1)
	if err := os.WriteFile(onRoot, []byte(withRule), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, crd string }{
		{"good-crd", good},
		{"cel-on-spec", filepath.Join(testutil.RepoRoot(), "testdata", "traces", "crds", "cooloperators-cel.yaml")},
		{"cel-on-root", onRoot},
	} {
		b.Run(tc.name, func(b *testing.B) {
			sctx, err := source.FromCRD(tc.crd, "cool.operators.corp/v1beta1/CoolOperator/cool-operator")
			if err != nil {
				b.Fatal(err)
			}
			if tc.name == "cel-on-root" && (sctx.Resource.ShiftsGenerations() || sctx.Resource.Values() != nil) {
				b.Fatal("the CEL rule did not take")
			}
			replayCRD(b, sctx)
		})
	}
}

func replayCRD(b *testing.B, sctx *source.Context) {
	path := generated(b, benchSteps)
	var with, without time.Duration
	var maxHeap uint64
	for b.Loop() {
		start := time.Now()
		replayAll(b, path, nil)
		without += time.Since(start)
		t, err := trace.Open(path, trace.OpenOptions{Limits: trace.DefaultLimits})
		if err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		sum, err := Replay(t, ContextConfig(sctx, []contract.Policy{contract.PolicyOLM}, contract.PolicyOLM), sampleHeap(&maxHeap))
		with += time.Since(start)
		t.Close()
		if err != nil || sum.Steps != benchSteps {
			b.Fatalf("replayed %v steps: %v", sum, err)
		}
		if len(sum.Violations) > 0 {
			b.Fatalf("the CRD refuses the trace: %s", sum.Violations[0].Message)
		}
	}
	b.ReportMetric(float64(with)/float64(without), "with-crd/without")
	b.ReportMetric(float64(benchSteps)*float64(b.N)/with.Seconds(), "crd-steps/s")
	b.ReportMetric(float64(maxHeap)/(1<<20), "max-heap-MiB")
}
