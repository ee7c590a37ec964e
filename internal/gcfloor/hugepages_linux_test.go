package gcfloor

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/statuscheck/statuscheck/internal/testutil/race"
)

// hugeHeapReady skips a test where initialisation has, by design,
// nothing to advise: a collector set by GOGC or GOMEMLIMIT, transparent
// huge pages in another mode than madvise or turned off by GODEBUG, a
// huge page size the piece cannot hold (arm64 with 64 KiB pages: 512
// MiB), or a floor under minHugeFloor (a container's small limit).
func hugeHeapReady(t *testing.T) {
	t.Helper()
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT set: the package leaves the collector alone")
	}
	data, err := os.ReadFile(thpModeFile)
	if err != nil || thpMode(data) != "madvise" {
		t.Skipf("transparent huge pages are not in madvise mode here (%q, %v)", data, err)
	}
	if thpDisabled(os.Getenv("GODEBUG")) {
		t.Skip("GODEBUG disablethp turns huge pages off for the heap")
	}
	sizeData, _ := os.ReadFile(thpSizeFile)
	floor := underLimit(Floor, memoryLimit(cgroupFiles))
	if size := int64(thpSize(sizeData)); size == 0 || floor < minHugeFloor || floor/4*HugeShare < 4*size {
		t.Skipf("nothing to advise: huge pages of %d bytes, a floor of %d", size, floor)
	}
}

// smapsField is the value of field (THPeligible, AnonHugePages) in
// /proc/self/smaps for the mapping that holds addr, found as
// adviseHugePages finds it (mappingStart: smaps starts each mapping's
// entry with its maps line, "%08x-%08x ..."); false when the kernel gives
// no such field before the entry's last, VmFlags.
func smapsField(t *testing.T, addr uintptr, field string) (string, bool) {
	t.Helper()
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	start, ok := mappingStart(data, addr)
	if !ok {
		t.Fatalf("no mapping in /proc/self/smaps holds %#x", addr)
	}
	header := fmt.Sprintf("%08x-", start)
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, header):
			in = true
		case !in:
		case strings.HasPrefix(line, field+":"):
			return strings.TrimSpace(strings.TrimPrefix(line, field+":")), true
		case strings.HasPrefix(line, "VmFlags:"):
			return "", false
		}
	}
	return "", false
}

// thpEligible is smaps' THPeligible for the mapping that holds addr: 1
// when a fault there may take a huge page. A kernel that does not say
// skips the test.
func thpEligible(t *testing.T, addr uintptr) string {
	t.Helper()
	v, ok := smapsField(t, addr, "THPeligible")
	if !ok {
		t.Skip("this kernel's smaps has no THPeligible")
	}
	return v
}

// inChild runs the test named name again in a process of its own (this
// test binary, with env set), where nothing but initialisation has run,
// and fails unless it passes there (or skips it where it skips there);
// it reports whether this is that process.
func inChild(t *testing.T, name, env string) bool {
	t.Helper()
	if os.Getenv(env) == "1" {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env+"=1")
	out, err := cmd.CombinedOutput()
	switch {
	case err == nil && bytes.Contains(out, []byte("--- SKIP: "+name)):
		t.Skipf("skipped in its own process:\n%s", out)
	case err != nil || !bytes.Contains(out, []byte("--- PASS: "+name)):
		t.Fatalf("the child process: %v\n%s", err, out)
	}
	return false
}

// adviseChild is, for a test of what initialisation advised: the start
// of the advised range and true in the test's own process (inChild),
// which it fails where initialisation advised nothing; false in the
// process that started it. It skips where nothing is to be advised.
func adviseChild(t *testing.T, name, env string) (uintptr, bool) {
	t.Helper()
	hugeHeapReady(t)
	if !inChild(t, name, env) {
		return 0, false
	}
	if advised.lo == advised.hi {
		t.Fatal("initialisation advised nothing")
	}
	return advised.lo, true
}

// TestHeapOnHugePages: initialisation (the test binary imports the
// package) advised the heap for huge pages, what the process allocates
// after it lands there, and memory touched a page at a time is mapped a
// huge page a fault: far fewer faults than its 4 KiB pages. It runs in a
// process of its own: another test's Release takes the advice back.
func TestHeapOnHugePages(t *testing.T) {
	lo, ok := adviseChild(t, "TestHeapOnHugePages", "GCFLOOR_HUGE_CHILD")
	if !ok {
		return
	}
	if got := thpEligible(t, lo); got != "1" {
		t.Errorf("THPeligible of the advised heap is %q, want 1", got)
	}
	n := min(32<<20, int(advised.hi-advised.lo)/2)
	var before, after syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &before); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, n)
	for i := 0; i < n; i += 4096 {
		b[i] = 1
	}
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &after); err != nil {
		t.Fatal(err)
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	runtime.KeepAlive(b)
	if p < advised.lo || p+uintptr(n) > advised.hi {
		t.Fatalf("%d bytes allocated at [%#x, %#x), outside the advised [%#x, %#x)", n, p, p+uintptr(n), advised.lo, advised.hi)
	}
	if race.Enabled {
		t.Skip("faults not counted under the race detector: its shadow memory takes its own")
	}
	if huge, _ := smapsField(t, p, "AnonHugePages"); huge == "0 kB" {
		t.Skip("the kernel had no huge page to give (AnonHugePages 0 where the memory is)")
	}
	if faults := int64(after.Minflt - before.Minflt); faults > int64(n/4096/4) {
		t.Errorf("%d bytes touched took %d page faults, want under %d (huge pages)", n, faults, n/4096/4)
	}
}

// TestReleaseTakesTheAdviceBack: a process that runs long (Release) does
// not keep its heap advised for huge pages. It runs in a process of its
// own (this test binary again).
func TestReleaseTakesTheAdviceBack(t *testing.T) {
	lo, ok := adviseChild(t, "TestReleaseTakesTheAdviceBack", "GCFLOOR_UNADVISE_CHILD")
	if !ok {
		return
	}
	Release()
	if advised.lo != advised.hi {
		t.Errorf("after Release the advised range is [%#x, %#x)", advised.lo, advised.hi)
	}
	if got := thpEligible(t, lo); got != "0" {
		t.Errorf("after Release THPeligible of the heap is %q, want 0", got)
	}
	Release() // again: nothing to take back, no panic
}

// TestTheAdviceGoesWithTheFloor: a short-lived process that grows past
// the floor (its first collection) does not keep its heap advised either:
// the memory the scavenger hands back from then on must stay handed back.
func TestTheAdviceGoesWithTheFloor(t *testing.T) {
	lo, ok := adviseChild(t, "TestTheAdviceGoesWithTheFloor", "GCFLOOR_LIFT_CHILD")
	if !ok {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for gcPercent() == -1 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if gcPercent() == -1 {
		t.Fatal("the first collection did not lift the floor")
	}
	mu.Lock()
	lo2, hi2 := advised.lo, advised.hi
	mu.Unlock()
	if lo2 != hi2 {
		t.Errorf("after the floor the advised range is [%#x, %#x)", lo2, hi2)
	}
	if got := thpEligible(t, lo); got != "0" {
		t.Errorf("after the floor THPeligible of the heap is %q, want 0", got)
	}
}

// TestGODEBUGTurnsItOff: with GODEBUG=disablethp=1, which the runtime
// reads as huge pages off for its heap, initialisation advises nothing.
func TestGODEBUGTurnsItOff(t *testing.T) {
	if os.Getenv("GCFLOOR_DISABLED_CHILD") == "1" {
		if advised.lo != advised.hi {
			t.Fatalf("advised [%#x, %#x) under GODEBUG=%s", advised.lo, advised.hi, os.Getenv("GODEBUG"))
		}
		return
	}
	hugeHeapReady(t) // where, without it, initialisation advises
	cmd := exec.Command(os.Args[0], "-test.run=^TestGODEBUGTurnsItOff$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "GCFLOOR_DISABLED_CHILD=1", "GODEBUG=gctrace=0,disablethp=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: TestGODEBUGTurnsItOff")) {
		t.Fatalf("the child process: %v\n%s", err, out)
	}
}
