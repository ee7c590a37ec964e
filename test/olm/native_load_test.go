//go:build olmnative

package olm

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// elsewhere is how many CRs of the status source's kind TestNativeLoad
// makes beside it, in the CSV's own namespace and ten others, while the
// status-source informers run: with the status source, 10,001 objects of
// the kind, of which an informer must hold one.
const elsewhere = 10000

// TestNativeLoad is the apiserver load of the patched OLM's gate while it
// holds a replacement, and the cost of its status-source informer: v1 of
// the status-source bundle runs, the operator reports Upgradeable=False
// on the CR, v2 is held; for loadWindow nothing writes, and the
// apiserver's counters (load_test.go) say what every client asked of it.
//
// OLM syncs the held v2 many times in the window, and every sync of it
// runs the gate just after a GET of the CSV it replaces, so the window's
// GETs of clusterserviceversions count the gate's runs (load_test.go,
// report). Once its informer has synced, the gate reads the CR from the
// cache: the bound is no GET (nor LIST) of the CR in the window, against
// thousands of gate runs (a gate that read the apiserver would GET the CR
// once a run), and one WATCH, open throughout.
//
// The informer watches one object (a metadata.name field selector in the
// CSV's namespace), so neither its cache nor its events grow with the
// other CRs of the kind: once v2 is released and OLM is quiet, the test
// makes elsewhere CRs in the CSV's namespace (where only the field
// selector keeps them out) and in ten others, and requires that no watch
// event of the kind but the apiserver's periodic bookmarks reached any
// watcher (apiserver_watch_events_total), and logs the live heap across
// them.
func TestNativeLoad(t *testing.T) {
	w := newWorld(t, "none")
	w.running(false)
	gen := w.generation()
	w.reports(metav1.ConditionFalse, "Migrating", gen)

	w.installCSV(v2, "0.2.0", v1)
	w.waitHeld(v2, `"Upgradeable"="False": Migrating`)
	// The informer has synced once its WATCH is open (after the LIST, or
	// the watch-list's initial events); then a second for the gate to
	// have taken the cache path.
	w.waitUntil("the status-source informer's watch", 30*time.Second, func() bool {
		return openWatches(scrapeLoad(t, w.c).open, coolGVR.Resource) >= 1
	})
	// One informer per status source object: earlier tests' CSVs keep
	// theirs, so the count is not one; it must not move.
	time.Sleep(time.Second)

	s0 := scrapeLoad(t, w.c)
	time.Sleep(loadWindow)
	s1 := scrapeLoad(t, w.c)
	d := s1.since(s0)
	phase, reason, msg := w.csvMessage(v2)
	require.Equal(t, "Pending/OperatorConditionNotUpgradeable", phase+"/"+reason, "v2 held throughout: %s", msg)
	runs := d.count("clusterserviceversions", "", "GET")
	logLoad(t, d.report("native (patched OLM reads the CR)")...)

	assert.Positive(t, runs, "OLM ran the gate in the window (else the bound on GETs of the CR says nothing)")
	assert.Zero(t, d.count(coolGVR.Resource, "*", "GET"), "the gate reads the CR from its informer's cache: no GET of the CR in %s, over %g runs of the gate", d.window, runs)
	assert.Zero(t, d.count(coolGVR.Resource, "*", "LIST"), "no relist of the CR's kind")
	assert.Zero(t, d.count(coolGVR.Resource, "*", "WATCH"), "no watch of the CR's kind ended (and was opened again) in the window")
	b, a := d.openWatches(coolGVR.Resource)
	assert.Equal(t, b, a, "the watches of the CR's kind (one per status source object), open at the window's start and end")
	assert.GreaterOrEqual(t, a, float64(1), "this world's status source is watched")
	for _, r := range gateResources {
		for _, verb := range []string{"CREATE", "UPDATE", "PATCH", "DELETE"} {
			assert.Zero(t, d.count(r, "*", verb), "no %s of %s while v2 is held and nothing changes", verb, r)
		}
	}

	// The release, counted too: an Allow is read again from the
	// apiserver before OLM acts on it (olm/patches 0001), a GET or a few
	// (the queue may run the gate again before v2's new phase is in
	// OLM's cache). OLM is quiet again once v1 is gone.
	r0 := scrapeLoad(t, w.c)
	w.reports(metav1.ConditionTrue, "Idle", gen)
	w.waitUntil("v2 to leave Pending", 30*time.Second, func() bool {
		p, _, _ := w.csvMessage(v2)
		return p != "" && p != string(operatorsv1alpha1.CSVPhasePending)
	})
	r := scrapeLoad(t, w.c).since(r0)
	logLoad(t, fmt.Sprintf("load native (patched OLM reads the CR): the release (a fresh True until v2 leaves Pending, %s): GETs of the CR %g (one is the test's own read before its status write)",
		r.window.Round(time.Millisecond), r.count(coolGVR.Resource, "*", "GET")))
	w.waitCSV(v2, operatorsv1alpha1.CSVPhaseSucceeded, "")
	w.waitCSVGone(v1)

	// CRs of the kind elsewhere, in the status source's namespace too,
	// with the informer running: it watches one object, so none of their
	// events reaches it (nor any other status-source informer: each
	// watches its own object).
	if !csvQueueQuiet(t, w, 30*time.Second) {
		logLoad(t, "heap: OLM's CSV queue stays busy (a replacement of an earlier test is held): the heap is too noisy to measure")
	}
	h1 := liveHeap()
	events := scrapeLoad(t, w.c).watchEvents[coolGVR.Resource]
	begin := time.Now()
	nss := w.crsElsewhere("b", elsewhere)
	made := time.Since(begin)
	time.Sleep(2 * time.Second)
	h2 := liveHeap()
	after := scrapeLoad(t, w.c)
	got := after.watchEvents[coolGVR.Resource] - events
	// apiserver_watch_events_total counts every event a watcher is sent,
	// bookmarks too (k8s.io/apiserver pkg/endpoints/handlers/watch.go,
	// watchEventMetricsRecorder), and the watch cache sends each watcher
	// a bookmark about once a minute and one before its timeout
	// (pkg/storage/cacher/cache_watcher.go, nextBookmarkTime). So the
	// bound is the open watches' bookmarks; a watcher of the kind, or of
	// any one of the namespaces (the status source's among them), would
	// be sent at least 2*elsewhere/len(nss) events (each CR's create and
	// status update).
	watchers := openWatches(after.open, coolGVR.Resource)
	bookmarks := watchers * (2 + math.Ceil(time.Since(begin).Minutes()))
	require.Less(t, bookmarks, float64(2*elsewhere/len(nss)), "the bound must stay below what one watcher of a namespace is sent")
	assert.LessOrEqual(t, got, bookmarks, "no watch event of the %d CRs made elsewhere reached a watcher, only bookmarks (at most %g for %g watches): the status-source informers watch one object each", elsewhere, bookmarks, watchers)
	logLoad(t, fmt.Sprintf("heap: %d CRs of the kind made elsewhere in %s with the status-source informers running: %g watch events sent; live heap %.1f MiB before, %.1f MiB after (the apiserver's watch cache and etcd hold them in this process; the informers do not)",
		elsewhere, made.Round(time.Millisecond), got, mib(h1), mib(h2)))
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// crsElsewhere makes n CRs of the status source's kind, with an
// Upgradeable condition in their status as an operator writes it, spread
// over the world's namespace and ten new ones, and deletes them when the
// test ends. It returns the namespaces.
func (w *world) crsElsewhere(tag string, n int) []string {
	w.t.Helper()
	ctx := context.Background()
	nss := []string{w.ns}
	for i := 0; i < 10; i++ {
		ns, err := w.c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "load-" + tag + "-"}}, metav1.CreateOptions{})
		require.NoError(w.t, err)
		nss = append(nss, ns.Name)
	}
	w.t.Cleanup(func() {
		for _, ns := range nss {
			assert.NoError(w.t, w.c.Dyn.Resource(coolGVR).Namespace(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: loadLabel + "=" + tag}))
		}
	})
	jobs := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				errs <- w.crElsewhere(ctx, nss[i%len(nss)], fmt.Sprintf("cool-operator-%s-%d", tag, i), tag)
			}
		}()
	}
	for i := 0; i < n; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(w.t, err)
	}
	return nss
}

// loadLabel marks the CRs crsElsewhere makes, with its tag.
const loadLabel = "statuscheck.test/load"

func (w *world) crElsewhere(ctx context.Context, ns, name, tag string) error {
	return w.crReporting(ctx, coolGVR, "CoolOperator", ns, name, map[string]interface{}{loadLabel: tag}, "True", "Idle")
}
