package bundle

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/pkg/crd"
)

// TestDecodedTellsInFileOrder: Options.Decoded is told of every CSV and
// CRD the Bundle holds, in its order (file-name order), whatever order
// the loader reads them in (larger files first), one call at a time;
// not of a document that fails to decode, nor of anything when the path
// is a CSV file.
func TestDecodedTellsInFileOrder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bundle")
	require.NoError(t, os.CopyFS(dir, os.DirFS(good)))
	crdText, err := os.ReadFile(filepath.Join(dir, "manifests/cool.operators.corp_cooloperators.yaml"))
	require.NoError(t, err)
	csvText, err := os.ReadFile(filepath.Join(dir, "manifests/cool-operator.clusterserviceversion.yaml"))
	require.NoError(t, err)
	write := func(name, text string, pad int) {
		t.Helper()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "manifests", name), []byte(text+"\n# "+strings.Repeat("x", pad)+"\n"), 0o644))
	}
	// Later names are larger, so that the loader reads them first.
	for i, name := range []string{"a_crd.yaml", "m_crd.yaml", "zz_crd.yaml"} {
		write(name, strings.Replace(string(crdText), "name: cooloperators.cool.operators.corp", fmt.Sprintf("name: cooloperators%d.cool.operators.corp", i), 1), (i+1)<<16)
	}
	write("0-second.clusterserviceversion.yaml", string(csvText), 1<<17)
	write("b_broken_crd.yaml", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec: {versions: 5}", 1<<18)

	for range 5 {
		var mu sync.Mutex
		calls, inCall := []string{}, false
		b, err := Load(dir, Options{Decoded: func(csv *CSV, c *crd.CRD) {
			mu.Lock()
			assert.False(t, inCall, "a call at a time")
			inCall = true
			mu.Unlock()
			switch {
			case csv != nil && c == nil:
				calls = append(calls, "csv "+csv.Doc.File)
			case c != nil && csv == nil:
				calls = append(calls, "crd "+c.Doc.File)
			default:
				t.Errorf("a call with csv %v and crd %v", csv, c)
			}
			mu.Lock()
			inCall = false
			mu.Unlock()
		}})
		require.NoError(t, err)
		var want []string
		csvs, crds := b.CSVs, b.CRDs
		for _, d := range b.Objects {
			switch {
			case len(csvs) > 0 && csvs[0].Doc == d:
				want, csvs = append(want, "csv "+d.File), csvs[1:]
			case len(crds) > 0 && crds[0].Doc == d:
				want, crds = append(want, "crd "+d.File), crds[1:]
			}
		}
		require.Len(t, want, 6, "two CSVs and four CRDs that decode")
		assert.Equal(t, want, calls)
	}

	told := 0
	_, err = Load(filepath.Join(dir, "manifests/cool-operator.clusterserviceversion.yaml"), Options{Decoded: func(*CSV, *crd.CRD) { told++ }})
	require.NoError(t, err)
	assert.Zero(t, told, "calls for a CSV file named as the path")
}
