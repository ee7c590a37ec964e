// Package gcfloor keeps the garbage collector off while a short-lived
// statuscheck process is small. Only the commands (cmd/statuscheck,
// cmd/statuscheck-cluster, cmd/statuscheck-sdk-validator) import it, for
// its initialisation, which turns the collector off under a memory limit
// of Floor, or of half a container's memory limit when that is lower
// (runtime/debug's SetGCPercent(-1) and SetMemoryLimit), so that neither the
// rest of the binary's package initialisation (some 7 MiB allocated, most
// of it garbage by main, which under the default GOGC=100 and its 4 MiB
// first goal costs two or three collections) nor the validation of a
// bundle or two pays for collections in a process about to exit. The
// first collection, when the process reaches that floor, turns the
// collector on at GC percent After under a soft memory limit of
// AfterLimit, or of half a container's limit when that is lower: from
// there on it paces as it always does, with the heap let grow to five
// times what is live instead of twice, which suits a process whose
// garbage is most of what it allocates, but no further than the soft
// limit, where a large input would otherwise take more than it did at 100.
// Under the floor, the heap is also advised for huge pages where the
// kernel gives them only to memory so advised (hugepages.go): with the
// collector off, each byte allocated is a page the kernel maps afresh.
// The advice goes when the collector comes on. Release puts back the
// settings the process started with (GOGC, default 100, and GOMEMLIMIT)
// at once, for the commands that run long or grow large. A process
// started with GOGC or GOMEMLIMIT set is left alone.
//
// Packages initialise in import-path order as far as their imports allow,
// so this one imports only standard packages whose turn comes early, not
// runtime/debug nor strings (gcsettings): in today's binaries it is the
// 30th of some 480 initialisations, before the packages that allocate
// most (internal/cli's TestGCFloorInitialisesEarly holds it there).
package gcfloor

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"sync"

	"github.com/statuscheck/statuscheck/internal/gcfloor/gcsettings"
)

// Floor is the memory limit the collector is off under: the Go runtime's
// own memory (heap, stacks, its structures), not the binary's mapped code.
// Every corpus bundle validates under it in a process of its own, without
// a collection (kubevirt-hyperconverged 1.20.0, 2.7 MB of YAML, the
// largest, peaks at 123 MiB resident); at 64 MiB the two largest paid for
// one, and one process a bundle took 1.03x the time it takes at 128
// (docs/development.md). In a cgroup with a memory limit (a container's)
// the floor is half that limit when that is lower (underLimit), and so is
// the soft limit after it: the binary's pages come on top of the
// runtime's memory, and a process must not reach its container's limit.
const Floor = 128 << 20

// cgroupFiles hold the memory limit of the cgroup mounted at
// /sys/fs/cgroup, the first that can be read deciding: cgroup v2's
// memory.max, then v1's memory.limit_in_bytes. In a container that is its
// own limit (a private cgroup namespace, cgroup v2's default for
// containers, or v1's mount of the container's cgroup); a limit set on a
// systemd unit, on a cgroup above it or below the mount is not read.
var cgroupFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// minUnderLimit is the least underLimit gives: under a smaller memory
// limit the process would collect thousands of times before its first
// collection lifts the floor, and could not run within that limit anyway.
const minUnderLimit = 16 << 20

// underLimit is what a memory limit of limit bytes (0 for none) leaves of
// a setting of want bytes (Floor, AfterLimit): want, or half the limit
// when that is lower, but no less than minUnderLimit.
func underLimit(want, limit int64) int64 {
	if limit > 0 && limit/2 < want {
		return max(limit/2, minUnderLimit)
	}
	return want
}

// memoryLimit is the limit the first readable file of files holds, in
// bytes, 0 for none ("max"; v1's "unlimited" is a number far above
// Floor) or when no file holds one.
func memoryLimit(files []string) int64 {
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		return parseLimit(data)
	}
	return 0
}

// parseLimit reads a cgroup memory limit file's content: a number of
// bytes, or "max"; 0 for "max" and for anything else it cannot read.
func parseLimit(data []byte) int64 {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(data)), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// After is the GC percent of a short-lived process past Floor. Validating
// the corpus's 27 bundles in one process (19 MB of YAML) at 100 spent
// about a tenth of its time collecting; at 400 its peak memory grows by
// a third to a half, and by up to twice for a few hundred bundles
// (measured, docs/development.md).
const After = 400

// AfterLimit is the soft memory limit past Floor: below it the collector
// paces at After, and near it as often as it takes to stay under it (or,
// when what is live exceeds it, as often as the runtime lets it).
const AfterLimit = 2 << 30

var (
	mu      sync.Mutex
	armed   bool
	percent int   // the GC percent the process started with
	limit   int64 // and its memory limit
)

func init() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	armed = true
	percent = int(gcsettings.SetGCPercent(-1))
	cgroup := memoryLimit(cgroupFiles)
	floor := underLimit(Floor, cgroup)
	limit = gcsettings.SetMemoryLimit(floor)
	adviseHugePages(hugePiece(floor))
	after := underLimit(AfterLimit, cgroup)
	// The first collection finds the sentinel unreachable and queues its
	// finalizer, which puts the settings back. (Sized and typed so that
	// it is not in a tiny-allocator block, whose finalizers may not run.)
	sentinel := &struct {
		_ [16]byte
		_ *int
	}{}
	runtime.SetFinalizer(sentinel, func(interface{}) { lift(After, after) })
}

// Release puts back the collector's settings the process started with;
// after the first call, or once the first collection has turned the
// collector on, it does nothing.
func Release() { lift(percent, limit) }

// lift turns the collector on, the first time only: GC percent p under
// the memory limit l. The heap's advice for huge pages goes with the
// floor (hugepages.go).
func lift(p int, l int64) {
	mu.Lock()
	defer mu.Unlock()
	if !armed {
		return
	}
	armed = false
	unadviseHugePages()
	gcsettings.SetMemoryLimit(l)
	gcsettings.SetGCPercent(int32(p))
}
