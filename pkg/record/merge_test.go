package record

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func evAt(kind, rv string) event {
	u := &unstructured.Unstructured{Object: map[string]interface{}{}}
	u.SetResourceVersion(rv)
	return event{kind: kind, obj: u}
}

func rvs(evs []event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.kind+"@"+e.obj.GetResourceVersion())
	}
	return out
}

func TestMergerOrdersWatchesByResourceVersion(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		play func(m *merger) []string
		want []string
	}{
		{
			name: "a later event of one watch waits for an earlier one of another",
			play: func(m *merger) []string {
				m.setUp("cr", true)
				m.setUp("csv", true)
				m.add(evAt("csv", "31"), t0)
				m.add(evAt("cr", "30"), t0.Add(100*time.Millisecond))
				var got []string
				got = append(got, rvs(m.ready(t0.Add(settle), false))...) // 30 has not settled: nothing
				got = append(got, "|")
				got = append(got, rvs(m.ready(t0.Add(100*time.Millisecond+settle), false))...)
				return got
			},
			want: []string{"|", "cr@30", "csv@31"},
		},
		{
			name: "nothing goes while a watch is down; it comes back with what it missed",
			play: func(m *merger) []string {
				m.setUp("cr", true)
				m.add(evAt("csv", "34"), t0) // csv's watch went down and came back first...
				m.setUp("csv", true)
				m.setUp("cr", false) // ...while cr's is down
				var got []string
				got = append(got, rvs(m.ready(t0.Add(time.Hour), false))...)
				got = append(got, "|")
				m.add(evAt("cr", "30"), t0.Add(time.Hour))
				m.setUp("cr", true)
				got = append(got, rvs(m.ready(t0.Add(time.Hour+settle), false))...)
				return got
			},
			want: []string{"|", "cr@30", "csv@34"},
		},
		{
			name: "a watch not yet established holds everything",
			play: func(m *merger) []string {
				m.setUp("cr", true)
				m.add(evAt("cr", "5"), t0)
				return rvs(m.ready(t0.Add(time.Hour), false))
			},
			want: nil,
		},
		{
			name: "the end flushes what waits, in order",
			play: func(m *merger) []string {
				m.add(evAt("csv", "9"), t0)
				m.add(evAt("cr", "7"), t0)
				m.add(evAt("cr", "8"), t0)
				return rvs(m.ready(t0, true))
			},
			want: []string{"cr@7", "cr@8", "csv@9"},
		},
		{
			name: "an unreadable version keeps its place in arrival order",
			play: func(m *merger) []string {
				m.add(evAt("cr", "7"), t0)
				m.add(evAt("cr", "x"), t0)
				m.add(evAt("csv", "8"), t0)
				return rvs(m.ready(t0, true))
			},
			want: []string{"cr@7", "cr@x", "csv@8"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.play(newMerger("cr", "csv")))
		})
	}
}

// TestMergerMarksLateEvents: an event that comes after a later one was
// released (its watch slower than the settle window) is released where
// it came, marked with the later resourceVersion, for the trace's note.
func TestMergerMarksLateEvents(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	m := newMerger("cr", "csv")
	m.setUp("cr", true)
	m.setUp("csv", true)
	m.add(evAt("csv", "40"), t0)
	first := m.ready(t0.Add(settle), false)
	assert.Equal(t, []string{"csv@40"}, rvs(first))
	assert.Empty(t, first[0].late)
	m.add(evAt("cr", "39"), t0.Add(time.Second)) // written before 40, delivered after it
	m.add(evAt("cr", "41"), t0.Add(time.Second))
	got := m.ready(t0.Add(time.Second+settle), false)
	assert.Equal(t, []string{"cr@39", "cr@41"}, rvs(got))
	assert.Equal(t, "40", got[0].late, "39 came after 40 was recorded")
	assert.Empty(t, got[1].late)
}

// TestMergerIgnoresTheLateEndOfAnOldWatch: a watch's end is announced by
// its forwarding goroutine, which may run after the next watch of the
// kind is up (a relist after an expiry); that stale "down" must not hold
// every event for ever. It did: TestWatchExpiryRelistsAndDiffs hung
// under -race, the merger spinning on a deadline in the past.
func TestMergerIgnoresTheLateEndOfAnOldWatch(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	m := newMerger("cr")
	m.announce("cr", true, 1)
	m.announce("cr", false, 0) // the loop: the watch expired
	m.add(evAt("cr", "101"), t0)
	assert.True(t, m.next().IsZero(), "nothing to wake for while the watch is down")
	m.announce("cr", true, 2)  // the watch after the relist
	m.announce("cr", false, 1) // the old watch's forwarding goroutine ends
	assert.Equal(t, []string{"cr@101"}, rvs(m.ready(t0.Add(time.Second), false)))
	m.announce("cr", false, 2) // the current watch ends: that counts
	m.add(evAt("cr", "102"), t0.Add(time.Second))
	assert.Empty(t, m.ready(t0.Add(time.Hour), false))
}
