package validate

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/operator-framework/api/pkg/manifests"
	apivalidation "github.com/operator-framework/api/pkg/validation"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/bundle"
)

// BenchmarkValidateCorpus loads and validates every corpus bundle, one
// after another, per iteration. ns/bundle is the figure to compare with
// BenchmarkAPIBaseline's.
func BenchmarkValidateCorpus(b *testing.B) {
	dirs := testutil.CorpusBundles(b)
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		for _, d := range dirs {
			res := Path(d, Options{}, bundle.Options{})
			if len(res.Errors) > 0 {
				b.Fatalf("%s: %v", d, res.Errors)
			}
		}
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N*len(dirs)), "ns/bundle")
}

// BenchmarkAPIBaseline is the anchor: operator-framework/api's loader plus
// its default bundle validators, over the same bundles.
func BenchmarkAPIBaseline(b *testing.B) {
	dirs := testutil.CorpusBundles(b)
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		for _, d := range dirs {
			bun, err := manifests.GetBundleFromDir(d)
			if err != nil {
				b.Fatalf("%s: %v", d, err)
			}
			_ = apivalidation.DefaultBundleValidators.Validate(bun.ObjectsToValidate()...)
		}
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N*len(dirs)), "ns/bundle")
}

// BenchmarkValidateCatalog3000 validates a generated file-based catalog of
// 3,000 bundles (statuscheck validate CATALOG_DIR) and reports the time
// per bundle and the peak heap in use.
func BenchmarkValidateCatalog3000(b *testing.B) {
	dir := b.TempDir()
	testutil.WriteCatalog(b, dir, 3000)
	var peak atomic.Uint64
	opts := Options{CatalogProgress: func(n int) {
		if n%100 == 0 {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
		}
	}}
	for b.Loop() {
		if got := len(Catalog(dir, opts)); got != 3000 {
			b.Fatalf("validated %d bundles", got)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(3000*b.N), "ns/bundle")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
}
