package simulate

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/internal/jsonobj"
	"github.com/statuscheck/statuscheck/pkg/contract"
)

// TestFastPathAgreesWithTheApiserver holds the fast path (a spec or status
// write when no CRD is known) to what package apiserver, i.e. the
// apiextensions-apiserver's own strategy, answers for a CRD that keeps
// every field: after every one of thousands of random writes, with the
// status subresource on and off, both give the same generation, spec and
// status.
func TestFastPathAgreesWithTheApiserver(t *testing.T) {
	values := []interface{}{"a", "b", int64(1), int64(2), 0.5, true, nil, map[string]interface{}{"x": "y"}, map[string]interface{}{"x": nil}, []interface{}{"l"}}
	pick := func(r *rand.Rand) interface{} { return values[r.Intn(len(values))] }
	for _, sub := range []bool{true, false} {
		t.Run(fmt.Sprintf("status subresource %v", sub), func(t *testing.T) {
			cfg := benchConfig()
			cfg.StatusSubresource = sub
			res, err := cfg.crResource()
			require.NoError(t, err)
			r := rand.New(rand.NewSource(1))
			o := mustInitial(t, cfg, cr(1, map[string]interface{}{"storageLayer": "PostgreSQL"}, up("True", 1)), nil).CR
			for i := 0; i < 3000; i++ {
				var fast Object
				var want map[string]interface{}
				full := cfg.crFull(o)
				switch r.Intn(3) {
				case 0: // a spec write
					patch := map[string]interface{}{"spec": map[string]interface{}{fmt.Sprint("f", r.Intn(3)): pick(r)}}
					if r.Intn(5) == 0 {
						patch["extra"] = pick(r)
					}
					fast, _ = update(cfg, o, patch)
					out, deleted, rf := res.Update(full, jsonobj.MergePatch(full, patch))
					require.Nil(t, rf)
					require.False(t, deleted)
					want = out
				case 1: // status through the main resource
					patch := map[string]interface{}{"status": map[string]interface{}{"observedGeneration": int64(r.Intn(4))}}
					fast, _ = update(cfg, o, patch)
					out, _, rf := res.Update(full, jsonobj.MergePatch(full, patch))
					require.Nil(t, rf)
					want = out
				default: // the operator's status write
					status := up([]string{contract.StatusTrue, contract.StatusFalse}[r.Intn(2)], int64(r.Intn(5)))
					if r.Intn(4) == 0 {
						status = nil
					}
					fast = writeStatus(cfg, o, status)
					out, rf := res.UpdateStatus(full, status)
					require.Nil(t, rf)
					want = out
				}
				got := NewObject(want)
				require.Equal(t, got.Generation, fast.Generation, "step %d: generation", i)
				require.Equal(t, normalize(got.Body), normalize(fast.Body), "step %d: spec", i)
				require.Equal(t, normalize(got.Status), normalize(fast.Status), "step %d: status", i)
				o = fast
			}
		})
	}
}

// normalize treats an empty map as absent, as JSON would.
func normalize(m map[string]interface{}) map[string]interface{} {
	if len(m) == 0 {
		return nil
	}
	return m
}

func TestSyncOperatorConditionStatus(t *testing.T) {
	c := func(status string) map[string]interface{} {
		return map[string]interface{}{"type": "Upgradeable", "status": status, "reason": "R", "message": "", "lastTransitionTime": "2024-01-01T00:00:00Z"}
	}
	oc := func(gen int64, spec, status []interface{}) map[string]interface{} {
		return map[string]interface{}{"apiVersion": OperatorConditionAPIVersion, "kind": OperatorConditionKind, "metadata": map[string]interface{}{"name": "oc", "generation": gen},
			"spec": map[string]interface{}{"conditions": spec}, "status": map[string]interface{}{"conditions": status}}
	}
	withOG := func(m map[string]interface{}, og int64) map[string]interface{} {
		return jsonobj.MergePatch(m, map[string]interface{}{"observedGeneration": og})
	}
	tests := []struct {
		name    string
		in      map[string]interface{}
		changed bool
		want    []interface{}
	}{
		{name: "copies and stamps the generation", in: oc(2, []interface{}{c("False")}, nil), changed: true, want: []interface{}{withOG(c("False"), 2)}},
		{name: "skips what is in sync", in: oc(2, []interface{}{c("False")}, []interface{}{withOG(c("False"), 2)}), changed: false},
		{name: "restamps an old generation", in: oc(3, []interface{}{c("False")}, []interface{}{withOG(c("False"), 2)}), changed: true, want: []interface{}{withOG(c("False"), 3)}},
		{name: "keeps a type that left spec", in: oc(3, []interface{}{}, []interface{}{withOG(c("False"), 2)}), changed: false},
		{name: "the last of two entries wins", in: oc(2, []interface{}{c("True"), c("False")}, nil), changed: true, want: []interface{}{withOG(c("False"), 2)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, changed, err := SyncOperatorConditionStatus(tt.in, Epoch)
			require.NoError(t, err)
			assert.Equal(t, tt.changed, changed)
			if tt.changed {
				assert.Equal(t, tt.want, status["conditions"])
			}
		})
	}
}
