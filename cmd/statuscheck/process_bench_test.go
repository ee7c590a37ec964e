package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/statuscheck/statuscheck/internal/testutil"
)

// BenchmarkProcess times statuscheck as users run it: whole processes,
// start-up included, side by side in the same run with the anchor
// (internal/testutil/apibaseline: operator-framework/api's GetBundleFromDir
// and its DefaultBundleValidators, what operator-sdk bundle validate runs)
// over the corpus of real bundles:
//
//   - startup: `statuscheck --help` against the anchor without arguments
//     (starting the process and initialising its packages, nothing else),
//     ten of each an iteration;
//   - per-bundle: one process per bundle, as a pre-commit hook starts them
//     (`statuscheck validate DIR` against `apibaseline DIR`);
//   - all-bundles: one process for all the bundles, as a CI job starts one.
//
// Both are built from this checkout into a temporary directory, as make
// build builds (static: CGO_ENABLED=0), the anchor too, so that neither
// pays a dynamic loader the other does not. Each iteration runs every
// program on the same inputs, interleaved input by input, the order
// rotating between iterations, so that the load of whatever else runs on
// the machine falls on all of them.
// The metrics are each program's wall time per bundle (per process for
// startup) and the ratio statuscheck/anchor; ns/op is all of them
// together. STATUSCHECK_PREVIOUS, set to a statuscheck binary built
// before a change, adds it as a third program (previous-ns, and
// vs-previous: statuscheck/previous), for before and after in one run.
//
//	go test ./cmd/statuscheck -run '^$' -bench Process -benchtime 5x
func BenchmarkProcess(b *testing.B) {
	dirs := testutil.CorpusBundles(b)
	bin := b.TempDir()
	statuscheck, anchor := filepath.Join(bin, "statuscheck"), filepath.Join(bin, "apibaseline")
	for out, pkg := range map[string]string{statuscheck: "./cmd/statuscheck", anchor: "./internal/testutil/apibaseline"} {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = testutil.RepoRoot()
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("building %s: %v\n%s", pkg, err, msg)
		}
	}
	progs := []program{
		{name: "statuscheck", path: statuscheck, args: []string{"validate"}, help: []string{"--help"}},
		{name: "anchor", path: anchor},
	}
	if prev := os.Getenv("STATUSCHECK_PREVIOUS"); prev != "" {
		progs = append(progs, program{name: "previous", path: prev, args: []string{"validate"}, help: []string{"--help"}})
	}
	// Every program once before timing: its pages and the corpus's in the
	// page cache.
	for _, p := range progs {
		p.run(b, p.help)
		p.run(b, slices.Concat(p.args, dirs))
	}

	b.Run("startup", func(b *testing.B) {
		inputs := make([]func(p program) []string, 10)
		for i := range inputs {
			inputs[i] = func(p program) []string { return p.help }
		}
		sideBySide(b, progs, inputs, "op")
	})
	b.Run("per-bundle", func(b *testing.B) {
		var inputs []func(p program) []string
		for _, d := range dirs {
			inputs = append(inputs, func(p program) []string { return slices.Concat(p.args, []string{d}) })
		}
		sideBySide(b, progs, inputs, "bundle")
	})
	b.Run("all-bundles", func(b *testing.B) {
		all := func(p program) []string { return slices.Concat(p.args, dirs) }
		sideBySide(b, progs, []func(p program) []string{all}, "bundle", len(dirs))
	})
}

// program is one of the programs compared: args come before the bundle
// directories, help is its start-up alone.
type program struct {
	name, path string
	args, help []string
}

// sideBySide runs every program on every input, b.N times, the order of
// the programs rotating from one input to the next and from one iteration
// to the next, and reports each program's time per unit (units units per
// iteration: the inputs unless given) and the ratios.
func sideBySide(b *testing.B, progs []program, inputs []func(p program) []string, unit string, units ...int) {
	n := len(inputs)
	if len(units) > 0 {
		n = units[0]
	}
	total := make([]time.Duration, len(progs))
	iters, turn := 0, 0
	for b.Loop() {
		for _, in := range inputs {
			for k := range progs {
				i := (k + turn) % len(progs)
				total[i] += progs[i].run(b, in(progs[i]))
			}
			turn++
		}
		iters++
	}
	per := func(i int) float64 { return float64(total[i].Nanoseconds()) / float64(iters*n) }
	for i, p := range progs {
		b.ReportMetric(per(i), p.name+"-ns/"+unit)
	}
	b.ReportMetric(per(0)/per(1), "ratio")
	if len(progs) > 2 {
		b.ReportMetric(per(0)/per(2), "vs-previous")
	}
}

// run runs the program to its end, its output discarded, and returns its
// wall time. Exit 0, and 1 (findings), are answers; any other end fails
// the benchmark.
func (p program) run(b *testing.B, args []string) time.Duration {
	cmd := exec.Command(p.path, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		b.Fatalf("%s %s: %v\n%s", p.name, strings.Join(args, " "), err, stderr.Bytes())
	}
	return d
}
