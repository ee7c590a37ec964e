package fbc

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/catalog"
)

func TestWalk(t *testing.T) {
	var mu sync.Mutex
	got := map[string]*bundle.Bundle{}
	stats, err := Walk(context.Background(), filepath.Join(testutil.RepoRoot(), "testdata/catalog"), func(path, name string, b *bundle.Bundle) error {
		mu.Lock()
		defer mu.Unlock()
		got[name] = b
		return nil
	}, nil)
	require.NoError(t, err)
	assert.Equal(t, catalog.Stats{Packages: 1, Channels: 1, Bundles: 3, WithObjects: 2}, stats)
	require.Contains(t, got, "cool-operator.v0.2.0")
	b := got["cool-operator.v0.2.0"]
	require.NotNil(t, b.CSV())
	assert.Equal(t, "cool-operator.v0.2.0", b.CSV().Obj.Name)
	require.Len(t, b.CRDs, 1)
	assert.Empty(t, b.Problems)
}

func TestWalkBadCatalogs(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "catalog.json"), []byte(`{"schema":"olm.bundle","name":"b","properties":[{"type":"olm.bundle.object","value":{"data":"not base64!"}}]}`), 0o644))
	var problems []bundle.Problem
	_, err := Walk(context.Background(), dir, func(path, name string, b *bundle.Bundle) error {
		problems = append(problems, b.Problems...)
		return nil
	}, nil)
	require.NoError(t, err)
	require.NotEmpty(t, problems)
	assert.Contains(t, problems[0].Pos.File, "catalog.json[b].olm.bundle.object[0]")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "catalog.json"), []byte(`{"schema":"olm.bundle", "name": [}`), 0o644))
	_, err = Walk(context.Background(), dir, func(string, string, *bundle.Bundle) error { return nil }, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "reading catalog "+filepath.Join(dir, "catalog.json")+": ")
	// A catalog given as one file is named once.
	file := filepath.Join(dir, "catalog.json")
	_, err = Walk(context.Background(), file, func(string, string, *bundle.Bundle) error { return nil }, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "reading catalog "+file+": ")
	assert.NotContains(t, err.Error(), file+"/")
}

// BenchmarkCatalog3000 streams a generated catalog of 3,000 bundles and
// reports the time per run and the peak heap in use.
func BenchmarkCatalog3000(b *testing.B) {
	dir := b.TempDir()
	testutil.WriteCatalog(b, dir, 3000)
	var peak atomic.Uint64
	for b.Loop() {
		var n atomic.Int64
		stats, err := Walk(context.Background(), dir, func(path, name string, bun *bundle.Bundle) error {
			if n.Add(1)%200 == 0 {
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
				}
			}
			return nil
		}, nil)
		require.NoError(b, err)
		require.Equal(b, 3000, stats.WithObjects)
	}
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
	b.ReportMetric(3000*float64(b.N)/b.Elapsed().Seconds(), "bundles/s")
}

// TestCatalogStreamsInBoundedMemory walks catalogs of 300 and 3,000
// bundles: ten times the bundles may not need much more heap.
func TestCatalogStreamsInBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 30 MB catalog")
	}
	peak := func(n int) uint64 {
		dir := t.TempDir()
		testutil.WriteCatalog(t, dir, n)
		var most atomic.Uint64
		var seen atomic.Int64
		_, err := Walk(context.Background(), dir, func(path, name string, b *bundle.Bundle) error {
			if seen.Add(1)%50 == 0 {
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				if ms.HeapAlloc > most.Load() {
					most.Store(ms.HeapAlloc)
				}
			}
			return nil
		}, nil)
		require.NoError(t, err)
		require.Equal(t, int64(n), seen.Load())
		return most.Load()
	}
	small, large := peak(300), peak(3000)
	t.Logf("heap: %d MiB for 300 bundles, %d MiB for 3,000", small>>20, large>>20)
	assert.Less(t, large, small+32<<20)
}
