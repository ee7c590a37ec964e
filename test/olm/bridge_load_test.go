package olm

import (
	"fmt"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/prometheus/procfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/statuscheck/statuscheck/pkg/bridge"
	"github.com/statuscheck/statuscheck/pkg/bridge/controller"
)

// TestBridgeLoad is TestNativeLoad's measure (native_load_test.go) on
// unpatched OLM with `statuscheck bridge`, a process of its own, copying
// the CR's verdict into the OperatorCondition: v1 of the status-source
// bundle runs, the operator reports Upgradeable=False on the CR, the
// bridge writes False, OLM holds v2; for loadWindow nothing changes, and
// the apiserver's counters (load_test.go) say what every client asked of
// it. It runs with the bridge's default resync (10 s) and with the tier's
// (1 s), and releases v2 at the end (a held replacement keeps OLM's CSV
// queue busy: see load_test.go).
//
// The bounds: with no event in the window the bridge syncs once a resync,
// and a sync reads the OperatorCondition and the CR afresh (it cannot
// watch the OperatorCondition; controller.DefaultResync), so its GETs of each
// are its syncs (statuscheck_bridge_decisions_total), give or take a sync
// that straddles a scrape, and its syncs are at most window/resync plus
// one (fewer: the wait starts when a sync ends); it writes nothing while nothing changes; it keeps exactly one
// WATCH of the CR (field-selected to it) open and never relists.
func TestBridgeLoad(t *testing.T) {
	for _, resync := range []time.Duration{controller.DefaultResync, time.Second} {
		t.Run("resync "+resync.String(), func(t *testing.T) {
			w := newWorld(t, "none")
			w.running(false)
			p := w.bridgeProcess(w.c.Kubeconfig, "--bundle", w.bundle, "--resync", resync.String())
			w.waitOCSpec(v1, metav1.ConditionTrue, bridge.ReasonUpgradeable)
			gen := w.generation()
			w.reports(metav1.ConditionFalse, "Migrating", gen)
			w.waitOCSpec(v1, metav1.ConditionFalse, "Migrating")
			w.installHeld("Migrating")
			w.waitOCStatus(v1, metav1.ConditionFalse)
			time.Sleep(time.Second)

			const decisions = "statuscheck_bridge_decisions_total"
			d0, cpu0 := p.metric(decisions), processCPU(p.cmd.Process.Pid)
			s0 := scrapeLoad(t, w.c)
			time.Sleep(loadWindow)
			s1 := scrapeLoad(t, w.c)
			d1, cpu1 := p.metric(decisions), processCPU(p.cmd.Process.Pid)
			d := s1.since(s0)
			phase, reason := w.csvPhase(v2)
			require.Equal(t, "Pending/OperatorConditionNotUpgradeable", phase+"/"+reason, "v2 held throughout")
			syncs := d1 - d0
			label := "bridge (unpatched OLM, statuscheck bridge --resync " + resync.String() + ")"
			lines := d.report(label)
			lines = append(lines, fmt.Sprintf("load %s:   the bridge's syncs (statuscheck_bridge_decisions_total) %.1f/min (%g); the bridge process's CPU %s in the window%s",
				label, d.perMinute(syncs), syncs, (cpu1-cpu0).Round(time.Millisecond), rss(p.cmd.Process.Pid)))
			logLoad(t, lines...)

			perResync := d.window.Seconds() / resync.Seconds()
			assert.LessOrEqual(t, syncs, perResync+1, "the bridge syncs at most once a resync (%s) with no event", resync)
			assert.GreaterOrEqual(t, syncs, perResync/2-1, "the bridge keeps syncing, about once a resync (%s: the wait starts when a sync ends)", resync)
			assert.InDelta(t, syncs, d.count(coolGVR.Resource, "", "GET"), 1, "one GET of the CR a sync")
			assert.InDelta(t, syncs, d.count("operatorconditions", "", "GET"), 1, "one GET of the OperatorCondition a sync")
			assert.Zero(t, d.count(coolGVR.Resource, "*", "LIST"), "no LIST of the CR's kind")
			for _, r := range gateResources {
				for _, verb := range []string{"CREATE", "UPDATE", "PATCH", "DELETE"} {
					assert.Zero(t, d.count(r, "*", verb), "no %s of %s while v2 is held and nothing changes", verb, r)
				}
			}
			assert.Zero(t, d.count(coolGVR.Resource, "*", "WATCH"), "no watch of the CR's kind ended (and was opened again) in the window")
			b, a := d.openWatches(coolGVR.Resource)
			assert.Equal(t, []float64{1, 1}, []float64{b, a}, "exactly one watch of the CR's kind (the bridge's), open at the window's start and end")

			w.reports(metav1.ConditionTrue, "Idle", gen)
			w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
			w.waitCSVGone(v1)
		})
	}
}

// processCPU is a process's CPU time so far (0 when it cannot be read).
func processCPU(pid int) time.Duration {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0
	}
	st, err := p.Stat()
	if err != nil {
		return 0
	}
	return time.Duration(st.CPUTime() * float64(time.Second))
}

// rss is ", RSS N MiB" for a process, or "" when it cannot be read.
func rss(pid int) string {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return ""
	}
	st, err := p.Stat()
	if err != nil {
		return ""
	}
	return fmt.Sprintf(", RSS %d MiB at its end", st.ResidentMemory()>>20)
}
