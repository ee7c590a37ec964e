package record

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/statuscheck/statuscheck/pkg/contract"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	watchtools "k8s.io/client-go/tools/watch"
)

// listTimeout bounds the first lists.
var listTimeout = 30 * time.Second

// What OLM serves, for the ClusterServiceVersions and OperatorConditions.
var (
	csvGVR = contract.CSVResource
	ocGVR  = contract.OperatorConditionResource
)

// Target says what to watch.
type Target struct {
	// Resource is the status source's resource (its CRD's plural).
	Resource schema.GroupVersionResource
	// Namespaced is the CRD's scope.
	Namespaced bool
	// Namespace is the operator's: the CR's (namespaced kinds), the CSVs'
	// and the OperatorConditions'.
	Namespace string
}

// Notes is where Run says what it could not watch and why it goes on.
type Notes func(format string, args ...interface{})

// event is one watch event, or the end of a watch with an error.
type event struct {
	kind string // "cr", "csv" or "oc"
	t    watch.EventType
	obj  *unstructured.Unstructured
	err  error
	// up, set on an event without an object, says the watch of kind is
	// established ("up") or has ended ("down"); seq numbers the watch
	// (0: the watch loop itself), so that the end of an old watch,
	// announced by its forwarding goroutine after the next one is up,
	// does not mark the kind down again.
	up  string
	seq int64
	// late, set by the merger, is the later resourceVersion already
	// given to the recorder when this event came.
	late string
}

// Run lists, then watches, the status source, the namespace's CSVs and
// OperatorConditions, feeding r until ctx is done. A watch that expires
// is listed again and the difference fed as one change, so nothing is
// lost or doubled. A CSV or OperatorCondition resource the cluster does
// not serve (no OLM) or forbids is noted and left out; the status source
// itself must be readable.
func Run(ctx context.Context, cfg *rest.Config, tg Target, r *Recorder, note Notes) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("the kubeconfig gives no usable client: %w", err)
	}
	return run(ctx, dyn, cfg.Host, tg, r, note)
}

// run is Run on a given client (the tests give a fake one).
func run(ctx context.Context, dyn dynamic.Interface, host string, tg Target, r *Recorder, note Notes) error {
	// The first lists have a deadline: a cluster that does not answer is
	// an error, not a recorder that waits forever.
	lctx, lcancel := context.WithTimeout(ctx, listTimeout)
	defer lcancel()
	crRes := dynamic.ResourceInterface(dyn.Resource(tg.Resource))
	if tg.Namespaced {
		crRes = dyn.Resource(tg.Resource).Namespace(tg.Namespace)
	}
	name := r.opts.Source.Name
	byName := metav1.ListOptions{FieldSelector: "metadata.name=" + name}
	crList, err := crRes.List(lctx, byName)
	if err != nil {
		return explain(err, host, "list", tg.Resource, tg.Namespace, tg.Namespaced)
	}
	var cr *unstructured.Unstructured
	if len(crList.Items) > 0 {
		cr = &crList.Items[0]
	}
	// The CSVs and OperatorConditions are listed at the revision the CR's
	// list was taken at (resourceVersionMatch=Exact), so that the three
	// starting states are one moment of the cluster; a server that cannot
	// (a revision already compacted) is listed as it is now, with a note.
	lists := map[string]*unstructured.UnstructuredList{}
	for _, w := range []struct {
		kind string
		gvr  schema.GroupVersionResource
	}{{"csv", csvGVR}, {"oc", ocGVR}} {
		kind, gvr := w.kind, w.gvr
		at := metav1.ListOptions{ResourceVersion: crList.GetResourceVersion(), ResourceVersionMatch: metav1.ResourceVersionMatchExact}
		l, err := dyn.Resource(gvr).Namespace(tg.Namespace).List(lctx, at)
		if err != nil && !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err) && !apierrors.IsUnauthorized(err) {
			note("listing %s at resourceVersion %s failed (%v); listed as it is now", gvr.Resource, crList.GetResourceVersion(), err)
			r.listsApart = true
			l, err = dyn.Resource(gvr).Namespace(tg.Namespace).List(lctx, metav1.ListOptions{})
		}
		if err != nil {
			note("%s; OLM's steps from them are left out", explain(err, host, "list", gvr, tg.Namespace, true))
			continue
		}
		lists[kind] = l
	}
	var csvs, ocs []unstructured.Unstructured
	if l := lists["csv"]; l != nil {
		csvs = l.Items
	}
	if l := lists["oc"]; l != nil {
		ocs = l.Items
	}
	r.listRV = crList.GetResourceVersion()
	if err := r.Start(cr, csvs, ocs); err != nil {
		return err
	}
	events := make(chan event, 256)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	kinds := []string{"cr"}
	go watchLoop(wctx, watched{res: crRes, opts: byName, kind: "cr", gvr: tg.Resource, namespaced: tg.Namespaced}, crList, events, host, tg.Namespace)
	if l := lists["csv"]; l != nil {
		kinds = append(kinds, "csv")
		go watchLoop(wctx, watched{res: dyn.Resource(csvGVR).Namespace(tg.Namespace), kind: "csv", gvr: csvGVR, namespaced: true}, l, events, host, tg.Namespace)
	}
	if l := lists["oc"]; l != nil {
		kinds = append(kinds, "oc")
		go watchLoop(wctx, watched{res: dyn.Resource(ocGVR).Namespace(tg.Namespace), kind: "oc", gvr: ocGVR, namespaced: true}, l, events, host, tg.Namespace)
	}
	m := newMerger(kinds...)
	feed := func(evs []event) error {
		for _, ev := range evs {
			if ev.late != "" && ev.obj != nil {
				if err := r.write(fmt.Sprintf("# out of order: this %s event (resourceVersion %s) came after resourceVersion %s had been recorded; it is recorded where it came\n",
					ev.kind, ev.obj.GetResourceVersion(), ev.late)); err != nil {
					return err
				}
			}
			if err := r.take(ev.kind, ev.t, ev.obj); err != nil {
				return err
			}
		}
		return nil
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var wake <-chan time.Time
		if at := m.next(); !at.IsZero() {
			timer.Reset(time.Until(at))
			wake = timer.C
		}
		select {
		case <-ctx.Done():
			// The recording ends: what waits goes out, in order.
			return feed(m.ready(time.Now(), true))
		case ev := <-events:
			switch {
			case ev.err != nil:
				if err := feed(m.ready(time.Now(), true)); err != nil {
					return err
				}
				return ev.err
			case ev.up != "":
				m.announce(ev.kind, ev.up == "up", ev.seq)
			default:
				m.add(ev, time.Now())
			}
		case <-wake:
		}
		if err := feed(m.ready(time.Now(), false)); err != nil {
			return err
		}
	}
}

// watched is one resource Run watches.
type watched struct {
	res        dynamic.ResourceInterface
	opts       metav1.ListOptions
	kind       string // "cr", "csv" or "oc"
	gvr        schema.GroupVersionResource
	namespaced bool
}

// watchLoop watches one resource from its first list's resourceVersion
// with client-go's RetryWatcher (tools/watch), which watches again from the
// last version it delivered when the server or the network ends a watch.
// What RetryWatcher leaves to its user is done here, as client-go's
// reflector does it (tools/cache/reflector.go, ListAndWatch): a version
// that has expired (410 Gone, as an event or as the watch's answer) is
// listed again, and the listed objects that changed go out as changes and
// the ones that went away as deletions, so the recorder sees each event
// once, in order, and not a store's latest state. Each (re)established
// watch is announced "up" and each end of one "down", so the merger knows
// when to wait.
func watchLoop(ctx context.Context, w0 watched, first *unstructured.UnstructuredList, out chan<- event, host string, ns string) {
	rv := first.GetResourceVersion()
	known := map[string]*unstructured.Unstructured{}
	for i := range first.Items {
		known[first.Items[i].GetName()] = &first.Items[i]
	}
	send := func(ev event) bool {
		select {
		case out <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	fail := func(verb string, err error) {
		if ctx.Err() == nil {
			send(event{err: explain(err, host, verb, w0.gvr, ns, w0.namespaced)})
		}
	}
	relist := func() bool {
		l, err := w0.res.List(ctx, w0.opts)
		if err != nil {
			fail("list", err)
			return false
		}
		seen := map[string]bool{}
		for i := range l.Items {
			o := &l.Items[i]
			seen[o.GetName()] = true
			if k := known[o.GetName()]; k == nil || k.GetResourceVersion() != o.GetResourceVersion() {
				known[o.GetName()] = o
				if !send(event{kind: w0.kind, t: watch.Modified, obj: o}) {
					return false
				}
			}
		}
		for n, o := range known {
			if !seen[n] {
				delete(known, n)
				if !send(event{kind: w0.kind, t: watch.Deleted, obj: o}) {
					return false
				}
			}
		}
		rv = l.GetResourceVersion()
		return true
	}
	seq := &atomic.Int64{}
	for ctx.Err() == nil {
		wctx, stop := context.WithCancel(ctx)
		lw := &announced{w: w0, send: send, expired: make(chan struct{}, 1), fatal: make(chan error, 1), seq: seq}
		rw, err := watchtools.NewRetryWatcherWithContext(wctx, rv, lw)
		if err != nil {
			stop()
			fail("watch", err)
			return
		}
		expired := false
	events:
		for {
			select {
			case <-lw.expired:
				expired = true
				break events
			case err := <-lw.fatal:
				stop()
				<-rw.Done()
				fail("watch", err)
				return
			case ev, ok := <-rw.ResultChan():
				if !ok {
					break events
				}
				if ev.Type == watch.Error {
					err := apierrors.FromObject(ev.Object)
					if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
						expired = true
						break events
					}
					stop()
					<-rw.Done()
					fail("watch", err)
					return
				}
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				rv = u.GetResourceVersion()
				if ev.Type == watch.Deleted {
					delete(known, u.GetName())
				} else {
					known[u.GetName()] = u
				}
				if !send(event{kind: w0.kind, t: ev.Type, obj: u}) {
					stop()
					<-rw.Done()
					return
				}
			}
		}
		stop()
		<-rw.Done()
		if !send(event{kind: w0.kind, up: "down"}) {
			return
		}
		if !expired || !relist() {
			return
		}
	}
}

// announced is the watch RetryWatcher (re)establishes, telling the merger
// when one is up and when it has ended, and the loop when the version
// asked for has expired or the watch can never succeed (RetryWatcher
// would retry those for ever).
type announced struct {
	w       watched
	send    func(event) bool
	expired chan struct{}
	fatal   chan error
	// seq counts the watches established, across RetryWatchers.
	seq *atomic.Int64
}

// WatchWithContext is cache.WatcherWithContext's.
func (a *announced) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	o := a.w.opts
	o.ResourceVersion, o.AllowWatchBookmarks = opts.ResourceVersion, true
	w, err := a.w.res.Watch(ctx, o)
	switch {
	case err == nil:
	case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
		select {
		case a.expired <- struct{}{}:
		default:
		}
		return nil, err
	case apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsUnauthorized(err):
		select {
		case a.fatal <- err:
		default:
		}
		return nil, err
	default:
		return nil, err
	}
	n := a.seq.Add(1)
	if !a.send(event{kind: a.w.kind, up: "up", seq: n}) {
		w.Stop()
		return nil, ctx.Err()
	}
	return &ending{Interface: w, quit: make(chan struct{}), done: func() { a.send(event{kind: a.w.kind, up: "down", seq: n}) }}, nil
}

// ending is a watch that says when its result channel has closed.
type ending struct {
	watch.Interface
	once, stopped sync.Once
	ch            chan watch.Event
	quit          chan struct{}
	done          func()
}

func (e *ending) ResultChan() <-chan watch.Event {
	e.once.Do(func() {
		e.ch = make(chan watch.Event)
		go func() {
			defer close(e.ch)
			defer e.done()
			for ev := range e.Interface.ResultChan() {
				select {
				case e.ch <- ev:
				case <-e.quit:
					return
				}
			}
		}()
	})
	return e.ch
}

// Stop stops the watch and its forwarding.
func (e *ending) Stop() {
	e.stopped.Do(func() { close(e.quit) })
	e.Interface.Stop()
}

// NotServedError is a list or watch the server answered 404 to: the
// resource is not served there (its CRD is not installed), or the server
// is no Kubernetes apiserver at all, which only a look at its discovery
// tells apart.
type NotServedError struct {
	// Resource is the resource with its group (plural.group); Version its
	// version.
	Resource, Version string
	// Err is the server's answer.
	Err error
}

func (e *NotServedError) Error() string {
	return fmt.Sprintf("the cluster does not serve %s version %s (is its CRD installed?)", e.Resource, e.Version)
}

func (e *NotServedError) Unwrap() error { return e.Err }

// explain turns a client error into the one line a user needs: who may
// not do what, what the cluster does not serve, or that it cannot be
// reached.
func explain(err error, host string, verb string, gvr schema.GroupVersionResource, ns string, namespaced bool) error {
	where := ""
	if namespaced && ns != "" {
		where = " in namespace " + ns
	}
	res := gvr.Resource
	if gvr.Group != "" {
		res += "." + gvr.Group
	}
	var ue *url.Error
	var ne net.Error
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("the cluster forbids this: %s %s%s (%s)", verb, res, where, err.Error())
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the cluster at %s does not accept the kubeconfig's credentials: %v", host, err)
	case apierrors.IsNotFound(err):
		return &NotServedError{Resource: res, Version: gvr.Version, Err: err}
	case errors.As(err, &ue) || errors.As(err, &ne):
		return fmt.Errorf("cannot reach the cluster at %s: %v", host, err)
	}
	return fmt.Errorf("%s %s%s: %w", verb, res, where, err)
}
