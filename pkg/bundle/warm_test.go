package bundle

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWarmDecodersDecodeAsTheLoader: the warm-up's documents reach the
// loader's decoders (a CSV, a v1 CRD, a v1beta1 CRD converted to v1), not
// an early refusal, so the caches it builds are theirs.
func TestWarmDecodersDecodeAsTheLoader(t *testing.T) {
	docs := warmDocuments()
	require.Len(t, docs, 3)
	var csvs, crds int
	for _, d := range docs {
		r := decodeObject(d)
		assert.Empty(t, r.problems, "%v", d.Object())
		if r.csv != nil {
			csvs++
		}
		if r.crd != nil {
			require.NotNil(t, r.crd.V1, "converted to v1")
			crds++
		}
	}
	assert.Equal(t, 1, csvs)
	assert.Equal(t, 2, crds)
	WarmDecoders()
}
