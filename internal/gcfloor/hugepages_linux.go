package gcfloor

import (
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

// arenaBytes is the size and alignment of the runtime's heap arenas on
// 64-bit Linux (heapArenaBytes, malloc.go): the memory of a mapping that
// lies in the arena of a heap object is heap.
const arenaBytes = 64 << 20

// adviseHugePages has the runtime map n bytes more of heap in one piece,
// advises that piece MADV_HUGEPAGE, with what lies before it of the same
// mapping in the same arena (the heap that initialisation has not filled
// yet), and frees it for the allocations that follow: where the kernel
// gives huge pages only to memory so advised, GODEBUG does not turn them
// off, and n holds a huge page. Once the piece is allocated it is always
// freed, advised or not. It runs while the collector is off, before the
// floor's sentinel exists: the collection it asks for must not lift the
// floor.
func adviseHugePages(n int64) {
	mode, err := os.ReadFile(thpModeFile)
	if err != nil || thpMode(mode) != "madvise" || thpDisabled(os.Getenv("GODEBUG")) {
		return
	}
	sizeData, err := os.ReadFile(thpSizeFile)
	if err != nil {
		return
	}
	size := thpSize(sizeData)
	if size == 0 || n < 4*int64(size) {
		return
	}
	p := mapPiece(n)
	defer runtime.GC()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return
	}
	start, ok := mappingStart(maps, p)
	if !ok {
		return
	}
	if unsafe.Sizeof(uintptr(0)) == 8 {
		start = max(start, p&^(arenaBytes-1))
	} else {
		start = p
	}
	lo, hi := hugeRange(start, p+uintptr(n), size)
	if lo == hi {
		return
	}
	// Recorded first: where madvise fails part way, the part it advised
	// is taken back too.
	advised.lo, advised.hi = lo, hi
	if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, lo, hi-lo, syscall.MADV_HUGEPAGE); e != 0 {
		unadviseHugePages()
	}
}

// mapPiece allocates n bytes, which the runtime maps as one piece of
// heap, untouched, and returns their address; nothing holds them after.
func mapPiece(n int64) uintptr {
	return uintptr(unsafe.Pointer(unsafe.SliceData(make([]byte, n))))
}

// unadviseHugePages takes the advice back (MADV_NOHUGEPAGE, which also
// keeps khugepaged from making huge pages again of memory the scavenger
// hands back), once the collector is on: what is mapped stays as it is.
func unadviseHugePages() {
	if advised.lo == advised.hi {
		return
	}
	syscall.Syscall(syscall.SYS_MADVISE, advised.lo, advised.hi-advised.lo, syscall.MADV_NOHUGEPAGE)
	advised.lo, advised.hi = 0, 0
}
