package conformance

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/explore"
	"github.com/statuscheck/statuscheck/pkg/simulate"
	"github.com/statuscheck/statuscheck/pkg/source"
	"github.com/statuscheck/statuscheck/pkg/trace"
)

const (
	goodCRD     = "testdata/bundles/good/manifests/cool.operators.corp_cooloperators.yaml"
	noSubCRD    = "testdata/traces/crds/cooloperators-no-status-subresource.yaml"
	defaultsCRD = "testdata/traces/crds/cooloperators-defaults.yaml"
)

// traceCRDs says which CRD each native trace under testdata/traces is
// replayed against, as the goldens and fidelity tests replay it ("" for
// none: then the CRD simulate assumes, one that keeps every field).
// TestEveryTraceIsPlayed keeps it complete.
var traceCRDs = map[string]string{
	"admin-override.yaml":                                "",
	"duplicate-conditions.yaml":                          "",
	"future-observed-generation.yaml":                    "",
	"handshake-annotation-ack.yaml":                      goodCRD,
	"handshake-annotation-no-ack.yaml":                   goodCRD,
	"handshake-lock-broken.yaml":                         goodCRD,
	"handshake-operatorcondition.yaml":                   goodCRD,
	"handshake-request-spec.yaml":                        goodCRD,
	"race-check-then-upgrade.yaml":                       goodCRD,
	"recorded-empty-operatorcondition.yaml":              goodCRD,
	"seed.yaml":                                          goodCRD,
	"fidelity/1-future-observed-generation-blocks.yaml":  goodCRD,
	"fidelity/2-operatorcondition-sync-keeps-types.yaml": goodCRD,
	"fidelity/2-operatorcondition-sync-last-wins.yaml":   goodCRD,
	"fidelity/3-upgrade-replaces-operatorcondition.yaml": goodCRD,
	"fidelity/4-delete-bumps-once.yaml":                  goodCRD,
	"fidelity/4-orphan-marks-deleting.yaml":              goodCRD,
	"fidelity/5-pruned-and-defaulted-writes.yaml":        defaultsCRD,
	"fidelity/6-refused-writes-change-nothing.yaml":      goodCRD,
}

// notPlayable are native traces that are not a story the server can play.
var notPlayable = map[string]string{
	"status-write-before-create.yaml": "an invalid trace (a status write before the CR exists): simulate refuses it",
}

func nativeTraces(t *testing.T) []string {
	root := filepath.Join(testutil.RepoRoot(), "testdata", "traces")
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".yaml" || strings.HasPrefix(p, filepath.Join(root, "crds")) {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(data), "kind: StatusTrace") {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	require.NoError(t, err)
	sort.Strings(out)
	return out
}

func TestEveryTraceIsPlayed(t *testing.T) {
	for _, rel := range nativeTraces(t) {
		_, listed := traceCRDs[rel]
		_, excused := notPlayable[rel]
		assert.True(t, listed || excused, "testdata/traces/%s is neither in traceCRDs nor in notPlayable", rel)
	}
}

// TestTracesOnTheServer plays every native trace on the real apiserver
// under all three policies.
func TestTracesOnTheServer(t *testing.T) {
	for _, rel := range nativeTraces(t) {
		crdPath, ok := traceCRDs[rel]
		if !ok {
			continue
		}
		t.Run(rel, func(t *testing.T) {
			t.Parallel()
			tr, err := trace.Open(filepath.Join(testutil.RepoRoot(), "testdata", "traces", rel), trace.OpenOptions{})
			require.NoError(t, err)
			defer tr.Close()
			cfg, _, err := simulate.NewConfig(nil, tr, contract.Policies(), contract.PolicyOLM)
			require.NoError(t, err)
			var crd *apiextv1.CustomResourceDefinition
			if crdPath != "" {
				crd = testutil.ReadCRD(t, crdPath)
				cfg.StatusSubresource = crd.Spec.Versions[0].Subresources != nil && crd.Spec.Versions[0].Subresources.Status != nil
			}
			p := newPlay(t, rel, crd, cfg, tr.Initial, tr.OperatorCondition)
			for i := 1; ; i++ {
				st, err := tr.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				require.NoError(t, err)
				p.apply(i, st)
			}
		})
	}
}

// TestCounterexamplesOnTheServer plays every counterexample --explore
// finds for the handshake bundles, under each policy.
func TestCounterexamplesOnTheServer(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(testutil.RepoRoot(), "testdata/bundles/handshake/*/manifests"))
	require.NoError(t, err)
	var played atomic.Int32
	t.Cleanup(func() { assert.GreaterOrEqual(t, int(played.Load()), 10, "counterexamples played") })
	for _, d := range dirs {
		bundle := filepath.Dir(d)
		sctx, err := source.FromBundle(bundle)
		require.NoError(t, err)
		crd := testutil.ReadCRD(t, filepath.Join("testdata/bundles/handshake", filepath.Base(bundle), "manifests/cool.operators.corp_cooloperators.yaml"))
		for _, pol := range contract.Policies() {
			cfg := &simulate.Config{Source: sctx.Source, StatusSubresource: *sctx.StatusSubresource, CR: sctx.Resource, Policies: []contract.Policy{pol}, Primary: pol}
			res, err := explore.Run(context.Background(), cfg, explore.Options{Depth: explore.DefaultDepth})
			require.NoError(t, err)
			for _, c := range res.Counterexamples {
				name := filepath.Base(bundle) + "/" + string(pol) + "/" + c.Violation.Rule
				t.Run(name, func(t *testing.T) {
					played.Add(1)
					t.Parallel()
					pcfg := &simulate.Config{Source: sctx.Source, StatusSubresource: *sctx.StatusSubresource, Policies: contract.Policies(), Primary: pol}
					p := newPlay(t, name, crd, pcfg, res.Initial, res.OperatorCondition)
					for i, st := range c.Steps {
						p.apply(i+1, st)
					}
				})
			}
		}
	}
}
