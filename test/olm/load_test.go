package olm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The apiserver load of a gate that holds a replacement (native_load_test.go,
// the patched OLM reading the CR; bridge_load_test.go, unpatched OLM and
// `statuscheck bridge`): the kube-apiserver's own counters, read at its
// /metrics before and after a window in which nothing but the gate's
// machinery runs. They are server-side, so they count every client's
// requests: OLM's (in this process), the bridge's (a process of its own),
// the deployment stand-in's and the test's. The tier's apiserver, etcd and
// OLM share this process and so one set of metrics registries: the
// apiserver's /metrics (component-base's legacy registry) also carries the
// workqueue metrics of OLM's own queues, and controller-runtime's registry
// those of the OperatorCondition controllers.
//
// STATUSCHECK_LOAD_REPORT=FILE appends each test's figures to FILE as
// well as logging them, so that runs of the two tiers (make
// olm-native-test; go test in test/olm) can be put side by side.

// loadWindow is how long the load tests hold the replacement while they
// count.
const loadWindow = 20 * time.Second

// reqKey is a series of apiserver_request_total (or of
// apiserver_longrunning_requests) with the labels kept here.
type reqKey struct{ group, resource, subresource, verb string }

func (k reqKey) name() string {
	if k.subresource != "" {
		return k.resource + "/" + k.subresource
	}
	return k.resource
}

// loadSample is a reading of the counters.
type loadSample struct {
	at time.Time
	// requests is apiserver_request_total summed over the labels reqKey
	// leaves out (version, scope, component, code, dry_run). A WATCH is
	// counted when it ends.
	requests map[reqKey]float64
	// open is apiserver_longrunning_requests: the watches open now.
	open map[reqKey]float64
	// watchEvents is apiserver_watch_events_total by resource: the events
	// the apiserver sent to watchers.
	watchEvents map[string]float64
	// processed is, by queue name, the number of items a worker took from
	// the queue and finished (workqueue_work_duration_seconds' count):
	// OLM's "/csv" queue (one queue for all namespaces) counts its CSV
	// syncs.
	processed map[string]float64
	// reconciles is controller_runtime_reconcile_total by controller.
	reconciles map[string]float64
	// cpu is this process's CPU time: the apiserver's, etcd's, OLM's and
	// the test's together.
	cpu time.Duration
}

// scrapeLoad reads the apiserver's /metrics (as the tier's superuser) and
// controller-runtime's registry.
func scrapeLoad(t testing.TB, c *Cluster) loadSample {
	t.Helper()
	s := loadSample{requests: map[reqKey]float64{}, open: map[reqKey]float64{}, watchEvents: map[string]float64{},
		processed: map[string]float64{}, reconciles: map[string]float64{}}
	raw, err := c.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("reading the apiserver's /metrics: %v", err)
	}
	s.at = time.Now()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("parsing the apiserver's /metrics: %v", err)
	}
	gathered, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering controller-runtime's metrics: %v", err)
	}
	all := make([]*dto.MetricFamily, 0, len(fams)+len(gathered))
	for _, f := range fams {
		all = append(all, f)
	}
	all = append(all, gathered...)
	for _, f := range all {
		for _, m := range f.GetMetric() {
			l := labelsOf(m)
			key := reqKey{group: l["group"], resource: l["resource"], subresource: l["subresource"], verb: l["verb"]}
			switch f.GetName() {
			case "apiserver_request_total":
				s.requests[key] += m.GetCounter().GetValue()
			case "apiserver_longrunning_requests":
				s.open[key] += m.GetGauge().GetValue()
			case "apiserver_watch_events_total":
				s.watchEvents[l["resource"]] += m.GetCounter().GetValue()
			case "workqueue_work_duration_seconds":
				s.processed[l["name"]] += float64(m.GetHistogram().GetSampleCount())
			case "controller_runtime_reconcile_total":
				s.reconciles[l["controller"]] += m.GetCounter().GetValue()
			}
		}
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		s.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return s
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, p := range m.GetLabel() {
		out[p.GetName()] = p.GetValue()
	}
	return out
}

// loadDelta is what happened between two samples.
type loadDelta struct {
	window                time.Duration
	requests              map[reqKey]float64
	openBefore, openAfter map[reqKey]float64
	watchEvents           map[string]float64
	processed             map[string]float64
	reconciles            map[string]float64
	cpu                   time.Duration
}

func (after loadSample) since(before loadSample) loadDelta {
	sub := func(a, b map[string]float64) map[string]float64 {
		out := map[string]float64{}
		for k, v := range a {
			if d := v - b[k]; d != 0 {
				out[k] = d
			}
		}
		return out
	}
	d := loadDelta{window: after.at.Sub(before.at), requests: map[reqKey]float64{}, openBefore: before.open, openAfter: after.open,
		watchEvents: sub(after.watchEvents, before.watchEvents), processed: sub(after.processed, before.processed),
		reconciles: sub(after.reconciles, before.reconciles), cpu: after.cpu - before.cpu}
	for k, v := range after.requests {
		if n := v - before.requests[k]; n != 0 {
			d.requests[k] = n
		}
	}
	return d
}

// count is the number of requests of a verb on a resource (subresources
// included when sub is "*") in the window.
func (d loadDelta) count(resource, sub, verb string) float64 {
	var n float64
	for k, v := range d.requests {
		if k.resource == resource && k.verb == verb && (sub == "*" || k.subresource == sub) {
			n += v
		}
	}
	return n
}

// openWatches is the number of watches of a resource open at the
// window's start and end.
func (d loadDelta) openWatches(resource string) (before, after float64) {
	return openWatches(d.openBefore, resource), openWatches(d.openAfter, resource)
}

// openWatches is the number of watches of a resource open in a sample's
// apiserver_longrunning_requests.
func openWatches(open map[reqKey]float64, resource string) float64 {
	var n float64
	for k, v := range open {
		if k.resource == resource && k.subresource == "" && k.verb == "WATCH" {
			n += v
		}
	}
	return n
}

func (d loadDelta) perMinute(n float64) float64 { return n / d.window.Minutes() }

// gateResources are the resources whose load the comparison reports.
var gateResources = []string{"cooloperators", "operatorconditions", "clusterserviceversions"}

// report is the window's figures as lines: requests per verb for the gate's
// resources (requests/min), the watches open on them, the watch events
// sent, the requests on every other resource, OLM's CSV syncs and
// OperatorCondition reconciles, and the runs of OLM's gate.
//
// While a replacement is held, OLM v0.46.0 syncs its CSVs in a loop: the
// replaced CSV, Replacing, requeues itself and its replacement at once on
// every sync while the replacement has not succeeded (transitionCSVState,
// case CSVPhaseReplacing; queue.Add, no rate limit), so the CSV queue
// runs flat out, mostly on the replaced CSV (its sync reads only
// listers). Each sync of the held replacement (Pending) runs the gate
// once, just after a GET of the CSV it replaces from the apiserver
// (pkg/lib/csv, replace.IsReplacing: "using the client instead of a
// lister"): the window's GETs of clusterserviceversions are the gate's
// runs (no other client GETs a CSV in the window).
func (d loadDelta) report(label string) []string {
	lines := []string{fmt.Sprintf("load %s: %s window; requests/min (count) by resource and verb, all clients, from the apiserver's apiserver_request_total", label, d.window.Round(time.Millisecond))}
	var keys []reqKey
	for k := range d.requests {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].name() != keys[j].name() {
			return keys[i].name() < keys[j].name()
		}
		return keys[i].verb < keys[j].verb
	})
	for _, r := range gateResources {
		var parts []string
		for _, k := range keys {
			if k.resource == r {
				parts = append(parts, fmt.Sprintf("%s %s %.1f (%g)", k.name(), k.verb, d.perMinute(d.requests[k]), d.requests[k]))
			}
		}
		if len(parts) == 0 {
			parts = []string{"none"}
		}
		before, after := d.openWatches(r)
		lines = append(lines, fmt.Sprintf("load %s:   %-22s %s; watches open %g at the start, %g at the end; watch events sent %g",
			label, r, strings.Join(parts, ", "), before, after, d.watchEvents[r]))
	}
	var others []string
	for _, k := range keys {
		if !slices.Contains(gateResources, k.resource) {
			name := k.name()
			if k.resource == "" {
				name = "(non-resource " + k.subresource + ")"
			}
			others = append(others, fmt.Sprintf("%s %s %.1f (%g)", name, k.verb, d.perMinute(d.requests[k]), d.requests[k]))
		}
	}
	lines = append(lines, fmt.Sprintf("load %s:   other requests (deployments LIST: the tier's deployment stand-in, testutil.DeploymentStandIn): %s", label, strings.Join(others, ", ")))
	var queues []string
	for _, name := range sortedKeys(d.processed) {
		queues = append(queues, fmt.Sprintf("%s %.1f (%g)", name, d.perMinute(d.processed[name]), d.processed[name]))
	}
	recs := []string{"none"}
	for i, name := range sortedKeys(d.reconciles) {
		if i == 0 {
			recs = nil
		}
		recs = append(recs, fmt.Sprintf("%s %.1f (%g)", name, d.perMinute(d.reconciles[name]), d.reconciles[name]))
	}
	lines = append(lines, fmt.Sprintf("load %s:   OLM's CSV syncs (queue /csv) %.1f/min (%g); items processed by queue: %s; controller-runtime reconciles: %s",
		label, d.perMinute(d.processed["/csv"]), d.processed["/csv"], strings.Join(queues, ", "), strings.Join(recs, ", ")))
	runs := d.count("clusterserviceversions", "", "GET")
	lines = append(lines, fmt.Sprintf("load %s:   OLM's gate runs (syncs of the held replacement: each GETs the CSV it replaces) %.1f/min (%g); GETs of the CR per run %.4f",
		label, d.perMinute(runs), runs, d.count("cooloperators", "*", "GET")/max(runs, 1)))
	lines = append(lines, fmt.Sprintf("load %s:   CPU of the test process (apiserver, etcd, OLM, test) %s in the window, %.0f%% of a core",
		label, d.cpu.Round(time.Millisecond), 100*d.cpu.Seconds()/d.window.Seconds()))
	return lines
}

func sortedKeys(m map[string]float64) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// logLoad logs lines and appends them to $STATUSCHECK_LOAD_REPORT.
func logLoad(t testing.TB, lines ...string) {
	t.Helper()
	for _, l := range lines {
		t.Log(l)
	}
	path := os.Getenv("STATUSCHECK_LOAD_REPORT")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Errorf("STATUSCHECK_LOAD_REPORT: %v", err)
		return
	}
	defer f.Close()
	for _, l := range lines {
		fmt.Fprintf(f, "%s %s\n", t.Name(), l)
	}
}

// liveHeap is the live heap after a full collection: the median of five
// readings (the apiserver, etcd and OLM allocate all the time).
func liveHeap() uint64 {
	var readings []uint64
	for i := 0; i < 5; i++ {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		readings = append(readings, ms.HeapAlloc)
		time.Sleep(50 * time.Millisecond)
	}
	slices.Sort(readings)
	return readings[len(readings)/2]
}

// waitCSVGone waits until a CSV no longer exists (OLM deletes a replaced
// CSV once its replacement has succeeded).
func (w *world) waitCSVGone(name string) {
	w.t.Helper()
	w.waitUntil("CSV "+name+" deleted", 60*time.Second, func() bool {
		p, _ := w.csvPhase(name)
		return p == ""
	})
}

// csvQueueQuiet waits up to timeout for OLM's CSV queue to go a second
// with at most a few syncs (a held replacement keeps it busy: see report),
// and says whether it did.
func csvQueueQuiet(t testing.TB, w *world, timeout time.Duration) bool {
	t.Helper()
	prev := scrapeLoad(t, w.c)
	for end := time.Now().Add(timeout); time.Now().Before(end); {
		time.Sleep(time.Second)
		cur := scrapeLoad(t, w.c)
		if cur.processed["/csv"]-prev.processed["/csv"] <= 5 {
			return true
		}
		prev = cur
	}
	return false
}
