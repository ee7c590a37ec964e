package gcfloor

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// TestFloorLiftsAtFirstCollection: importing the package turned the
// collector off under the Floor memory limit (the test binary imports
// it); the first collection puts back GOGC's default and no limit.
func TestFloorLiftsAtFirstCollection(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT set: the package leaves the collector alone")
	}
	if p, l := gcPercent(), debug.SetMemoryLimit(-1); p != -1 || l != Floor {
		t.Fatalf("at start: GC percent %d, memory limit %d; want -1 and %d", p, l, Floor)
	}
	runtime.GC()
	deadline := time.Now().Add(10 * time.Second)
	for gcPercent() == -1 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if p, l := gcPercent(), debug.SetMemoryLimit(-1); p != 100 || l != math.MaxInt64 {
		t.Fatalf("after the first collection: GC percent %d, memory limit %d; want 100 and none", p, l)
	}
	Release() // a second release changes nothing
	if p := gcPercent(); p != 100 {
		t.Fatalf("after Release: GC percent %d", p)
	}
}
