package gcfloor

import (
	"math"
	"os"
	"os/exec"
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
// it); the first collection turns it on at GC percent After under the
// AfterLimit, and Release after that changes nothing.
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
	if p, l := gcPercent(), debug.SetMemoryLimit(-1); p != After || l != AfterLimit {
		t.Fatalf("after the first collection: GC percent %d, memory limit %d; want %d and %d", p, l, After, AfterLimit)
	}
	Release() // the collector is on already: this changes nothing
	if p := gcPercent(); p != After {
		t.Fatalf("after Release: GC percent %d", p)
	}
}

// TestReleaseBeforeTheFloor: Release, before any collection (what
// cmd/statuscheck does for the commands that run long or grow large),
// puts back the settings the process started with: GOGC's default and no
// limit, not After. It runs in a process of its own (this test binary
// again), where the collector is still off.
func TestReleaseBeforeTheFloor(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT set: the package leaves the collector alone")
	}
	if os.Getenv("GCFLOOR_RELEASE_CHILD") == "1" {
		if p := gcPercent(); p != -1 {
			t.Fatalf("at start: GC percent %d, want -1", p)
		}
		Release()
		if p, l := gcPercent(), debug.SetMemoryLimit(-1); p != 100 || l != math.MaxInt64 {
			t.Fatalf("after Release: GC percent %d, memory limit %d; want 100 and none", p, l)
		}
		runtime.GC() // the sentinel's finalizer finds the collector on already
		time.Sleep(50 * time.Millisecond)
		if p := gcPercent(); p != 100 {
			t.Fatalf("after the first collection: GC percent %d, want 100", p)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestReleaseBeforeTheFloor$", "-test.count=1")
	cmd.Env = append(os.Environ(), "GCFLOOR_RELEASE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child process: %v\n%s", err, out)
	}
}
