package record

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
)

// statusWrites makes n successive versions of the CR, each an operator's
// /status write that changes the condition (a watch gives only changes).
func statusWrites(n int) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, n)
	for i := range out {
		cond := "True:Idle" + strconv.Itoa(i)
		if i%2 == 1 {
			cond = "False:Busy" + strconv.Itoa(i)
		}
		out[i] = cr(2, strconv.Itoa(1000+i), "MariaDB", cond, 2, "cool-operator", true, i)
	}
	return out
}

// BenchmarkRecorderStatusWrite is the recorder's cost per event: an
// operator's status write of the CR, through the merger and the
// recorder to a written step. BenchmarkDecodeWatchEvent, the anchor, is
// what client-go spends decoding the same event from the wire, which any
// watcher pays.
func BenchmarkRecorderStatusWrite(b *testing.B) {
	objs := statusWrites(1024)
	r := New(Options{Source: testSource(b), StatusSubresource: true, Out: io.Discard, Now: func() time.Time { return clock0 }})
	require.NoError(b, r.Start(cr(2, "999", "MariaDB", "True:Start", 2, "cool-operator", true, 0), nil, nil))
	m := newMerger("cr")
	m.setUp("cr", true)
	now := clock0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		o := objs[i%len(objs)].DeepCopy()
		o.SetResourceVersion(strconv.Itoa(2000 + i))
		m.add(event{kind: "cr", t: watch.Modified, obj: o}, now)
		now = now.Add(time.Millisecond)
		for _, ev := range m.ready(now.Add(settle), false) {
			if err := r.CR(ev.t, ev.obj); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkDecodeWatchEvent(b *testing.B) {
	objs := statusWrites(1024)
	frames := make([][]byte, len(objs))
	for i, o := range objs {
		frames[i], _ = json.Marshal(map[string]interface{}{"type": "MODIFIED", "object": o.Object})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var ev struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := json.Unmarshal(frames[i%len(frames)], &ev); err != nil {
			b.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(ev.Object); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRecorderMemoryIsFlat: what the recorder keeps does not grow with
// the number of events (each step is written, not held).
func TestRecorderMemoryIsFlat(t *testing.T) {
	objs := statusWrites(1024)
	r := New(Options{Source: testSource(t), StatusSubresource: true, Out: io.Discard, Now: func() time.Time { return clock0 }})
	require.NoError(t, r.Start(cr(2, "999", "MariaDB", "True:Start", 2, "cool-operator", true, 0), nil, nil))
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	feed := func(from, to int) {
		for i := from; i < to; i++ {
			o := objs[i%len(objs)].DeepCopy()
			o.SetResourceVersion(strconv.Itoa(2000 + i))
			require.NoError(t, r.CR(watch.Modified, o))
		}
	}
	feed(0, 2000)
	after2k := heap()
	feed(2000, 40000)
	after40k := heap()
	assert.Equal(t, 40000, r.Steps)
	grew := int64(after40k) - int64(after2k)
	assert.Less(t, grew, int64(1<<20), fmt.Sprintf("heap after 2k events %d B, after 40k %d B", after2k, after40k))
}
