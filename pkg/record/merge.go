package record

import (
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// settle is how long an event waits for the other watches' events that
// came before it: watches are separate streams, and an event of one may
// reach the recorder a little after a later event of another.
var settle = 300 * time.Millisecond

// merger puts the events of several watches in the order they happened
// on the server. Each watch gives its own events in order; across
// watches, resourceVersions order them, compared with apimachinery's
// util/resourceversion.CompareResourceVersion. That function's doc gives
// the comparison meaning only within one resource; it holds across these
// three because the etcd3 store writes an object's resourceVersion from
// the etcd revision of its write (k8s.io/apiserver pkg/storage/etcd3,
// APIObjectVersioner with the key's ModRevision), one counter for every
// key of an etcd, and custom resources, CSVs and OperatorConditions (all
// CRDs) live in the apiserver's one etcd unless --etcd-servers-overrides
// splits them (then the trace's notes show events out of order). An
// event is released once it has waited settle and no watch is down;
// while one is down (cut, being re-established), everything waits, since
// its missed events will come first.
type merger struct {
	down    map[string]bool
	upSeq   map[string]int64
	pending []pendingEvent
	seq     int
	maxRV   string
	// released is the latest resourceVersion given to the recorder: an
	// event that comes after it had been released, from a watch that was
	// slower than the settle window, is given where it arrived and marked
	// late, so the trace says so.
	released string
}

type pendingEvent struct {
	ev      event
	rv      string
	seq     int
	arrived time.Time
}

// before orders two queued events: by resourceVersion, then by arrival.
func (p pendingEvent) before(q pendingEvent) bool {
	if c, err := resourceversion.CompareResourceVersion(p.rv, q.rv); err == nil && c != 0 {
		return c < 0
	}
	return p.seq < q.seq
}

func newMerger(kinds ...string) *merger {
	m := &merger{down: map[string]bool{}, upSeq: map[string]int64{}}
	for _, k := range kinds {
		m.down[k] = true // until its watch is established
	}
	return m
}

// setUp records that the watch of kind is established (up) or not.
func (m *merger) setUp(kind string, up bool) { m.announce(kind, up, 0) }

// announce records the watch seq of kind (1, 2, ... as they are
// established; 0 for the watch loop's own "down") going up or down. A
// "down" of a watch older than the last one up is stale: the forwarding
// goroutine of a stopped watch says so whenever it ends, which may be
// after its successor is up.
func (m *merger) announce(kind string, up bool, seq int64) {
	if up {
		m.upSeq[kind] = max(m.upSeq[kind], seq)
		m.down[kind] = false
		return
	}
	if seq != 0 && seq < m.upSeq[kind] {
		return
	}
	m.down[kind] = true
}

// add queues an event that arrived at now.
func (m *merger) add(ev event, now time.Time) {
	rv := m.maxRV // an unreadable version keeps the event's arrival order
	if ev.obj != nil {
		if v := ev.obj.GetResourceVersion(); wellFormed(v) {
			rv = v
		}
	}
	if m.maxRV == "" || later(rv, m.maxRV) {
		m.maxRV = rv
	}
	m.seq++
	p := pendingEvent{ev: ev, rv: rv, seq: m.seq, arrived: now}
	i := sort.Search(len(m.pending), func(i int) bool { return p.before(m.pending[i]) })
	m.pending = append(m.pending, pendingEvent{})
	copy(m.pending[i+1:], m.pending[i:])
	m.pending[i] = p
}

// ready takes the events that may go to the recorder now, in order; all
// of them when flush is set (the recording ends).
func (m *merger) ready(now time.Time, flush bool) []event {
	if !flush {
		for _, d := range m.down {
			if d {
				return nil
			}
		}
	}
	n := 0
	for n < len(m.pending) && (flush || now.Sub(m.pending[n].arrived) >= settle) {
		n++
	}
	if n == 0 {
		return nil
	}
	out := make([]event, n)
	for i := range out {
		p := m.pending[i]
		out[i] = p.ev
		if wellFormed(p.rv) {
			if m.released != "" && later(m.released, p.rv) {
				out[i].late = m.released
			} else {
				m.released = p.rv
			}
		}
	}
	m.pending = append(m.pending[:0], m.pending[n:]...)
	return out
}

// wellFormed: a resourceVersion CompareResourceVersion can compare.
func wellFormed(rv string) bool {
	_, err := resourceversion.CompareResourceVersion(rv, rv)
	return err == nil
}

// later reports whether resourceVersion a is after b (false when either
// is not one).
func later(a, b string) bool {
	c, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && c > 0
}

// next is when ready may next give something (zero: nothing pending).
func (m *merger) next() time.Time {
	if len(m.pending) == 0 {
		return time.Time{}
	}
	for _, d := range m.down {
		if d {
			// Nothing goes out while a watch is down: no time to wake at
			// (the watch's "up" comes as an event). A deadline in the
			// past here made Run spin until it came.
			return time.Time{}
		}
	}
	return m.pending[0].arrived.Add(settle)
}
