package gcfloor

import (
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// hugeHeapReady skips a test where initialisation has nothing to advise:
// a collector set by GOGC or GOMEMLIMIT, a kernel that is not Linux, or
// transparent huge pages in another mode than madvise.
func hugeHeapReady(t *testing.T) {
	t.Helper()
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT set: the package leaves the collector alone")
	}
	if runtime.GOOS != "linux" {
		t.Skip("huge pages are advised on Linux only")
	}
	data, err := os.ReadFile(thpModeFile)
	if err != nil || thpMode(data) != "madvise" {
		t.Skipf("transparent huge pages are not in madvise mode here (%q, %v)", data, err)
	}
}

// thpEligible is smaps' THPeligible for the mapping that holds addr: 1
// when a fault there may take a huge page.
func thpEligible(t *testing.T, addr uintptr) string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		if span, _, _ := strings.Cut(line, " "); strings.Contains(span, "-") && !strings.HasSuffix(span, ":") {
			lo, hi, _ := strings.Cut(span, "-")
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && uint64(addr) >= a && uint64(addr) < b
			continue
		}
		if v, ok := strings.CutPrefix(line, "THPeligible:"); ok && in {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no mapping in /proc/self/smaps holds %#x", addr)
	return ""
}

// vmstat is a counter of /proc/vmstat.
func vmstat(t *testing.T, name string) uint64 {
	t.Helper()
	data, err := os.ReadFile("/proc/vmstat")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/vmstat", name)
	return 0
}

// inChild runs the test named name again in a process of its own (this
// test binary, with env set), where nothing but initialisation has run,
// and fails unless it passes there; it reports whether this is that
// process.
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

// TestHeapOnHugePages: initialisation (the test binary imports the
// package) advised the heap for huge pages, and memory the process
// allocates and touches after it is mapped a huge page a fault: 32 MiB
// touched a page at a time takes far fewer faults than its 8,192 pages.
// It runs in a process of its own: another test's Release takes the
// advice back.
func TestHeapOnHugePages(t *testing.T) {
	hugeHeapReady(t)
	if !inChild(t, "TestHeapOnHugePages", "GCFLOOR_HUGE_CHILD") {
		return
	}
	if advised.lo == advised.hi {
		t.Fatal("initialisation advised nothing")
	}
	if hi, want := advised.hi-advised.lo, uintptr(underLimit(Floor, memoryLimit(cgroupFiles))/4*HugeShare); hi < want/2 {
		t.Errorf("advised %d bytes, want about %d", hi, want)
	}
	if got := thpEligible(t, advised.lo); got != "1" {
		t.Errorf("THPeligible of the advised heap is %q, want 1", got)
	}
	if raceEnabled {
		t.Skip("faults not counted under the race detector: its shadow memory takes its own")
	}
	fallback := vmstat(t, "thp_fault_fallback")
	var before, after syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &before); err != nil {
		t.Fatal(err)
	}
	const n = 32 << 20
	b := make([]byte, n)
	for i := 0; i < n; i += 4096 {
		b[i] = 1
	}
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &after); err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(b)
	if vmstat(t, "thp_fault_fallback") != fallback {
		t.Skip("the kernel had no huge page to give (thp_fault_fallback grew)")
	}
	if faults := after.Minflt - before.Minflt; faults > n/4096/4 {
		t.Errorf("32 MiB touched took %d page faults, want under %d (huge pages)", faults, n/4096/4)
	}
}

// TestReleaseTakesTheAdviceBack: a process that runs long (Release) does
// not keep its heap advised for huge pages. It runs in a process of its
// own (this test binary again).
func TestReleaseTakesTheAdviceBack(t *testing.T) {
	hugeHeapReady(t)
	if inChild(t, "TestReleaseTakesTheAdviceBack", "GCFLOOR_UNADVISE_CHILD") {
		lo := advised.lo
		if lo == advised.hi {
			t.Fatal("initialisation advised nothing")
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
}
