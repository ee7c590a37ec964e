package conformance

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/simulate"
	"github.com/statuscheck/statuscheck/pkg/trace"
)

// memoTrace is rounds of a user's change of spec.storageLayer and the
// operator's False and True reports, each with a new lastTransitionTime,
// with every fifth round's report refused (a timestamp that is not one,
// a status outside the enum) and every seventh round's change too (a
// storage layer outside the enum).
func memoTrace(rounds int) string {
	var b strings.Builder
	b.WriteString(testutil.CoolTrace("memo-rounds", "{storageLayer: PostgreSQL}", ""))
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(i int) string { return start.Add(time.Duration(i) * time.Second).Format(time.RFC3339) }
	layer, gen := "PostgreSQL", 1
	for r := 0; r < rounds; r++ {
		next := map[string]string{"PostgreSQL": "MariaDB", "MariaDB": "PostgreSQL"}[layer]
		if r%7 == 6 {
			fmt.Fprintf(&b, "- {actor: user, update: {spec: {storageLayer: Oracle}}}\n")
		} else {
			layer = next
			gen++
			fmt.Fprintf(&b, "- {actor: user, update: {spec: {storageLayer: %s}}}\n", layer)
		}
		stamp, status := at(2*r+1), "False"
		switch r % 5 {
		case 3:
			stamp = "yesterday"
		case 4:
			status = "Maybe"
		}
		fmt.Fprintf(&b, "- {actor: operator, updateStatus: {observedGeneration: %d, conditions: [{type: Upgradeable, status: %q, reason: Migrating, message: migrating to %s, lastTransitionTime: %q, observedGeneration: %d}]}}\n", gen, status, layer, stamp, gen)
		fmt.Fprintf(&b, "- {actor: operator, updateStatus: {observedGeneration: %d, conditions: [{type: Upgradeable, status: \"True\", reason: OperatorIdle, message: %s is ready, lastTransitionTime: %q, observedGeneration: %d}]}}\n", gen, layer, at(2*r+2), gen)
		b.WriteString("- {actor: olm, check: {}}\n")
	}
	return b.String()
}

// TestMemoOnTheServer plays a trace whose writes recur at new
// generations with new timestamps, with a replay's memo in the model
// (simulate.NewReplayMemo, as Replay runs): the model's object after
// every step, and every refusal, are the real apiserver's, while the memo
// answers most writes instead of the apiextensions-apiserver's code.
func TestMemoOnTheServer(t *testing.T) {
	p := filepath.Join(t.TempDir(), "memo-rounds.yaml")
	require.NoError(t, os.WriteFile(p, []byte(memoTrace(30)), 0o644))
	tr, err := trace.Open(p, trace.OpenOptions{})
	require.NoError(t, err)
	defer tr.Close()
	cfg, _, err := simulate.NewConfig(nil, tr, contract.Policies(), contract.PolicyOLM)
	require.NoError(t, err)
	cfg.StatusSubresource = true
	memo := simulate.NewReplayMemo()
	cfg.Memo = memo
	play := newPlay(t, "memo-rounds", testutil.ReadCRD(t, goodCRD), cfg, tr.Initial, tr.OperatorCondition)
	steps := 0
	for i := 1; ; i++ {
		st, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		play.apply(i, st)
		steps++
	}
	require.Equal(t, 120, steps)
	assert.Zero(t, play.mismatches)
	// 90 writes, 16 of them refused (refusals are not reused); the first
	// rounds are computed.
	t.Logf("%d of 90 writes answered by the memo", memo.Hits())
	assert.Greater(t, memo.Hits(), 60)
}
