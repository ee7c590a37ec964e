package explore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/bridgev0"
	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/bridge"
	"github.com/statuscheck/statuscheck/pkg/contract"
	"github.com/statuscheck/statuscheck/pkg/simulate"
	"github.com/statuscheck/statuscheck/pkg/source"
	"github.com/statuscheck/statuscheck/pkg/trace"
)

// Issue 25's defects as the model finds them. Each test runs the bridge
// before issue 25 (internal/bridgev0: its decision, and its request kept
// in its process) with the fault that broke it, and asserts a
// counterexample that replays, through simulate's replay of the written
// trace, to the same violation at the same step; the same model without
// the fault shows no such violation, so the fault is what exposes it; and
// statuscheck bridge's decision (bridge.Decide, bridge.Stopped) shows none
// at the default depth.
//
// Where a defect is a decision on a state the bridge has read, the model
// runs with SettledChecks: OLM checks only once the bridge has written
// what it decided and OLM's copy is in sync, which leaves out the lag
// every copy has (a change of the CR that OLM acts on before the bridge
// catches up; without a handshake that is the two-step unsafe-approval of
// the bridge table, and a revert or a new CR opens it under RequestAck
// too), so what is left is the decision itself. Without a handshake OLM's
// own race between its check and the replacement stays
// (upgrade-while-blocked, kind race): it is OLM's, not the bridge's.
//
// Outside the model, and why:
//   - A crash that leaves True (defect 6, the crash half): from the
//     cluster's side a crash is a restart (FaultRestart: what the process
//     held is gone, what it wrote stays); the True it leaves while no
//     process runs is a window bounded by the pod's restart, not a state
//     the model can tell from a slow bridge. No decision can close it;
//     docs/bridge.md gives its bounds.
//   - OLM's generator making a deleted OperatorCondition again, empty
//     (defect 6): the core models OLM's own create, but the window until
//     the bridge's next sync is again a propagation delay, the same lag.
//   - Defects 7 to 10 (the token's type without a CRD, withdrawal on the
//     CSV going, RBAC, operability) are not gate decisions on a state:
//     the model has one replacing CSV, which goes only with the upgrade,
//     and no RBAC or metrics.

// oldBridge is the bridge before issue 25: its decision, with the request
// its process remembered; its runner withdrew nothing on a stop.
func oldBridge() *Bridge { return &Bridge{Decide: bridgev0.Decide, Remembers: true} }

// defect is one defect of issue 25 as a model.
type defect struct {
	// bundle is under testdata/bundles.
	bundle string
	faults Faults
	// settled: OLM waits for the bridge (Options.SettledChecks).
	settled bool
	policy  contract.Policy
	// want is the violation the bridge before issue 25 shows; at says how
	// its counterexample shows the fault at work.
	want string
	at   func(t *testing.T, steps []Step)
	// without is the bundle to compare with when the defect is the
	// bundle's, not a fault's ("" means the same bundle without faults).
	without string
	// remains are the violations bridge.Decide may still show: OLM's
	// own race without a handshake, the liveness finding where the
	// upgrade is held for ever on purpose.
	remains []string
}

func (d defect) run(t *testing.T, bundle string, faults Faults, b *Bridge) (*Config, *Result) {
	t.Helper()
	dir := filepath.Join(testutil.RepoRoot(), "testdata", "bundles", bundle)
	ctx, err := source.FromBundle(dir)
	require.NoError(t, err)
	cfg := simulate.ContextConfig(ctx, []contract.Policy{d.policy}, d.policy)
	cfg.Bridge = true
	res, err := Run(context.Background(), cfg, Options{Depth: DefaultDepth, Faults: faults, SettledChecks: d.settled, Bridge: b})
	require.NoError(t, err)
	require.Equal(t, DefaultDepth, res.Depth)
	return cfg, res
}

// check runs the defect's three models.
func (d defect) check(t *testing.T) {
	t.Run("the bridge before issue 25", func(t *testing.T) {
		cfg, res := d.run(t, d.bundle, d.faults, oldBridge())
		c := counterexample(res, d.want)
		require.NotNil(t, c, "no %s; found %v", d.want, rules(res))
		if d.at != nil {
			d.at(t, c.Steps)
		}
		replays(t, filepath.Join(testutil.RepoRoot(), "testdata", "bundles", d.bundle), cfg, res, c)
	})
	t.Run("the same model without the fault", func(t *testing.T) {
		bundle := d.bundle
		if d.without != "" {
			bundle = d.without
		}
		_, res := d.run(t, bundle, 0, oldBridge())
		assert.Nil(t, counterexample(res, d.want), "the fault is what exposes it; found %v", rules(res))
	})
	t.Run("bridge.Decide", func(t *testing.T) {
		_, res := d.run(t, d.bundle, d.faults, nil)
		for _, c := range res.Counterexamples {
			assert.Contains(t, d.remains, c.Violation.Rule, "%s in %d steps: %s", c.Violation.Rule, len(c.Steps), c.Violation.Message)
			if c.Violation.Rule == simulate.RuleUpgradeWhileBlocked {
				assert.Equal(t, simulate.KindRace, c.Violation.Kind, "only OLM's race between its check and the replacement")
			}
		}
	})
}

func counterexample(res *Result, rule string) *Counterexample {
	for i := range res.Counterexamples {
		if res.Counterexamples[i].Violation.Rule == rule {
			return &res.Counterexamples[i]
		}
	}
	return nil
}

// replays writes c as a StatusTrace and replays it against the bundle: the
// same violation at the same step.
func replays(t *testing.T, dir string, cfg *Config, res *Result, c *Counterexample) {
	t.Helper()
	files, err := WriteCounterexamples(t.TempDir(), cfg, &Result{Policy: res.Policy, Initial: res.Initial, OperatorCondition: res.OperatorCondition, Change: res.Change, Counterexamples: []Counterexample{*c}})
	require.NoError(t, err)
	tr, err := trace.Open(files[0], trace.OpenOptions{})
	require.NoError(t, err)
	defer tr.Close()
	sctx, err := source.FromBundle(dir)
	require.NoError(t, err)
	rcfg, _, err := simulate.NewConfig(sctx, tr, []contract.Policy{res.Policy}, res.Policy)
	require.NoError(t, err)
	require.True(t, rcfg.Bridge, "the trace says the bridge writes the OperatorCondition")
	sum, err := simulate.Replay(tr, rcfg, nil)
	require.NoError(t, err)
	want := c.Violation
	for _, v := range sum.Violations {
		if v.Rule == want.Rule && v.Policy == want.Policy && v.Step == want.Step {
			return
		}
	}
	t.Errorf("the replay of %s shows no %s at step %d: %+v", files[0], want.Rule, want.Step, sum.Violations)
}

// stepsWhere are the indexes of the steps f holds for.
func stepsWhere(steps []Step, f func(Step) bool) []int {
	var out []int
	for i, st := range steps {
		if f(st) {
			out = append(out, i)
		}
	}
	return out
}

func isBridgeRequest(st Step) bool {
	return st.Actor == v1alpha1.ActorBridge && st.Verb == v1alpha1.VerbRequest
}

// requestTokens are the tokens of the bridge's requests in steps, as
// their patches write them.
func requestTokens(cfg *Config, steps []Step) []string {
	var out []string
	for _, i := range stepsWhere(steps, isBridgeRequest) {
		patch, _ := steps[i].Value["patch"].(map[string]interface{})
		o := simulate.NewObject(patch)
		token, _ := cfg.TokenOn(o)
		out = append(out, token)
	}
	return out
}

// TestExploreFindsDefect1UnknownIsCopied: a fresh Upgradeable=Unknown on
// the CR (HyperConverged on start-up) was copied as Unknown, which OLM's
// isOperatorUpgradeable lets through (it blocks only on False). Now it
// is False.
func TestExploreFindsDefect1UnknownIsCopied(t *testing.T) {
	testutil.Long(t)
	defect{bundle: "handshake/none", faults: FaultUnknown, settled: true, policy: contract.PolicyOLM,
		want: simulate.RuleUnsafeApproval,
		at: func(t *testing.T, steps []Step) {
			unknown := stepsWhere(steps, func(st Step) bool {
				return st.Actor == v1alpha1.ActorOperator && reportStatus(st.Value) == contract.StatusUnknown
			})
			require.Len(t, unknown, 1, "the operator reports Unknown")
			copied := stepsWhere(steps[unknown[0]:], func(st Step) bool {
				conds := ocConditions(simulate.NewObject(st.Value))
				return st.Actor == v1alpha1.ActorBridge && len(conds) == 1 && conds[0].(map[string]interface{})["status"] == contract.StatusUnknown
			})
			assert.Len(t, copied, 1, "and the bridge copies it")
		},
		remains: []string{simulate.RuleUpgradeWhileBlocked},
	}.check(t)
}

// TestExploreFindsDefect2PrunedRequest: a spec request the apiserver
// prunes (testdata/bundles/rules/handshake-path-missing/fail: its CRD has
// no .spec.upgradeToken) never moves the generation, so the operator's
// old True at the unchanged generation counted as the answer. Now such a
// request is never answered (ReasonNotObservable): the upgrade is held,
// which the model reports as never-upgradeable.
func TestExploreFindsDefect2PrunedRequest(t *testing.T) {
	testutil.Long(t)
	defect{bundle: "rules/handshake-path-missing/fail", policy: contract.PolicyOLM,
		want: simulate.RuleUnacknowledgedUpgrade,
		at: func(t *testing.T, steps []Step) {
			i := stepsWhere(steps, isBridgeRequest)
			require.NotEmpty(t, i)
			for _, st := range steps[i[0]:] {
				assert.NotEqual(t, v1alpha1.ActorOperator, st.Actor, "the True counted was made before the request")
			}
		},
		without: "handshake/request-spec",
		remains: []string{simulate.RuleNeverUpgradeable},
	}.check(t)
}

// TestExploreFindsDefect3RestartForgetsRequest: the request lived in the
// process; a restart made another, while the entry still said True for
// the first one's answer. Now the request is read back from the CR.
func TestExploreFindsDefect3RestartForgetsRequest(t *testing.T) {
	testutil.Long(t)
	defect{bundle: "handshake/request-spec", faults: FaultRestart, policy: contract.PolicyOLM,
		want: simulate.RuleUnsafeApproval,
		at:   twoRequests,
	}.check(t)
}

// TestExploreFindsDefect3Replicas: two replicas each wrote their own
// request, and one's True for its request stood while the other's was
// unanswered. Now there is one request per replacing CSV: a replica reads
// the other's from the CR, and a request from an older read conflicts.
func TestExploreFindsDefect3Replicas(t *testing.T) {
	testutil.Long(t)
	defect{bundle: "handshake/request-spec", faults: FaultReplica, policy: contract.PolicyOLM,
		want: simulate.RuleUnsafeApproval,
		at:   twoRequests,
	}.check(t)
}

// twoRequests: the counterexample holds two requests with two tokens.
func twoRequests(t *testing.T, steps []Step) {
	requests := stepsWhere(steps, isBridgeRequest)
	require.Len(t, requests, 2)
	a, _ := steps[requests[0]].Value["patch"].(map[string]interface{})
	b, _ := steps[requests[1]].Value["patch"].(map[string]interface{})
	assert.NotEqual(t, a, b)
}

// TestExploreFindsDefect3Revert: GitOps put the CR back (kubectl
// replace, a force-sync: the request's token and the bridge's record off
// it); the process still held its request, and the entry stayed
// True/UpgradeRequestAnswered. Now the request is read back from the CR:
// gone, so asked again, with a token past every one the CR has held,
// the echo in status included (a revert does not touch status), so that
// an old echo never answers the new request.
func TestExploreFindsDefect3Revert(t *testing.T) {
	testutil.Long(t)
	for _, bundle := range []string{"handshake/request-spec", "handshake/request-annotation-ack"} {
		t.Run(bundle, func(t *testing.T) {
			defect{bundle: bundle, faults: FaultRevert, settled: true, policy: contract.PolicyOLM,
				want: simulate.RuleUnacknowledgedUpgrade,
				at: func(t *testing.T, steps []Step) {
					assert.NotEmpty(t, stepsWhere(steps, func(st Step) bool { return st.Actor == v1alpha1.ActorAdmin }), "the revert")
				},
			}.check(t)
		})
	}
}

// TestExploreFindsDefect3Recreate: the CR deleted and made again from a
// copy; the process's request was for the old object, whose operator's
// True for a later generation then counted as the answer. Now a record
// with another UID is no request to the new CR.
func TestExploreFindsDefect3Recreate(t *testing.T) {
	testutil.Long(t)
	defect{bundle: "handshake/request-spec", faults: FaultRecreate, settled: true, policy: contract.PolicyOLM,
		want: simulate.RuleUnacknowledgedUpgrade,
		at: func(t *testing.T, steps []Step) {
			assert.NotEmpty(t, stepsWhere(steps, func(st Step) bool { return st.Verb == v1alpha1.VerbCreate }), "the CR made again")
		},
	}.check(t)
}

// TestExploreFindsDefect4SecondWriter: an operator that still writes its
// own OperatorCondition (operator-lib's conditions.Set) and the bridge
// overwrote each other. Now the bridge yields to the other writer (it
// keeps spec.conditions in managedFields) and writes nothing, so the
// property is that the bridge never overwrites it:
// operatorcondition-overwritten. The entry is then the operator's own, as
// before the bridge, with that flow's violations (the copy's lag; no
// request under RequestAck), which are the operator's: the bridge yields
// and says so.
func TestExploreFindsDefect4SecondWriter(t *testing.T) {
	testutil.Long(t)
	for _, bundle := range []string{"handshake/none", "handshake/request-spec"} {
		t.Run(bundle, func(t *testing.T) {
			defect{bundle: bundle, faults: FaultOtherWriter, policy: contract.PolicyOLM,
				want: simulate.RuleOperatorConditionOverwritten,
				at: func(t *testing.T, steps []Step) {
					last := steps[len(steps)-1]
					assert.Equal(t, v1alpha1.ActorBridge, last.Actor)
					assert.NotEmpty(t, stepsWhere(steps, func(st Step) bool {
						return st.Actor == v1alpha1.ActorOperator && st.Target == v1alpha1.TargetOperatorCondition
					}), "the operator's own write")
				},
				remains: []string{simulate.RuleUnsafeApproval, simulate.RuleUpgradeWhileBlocked, simulate.RuleUnacknowledgedUpgrade},
			}.check(t)
		})
	}
}

// TestExploreFindsDefect5DuplicateEntry: an admin appended a second
// Upgradeable entry (a copy of the bridge's: OLM's CRD gives
// spec.conditions no listType); the bridge set the first to False, and
// OLM's status copy let the last, True, win. Now the bridge folds the
// duplicates into its one entry: the admin's append leaves the first
// entry the one the bridge wrote (its digest), so the admin is no other
// writer of it, though its field manager owns the list.
func TestExploreFindsDefect5DuplicateEntry(t *testing.T) {
	testutil.Long(t)
	defect{bundle: "handshake/none", faults: FaultDuplicate, settled: true, policy: contract.PolicyOLM,
		want: simulate.RuleUnsafeApproval,
		at: func(t *testing.T, steps []Step) {
			dup := stepsWhere(steps, func(st Step) bool { return st.Actor == v1alpha1.ActorAdmin })
			require.Len(t, dup, 1)
			writes := stepsWhere(steps[dup[0]:], func(st Step) bool { return st.Actor == v1alpha1.ActorBridge })
			require.NotEmpty(t, writes, "the bridge writes after the append")
			conds := ocConditions(simulate.NewObject(steps[dup[0]+writes[0]].Value))
			require.Len(t, conds, 2, "both entries stay")
			first, _ := conds[0].(map[string]interface{})
			second, _ := conds[1].(map[string]interface{})
			assert.Equal(t, contract.StatusFalse, first["status"], "the bridge set the first")
			assert.Equal(t, contract.StatusTrue, second["status"], "OLM's copy takes the last")
		},
		remains: []string{simulate.RuleUpgradeWhileBlocked},
	}.check(t)
	t.Run("bridge.Decide writes one entry", func(t *testing.T) {
		d := defect{bundle: "handshake/none", faults: FaultDuplicate, policy: contract.PolicyOLM}
		_, res := d.run(t, d.bundle, d.faults, nil)
		require.NotEmpty(t, res.Counterexamples, "the lag window, without SettledChecks")
		for _, c := range res.Counterexamples {
			for _, st := range c.Steps {
				if st.Actor == v1alpha1.ActorBridge {
					assert.Len(t, upgradeableEntries(ocConditions(simulate.NewObject(st.Value))), 1)
				}
			}
		}
	})
}

// TestExploreFindsDefect6Stop: a stopped bridge left its True, and a spec
// change later OLM approved on it. Now a graceful stop withdraws it
// (bridge.Stopped).
func TestExploreFindsDefect6Stop(t *testing.T) {
	testutil.Long(t)
	defect{bundle: "handshake/none", faults: FaultStop, settled: true, policy: contract.PolicyOLM,
		want:    simulate.RuleUnsafeApproval,
		remains: []string{simulate.RuleUpgradeWhileBlocked},
	}.check(t)

}

// TestBridgeStop is the stop fault's move: the runner's graceful stop
// writes bridge.Stopped's False over a True, except under RequestAck
// while a CSV replaces the running one; the bridge before issue 25 wrote
// nothing.
func TestBridgeStop(t *testing.T) {
	tests := []struct {
		name      string
		bundle    string
		bridge    *Bridge
		replacing bool
		// want is the reason the stop writes, "" for nothing.
		want string
	}{
		{name: "a True withdrawn", bundle: "none", want: bridge.ReasonStopped},
		{name: "a True withdrawn under RequestAck", bundle: "request-spec", want: bridge.ReasonStopped},
		{name: "under RequestAck while a CSV replaces the running one", bundle: "request-spec", replacing: true},
		{name: "the bridge before issue 25", bundle: "none", bridge: oldBridge()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, err := source.FromBundle(handshakeBundle(tt.bundle))
			require.NoError(t, err)
			cfg := simulate.ContextConfig(ctx, []contract.Policy{contract.PolicyOLM}, contract.PolicyOLM)
			cfg.Bridge = true
			m := newModel(cfg, Options{Faults: FaultStop, Bridge: tt.bridge})
			cr, oc, _, err := m.start(nil)
			require.NoError(t, err)
			// The entry True, whatever the handshake.
			oc["spec"] = map[string]interface{}{"conditions": []interface{}{condition(contract.ConditionUpgradeable, contract.StatusTrue)}}
			s, err := simulate.Initial(cfg, cr, oc)
			require.NoError(t, err)
			mv := m.stop(&s, &actors{replacing: tt.replacing})
			if tt.want == "" {
				assert.Equal(t, moveStop, mv.kind)
				assert.Empty(t, mv.steps(), "nothing written")
				return
			}
			require.Equal(t, moveStopWrite, mv.kind)
			conds := ocConditions(simulate.NewObject(mv.st.Value))
			require.Len(t, conds, 1)
			c, _ := conds[0].(map[string]interface{})
			assert.Equal(t, contract.StatusFalse, c["status"])
			assert.Equal(t, tt.want, c["reason"])
			assert.Equal(t, bridge.FieldManager, mv.st.Who)
		})
	}
}

// TestBridgeRequestMove: the bridge's request move writes exactly its
// decision's merge patch through the core (the token and the record on
// the CR after it); a second replica that read the same CR has its
// request voided by the first one's write (the resourceVersion
// precondition), and reading again it finds the request standing and
// writes none: one request for two replicas.
func TestBridgeRequestMove(t *testing.T) {
	ctx, err := source.FromBundle(handshakeBundle("request-spec"))
	require.NoError(t, err)
	cfg := simulate.ContextConfig(ctx, []contract.Policy{contract.PolicyOLM}, contract.PolicyOLM)
	cfg.Bridge = true
	m := newModel(cfg, Options{Depth: DefaultDepth, MaxUserChanges: DefaultDepth, Faults: FaultReplica})
	cr, oc, change, err := m.start(nil)
	require.NoError(t, err)
	m.change = change
	s, err := simulate.Initial(cfg, cr, oc)
	require.NoError(t, err)
	n := node{state: s, act: actors{observed: 1, truthTrue: true}}
	take := func(kind moveKind, replica int8) {
		t.Helper()
		for _, mv := range m.moves(&n, nil) {
			if mv.kind == kind && mv.replica == replica {
				n, _, err = m.apply(&n, mv)
				require.NoError(t, err)
				return
			}
		}
		t.Fatalf("no move %d of replica %d", kind, replica)
	}
	take(moveReplacement, 0)
	take(moveRead, 0)
	take(moveRead, 1)
	want := n.act.replica(0).request
	require.NotNil(t, want)
	require.NotNil(t, n.act.replica(1).request, "both read the same CR")
	for _, mv := range m.moves(&n, nil) {
		if mv.kind == moveBridgeRequest && mv.replica == 0 {
			assert.Equal(t, want.Patch, mv.st.Value["patch"], "the decision's patch, as it is")
		}
	}
	take(moveBridgeRequest, 0)
	assert.Equal(t, &want.Record, bridge.RecordOf(&unstructured.Unstructured{Object: n.state.CR.Full(cfg.Source.APIVersion, cfg.Source.Kind)}))
	token, ok := cfg.TokenOn(n.state.CR)
	assert.True(t, ok)
	assert.Equal(t, "1", token)
	assert.True(t, n.state.Requested)
	other := n.act.replica(1)
	assert.Nil(t, other.request, "the second replica's request conflicts")
	assert.Nil(t, other.write, "and its sync with it")
	assert.NotNil(t, n.act.replica(0).write, "the first goes on to the OperatorCondition")
	d := m.decide(&n.state, &n.act, 1)
	assert.Nil(t, d.Request, "read again, the request stands")
	assert.Equal(t, bridge.ReasonUnanswered, d.Condition.Reason)
}
