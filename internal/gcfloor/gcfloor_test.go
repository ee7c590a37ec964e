package gcfloor

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
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
// collector off under its floor (Floor, or less under a cgroup limit; the
// test binary imports it); the first collection turns it on at GC percent
// After under its soft limit, and Release after that changes nothing.
func TestFloorLiftsAtFirstCollection(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT set: the package leaves the collector alone")
	}
	cgroup := memoryLimit(cgroupFiles)
	if p, l, want := gcPercent(), debug.SetMemoryLimit(-1), underLimit(Floor, cgroup); p != -1 || l != want {
		t.Fatalf("at start: GC percent %d, memory limit %d; want -1 and %d", p, l, want)
	}
	runtime.GC()
	deadline := time.Now().Add(10 * time.Second)
	for gcPercent() == -1 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if p, l, want := gcPercent(), debug.SetMemoryLimit(-1), underLimit(AfterLimit, cgroup); p != After || l != want {
		t.Fatalf("after the first collection: GC percent %d, memory limit %d; want %d and %d", p, l, After, want)
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

// TestFloorUnderAContainersLimit: the floor, and the soft limit after
// it, are half a cgroup's memory limit where that is lower, and Floor and
// AfterLimit otherwise.
func TestFloorUnderAContainersLimit(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	v2max := write("v2-max", "max\n")
	v2limited := write("v2-limited", "134217728\n") // 128 MiB
	v1unlimited := write("v1-unlimited", "9223372036854771712\n")
	v1limited := write("v1-limited", "536870912\n") // 512 MiB
	garbage := write("garbage", "lots\n")
	tiny := write("tiny", "8388608\n")
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		name      string
		files     []string
		wantFloor int64
		wantAfter int64
	}{
		{name: "no cgroup file", files: []string{missing, missing}, wantFloor: 128 << 20, wantAfter: 2 << 30},
		{name: "cgroup v2 without a limit", files: []string{v2max, v1limited}, wantFloor: 128 << 20, wantAfter: 2 << 30},
		{name: "cgroup v2 limited to 128 MiB", files: []string{v2limited}, wantFloor: 64 << 20, wantAfter: 64 << 20},
		{name: "cgroup v1 without a limit", files: []string{missing, v1unlimited}, wantFloor: 128 << 20, wantAfter: 2 << 30},
		{name: "cgroup v1 limited to 512 MiB: over twice the floor", files: []string{missing, v1limited}, wantFloor: 128 << 20, wantAfter: 256 << 20},
		{name: "a file that holds no number", files: []string{garbage, v2limited}, wantFloor: 128 << 20, wantAfter: 2 << 30},
		{name: "a limit of 8 MiB: the least floor", files: []string{tiny}, wantFloor: 16 << 20, wantAfter: 16 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limit := memoryLimit(tc.files)
			if got := underLimit(Floor, limit); got != tc.wantFloor {
				t.Errorf("floor %d, want %d", got, tc.wantFloor)
			}
			if got := underLimit(AfterLimit, limit); got != tc.wantAfter {
				t.Errorf("soft limit after the floor %d, want %d", got, tc.wantAfter)
			}
		})
	}
	if len(cgroupFiles) != 2 || cgroupFiles[0] != "/sys/fs/cgroup/memory.max" || cgroupFiles[1] != "/sys/fs/cgroup/memory/memory.limit_in_bytes" {
		t.Errorf("the files read are %q", cgroupFiles)
	}
}

// FuzzParseLimit: whatever a cgroup file holds, the limit read is a
// number of bytes or 0, and the floor under it is between the least
// floor and Floor, and no more than half the limit unless that is under
// the least floor.
func FuzzParseLimit(f *testing.F) {
	for _, s := range []string{"max\n", "134217728\n", "9223372036854771712", "-1", "", " 42 ", "1e9"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n := parseLimit(data)
		if n < 0 {
			t.Fatalf("limit %d from %q", n, data)
		}
		if fl := underLimit(Floor, n); fl < minUnderLimit || fl > Floor || (n > 0 && 2*fl > n && fl != minUnderLimit) {
			t.Fatalf("floor %d under limit %d", fl, n)
		}
	})
}
