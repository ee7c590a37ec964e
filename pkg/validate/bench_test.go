package validate

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/operator-framework/api/pkg/manifests"
	apivalidation "github.com/operator-framework/api/pkg/validation"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/catalog/fbc"
	"github.com/statuscheck/statuscheck/pkg/contract"
)

// BenchmarkValidateCorpus loads and validates every corpus bundle, one
// after another, per iteration. ns/bundle is the figure to compare with
// BenchmarkAPIBaseline's.
func BenchmarkValidateCorpus(b *testing.B) {
	dirs := testutil.CorpusBundles(b)
	b.ReportAllocs()
	// One probe cache for the run, as statuscheck validate has.
	opts := Options{Probes: &ProbeCache{}}
	start := time.Now()
	for b.Loop() {
		for _, d := range dirs {
			res := Path(d, opts, bundle.Options{})
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
	progress := func(n int) {
		if n%100 == 0 {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
		}
	}
	for b.Loop() {
		if got := len(Catalog(dir, Options{Probes: &ProbeCache{}, Catalogs: fbc.Walk}, progress)); got != 3000 {
			b.Fatalf("validated %d bundles", got)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(3000*b.N), "ns/bundle")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
}

// BenchmarkProbes measures what the apiserver probes cost: the rules run
// over the corpus bundles whose initialization resource is an owned CR,
// with the status source adopted as generate writes it, once with the
// probe cache cleared before every bundle (cold: the CRD validated, the
// Resource built, its CEL compiled, the probes run) and once without an
// annotation (no probes). The difference is the probes' cost per bundle.
func BenchmarkProbes(b *testing.B) {
	dirs := testutil.CorpusBundles(b)
	var adopted []*bundle.Bundle
	for _, d := range dirs {
		bun, err := bundle.Load(d, bundle.Options{})
		if err != nil || bun.CSV() == nil {
			continue
		}
		raw, ok := bun.CSV().Obj.Annotations[v1alpha1.InitializationResourceKey]
		if !ok {
			continue
		}
		ir, err := contract.ParseObjectRef(raw)
		if err != nil || !bundle.Owns(bun.CSV().Obj, ir.Group, ir.Kind) {
			continue
		}
		src := &v1alpha1.StatusSource{APIVersion: ir.Group + "/" + ir.Version, Kind: ir.Kind, Name: ir.Name}
		bun.CSV().Obj.Annotations[v1alpha1.AnnotationKey] = src.Marshal()
		adopted = append(adopted, bun)
	}
	run := func(b *testing.B, annotated, cold bool) {
		for _, bun := range adopted {
			if !annotated {
				delete(bun.CSV().Obj.Annotations, v1alpha1.AnnotationKey)
			}
		}
		cache := &ProbeCache{}
		start := time.Now()
		for b.Loop() {
			for _, bun := range adopted {
				if cold {
					cache = &ProbeCache{}
				}
				Check(bun, Options{Probes: cache})
			}
		}
		b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N*len(adopted)), "ns/bundle")
	}
	b.Run("probes-cold", func(b *testing.B) { run(b, true, true) })
	b.Run("probes-cached", func(b *testing.B) { run(b, true, false) })
	b.Run("no-status-source", func(b *testing.B) { run(b, false, false) })
}
