package validate

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/crd"
)

// TestProbeCacheRunsAKeyOnce: callers of a key whose probes are running
// wait for them and share their results; none runs them again.
func TestProbeCacheRunsAKeyOnce(t *testing.T) {
	cache := &ProbeCache{}
	want := &probeResults{requestKept: true}
	var runs atomic.Int32
	started, release := make(chan struct{}), make(chan struct{})
	run := func() *probeResults {
		if runs.Add(1) == 1 {
			close(started)
		}
		<-release
		return want
	}
	got := make([]*probeResults, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { got[i] = cache.do("key", run) })
	}
	<-started
	close(release)
	wg.Wait()
	assert.EqualValues(t, 1, runs.Load(), "runs of the probes")
	for i, r := range got {
		assert.Same(t, want, r, "caller %d", i)
	}
	assert.Same(t, want, cache.do("key", func() *probeResults { t.Error("ran again"); return nil }), "recalled after")
}

// TestPrefetchStartsTheProbesTheRulesRun: loading a bundle through
// pathResult's prefetch starts, before Load returns, the probes the rules
// then run (the one entry in the cache after the check), and only when
// the rules run probes; the results are those of a check without it.
func TestPrefetchStartsTheProbesTheRulesRun(t *testing.T) {
	root := testutil.RepoRoot()
	noInitResource := filepath.Join(t.TempDir(), "bundle")
	require.NoError(t, os.CopyFS(noInitResource, os.DirFS(filepath.Join(root, "testdata/bundles/rules/status-source-missing/fail"))))
	csvPath := filepath.Join(noInitResource, "manifests/cool-operator.clusterserviceversion.yaml")
	csv, err := os.ReadFile(csvPath)
	require.NoError(t, err)
	var kept []string
	for _, line := range strings.Split(string(csv), "\n") {
		if !strings.Contains(line, "operatorframework.io/initialization-resource") {
			kept = append(kept, line)
		}
	}
	require.NoError(t, os.WriteFile(csvPath, []byte(strings.Join(kept, "\n")), 0o644))

	for _, tc := range []struct {
		name    string
		dir     string
		probed  bool // the rules run probes, and the prefetch starts them
		decoded int  // CSVs and CRDs the loader tells of
	}{
		{name: "a declared source", dir: filepath.Join(root, "testdata/bundles/protected"), probed: true, decoded: 2},
		{name: "the initialization resource as a candidate", dir: filepath.Join(root, "testdata/bundles/rules/status-source-missing/fail"), probed: true, decoded: 2},
		{name: "a source whose CRD is not in the bundle", dir: filepath.Join(root, "testdata/bundles/rules/status-source-crd-missing/fail"), probed: false, decoded: 1},
		{name: "a source whose version is not served", dir: filepath.Join(root, "testdata/bundles/rules/status-source-version-not-served/fail"), probed: false, decoded: 2},
		{name: "neither a source nor an initialization resource", dir: noInitResource, probed: false, decoded: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := &ProbeCache{}
			p := &prefetch{opts: Options{Probes: cache}}
			var decoded atomic.Int32
			b, err := bundle.Load(tc.dir, bundle.Options{Decoded: func(csv *bundle.CSV, c *crd.CRD) {
				decoded.Add(1)
				p.decoded(csv, c)
			}})
			require.NoError(t, err)
			assert.EqualValues(t, tc.decoded, decoded.Load(), "CSVs and CRDs told of")
			cache.mu.Lock()
			early := len(cache.results)
			cache.mu.Unlock()
			got := Check(b, Options{Probes: cache})
			if tc.probed {
				assert.Equal(t, 1, early, "probes started while loading")
			} else {
				assert.Zero(t, early, "probes started while loading")
			}
			assert.Len(t, cache.results, early, "probes the rules ran besides the prefetched ones")

			fresh, err := bundle.Load(tc.dir, bundle.Options{})
			require.NoError(t, err)
			assert.Equal(t, Check(fresh, Options{}), got, "the results without a prefetch")
			assert.Equal(t, got, Path(tc.dir, Options{}, bundle.Options{}), "Path, which prefetches")
		})
	}
}

// TestPrefetchTakesWhatTheRulesTake: with two CSVs, or two CRDs of the
// source's kind, the prefetch starts the probes of the ones the rules
// take (the first by file name), whatever order the loader reads them
// in, or none when those have nothing to probe; a CSV file named as the
// path starts none while its directory loads.
func TestPrefetchTakesWhatTheRulesTake(t *testing.T) {
	protected := filepath.Join(testutil.RepoRoot(), "testdata/bundles/protected")
	copyWith := func(t *testing.T, files map[string]func(string) string) string {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "bundle")
		require.NoError(t, os.CopyFS(dir, os.DirFS(protected)))
		for name, edit := range files {
			from := filepath.Join(dir, "manifests", "cool-operator.clusterserviceversion.yaml")
			if strings.Contains(name, "crd") {
				from = filepath.Join(dir, "manifests", "cool.operators.corp_cooloperators.yaml")
			}
			data, err := os.ReadFile(from)
			require.NoError(t, err)
			edited := edit(string(data))
			require.NotEqual(t, string(data), edited, name)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "manifests", name), []byte(edited), 0o644))
		}
		return dir
	}
	noSource := func(csv string) string {
		var kept []string
		for _, line := range strings.Split(csv, "\n") {
			if !strings.Contains(line, "operatorframework.io/status-source") && !strings.Contains(line, "operatorframework.io/initialization-resource") {
				kept = append(kept, line)
			}
		}
		return strings.Join(kept, "\n")
	}
	notServed := func(crd string) string {
		return strings.Replace(strings.Replace(crd, "served: true", "served: false", -1), "name: cooloperators.cool.operators.corp", "name: cooloperators2.cool.operators.corp", 1)
	}
	// The padding makes the file the rules do not take the larger, which
	// the loader reads first.
	pad := func(edit func(string) string) func(string) string {
		return func(s string) string { return edit(s) + "\n# " + strings.Repeat("x", 64<<10) + "\n" }
	}
	for _, tc := range []struct {
		name   string
		dir    func(t *testing.T) string
		path   string // under dir, when not the directory
		probes int    // entries in the cache after Load, and after Check
	}{
		{name: "a CSV first by name that declares nothing", dir: func(t *testing.T) string {
			return copyWith(t, map[string]func(string) string{"0-csv.yaml": pad(noSource)})
		}, probes: 0},
		{name: "a CSV after the bundle's, larger", dir: func(t *testing.T) string {
			return copyWith(t, map[string]func(string) string{"zz-csv.yaml": pad(noSource)})
		}, probes: 1},
		{name: "a CRD of the kind first by name whose version is not served", dir: func(t *testing.T) string {
			return copyWith(t, map[string]func(string) string{"a_crd.yaml": pad(notServed)})
		}, probes: 0},
		{name: "a CRD of the kind after the bundle's, larger", dir: func(t *testing.T) string {
			return copyWith(t, map[string]func(string) string{"zz_crd.yaml": pad(notServed)})
		}, probes: 1},
		{name: "a CSV file named as the path", dir: func(t *testing.T) string {
			return copyWith(t, map[string]func(string) string{"0-csv.clusterserviceversion.yaml": noSource})
		}, path: "manifests/0-csv.clusterserviceversion.yaml", probes: 0},
		{name: "a CSV file named as the path, after a sibling that declares a source", dir: func(t *testing.T) string {
			return copyWith(t, map[string]func(string) string{"zz-csv.clusterserviceversion.yaml": noSource})
		}, path: "manifests/zz-csv.clusterserviceversion.yaml", probes: 0},
		{name: "CRDs of other kinds before and after the CSV", dir: func(t *testing.T) string {
			other := func(crd string) string {
				return strings.Replace(strings.Replace(crd, "cool.operators.corp", "other.operators.corp", -1), "kind: CoolOperator", "kind: OtherOperator", -1)
			}
			return copyWith(t, map[string]func(string) string{"a_crd.yaml": other, "zz_crd.yaml": other})
		}, probes: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.dir(t)
			path := dir
			if tc.path != "" {
				path = filepath.Join(dir, tc.path)
			}
			for range 5 { // the loader's order varies from run to run
				cache := &ProbeCache{}
				p := &prefetch{opts: Options{Probes: cache}}
				b, err := bundle.Load(path, bundle.Options{Decoded: p.decoded})
				require.NoError(t, err)
				cache.mu.Lock()
				early := len(cache.results)
				cache.mu.Unlock()
				got := Check(b, Options{Probes: cache})
				assert.Equal(t, tc.probes, early, "probes started while loading")
				assert.Len(t, cache.results, tc.probes, "probes after the check")

				fresh, err := bundle.Load(path, bundle.Options{})
				require.NoError(t, err)
				assert.Equal(t, Check(fresh, Options{}), got, "the results without a prefetch")
			}
		})
	}
}

// TestProbeCacheKeepsWhatRunsWhenFull: a full cache starts again, but
// keeps an entry still running, whose caller waits for it.
func TestProbeCacheKeepsWhatRunsWhenFull(t *testing.T) {
	cache := &ProbeCache{}
	running, fresh := cache.start("running")
	require.True(t, fresh)
	for i := range maxProbeCache + 1 {
		cache.do(fmt.Sprint("key", i), func() *probeResults { return &probeResults{} })
	}
	got, fresh := cache.start("running")
	assert.False(t, fresh, "the running entry kept")
	assert.Same(t, running, got)
	assert.Less(t, len(cache.results), maxProbeCache, "the ended entries dropped")
}

// TestProbeCacheForgetsARunThatPanicked: a run that panics leaves no
// result behind: the next caller runs the probes again.
func TestProbeCacheForgetsARunThatPanicked(t *testing.T) {
	cache := &ProbeCache{}
	assert.Panics(t, func() { cache.do("key", func() *probeResults { panic("probe") }) })
	want := &probeResults{}
	assert.Same(t, want, cache.do("key", func() *probeResults { return want }), "ran again")
}

// TestPathPrefetches: Path (and so Paths) loads through the prefetch:
// when the loader has told of the source's CRD, the probes are in the
// cache, before Load returns.
func TestPathPrefetches(t *testing.T) {
	cache := &ProbeCache{}
	var seen []int
	Path(filepath.Join(testutil.RepoRoot(), "testdata/bundles/protected"), Options{Probes: cache}, bundle.Options{Decoded: func(_ *bundle.CSV, c *crd.CRD) {
		if c != nil {
			cache.mu.Lock()
			seen = append(seen, len(cache.results))
			cache.mu.Unlock()
		}
	}})
	assert.Equal(t, []int{1}, seen, "probes in the cache when the CRD was told of")
}
