package validate

import (
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
