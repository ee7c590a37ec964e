package gcfloor

import (
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

// adviseHugePages has the runtime map n bytes more of heap in one piece,
// advises the heap from its start to the end of that piece MADV_HUGEPAGE
// and frees the piece for the allocations that follow: where the kernel
// gives huge pages only to memory so advised, and the heap's first
// mapping is still what it was. Any step that fails leaves the heap as it
// was. It runs while the collector is off, before the floor's sentinel
// exists: the collection it asks for must not lift the floor.
func adviseHugePages(n int64) {
	mode, err := os.ReadFile(thpModeFile)
	if err != nil || thpMode(mode) != "madvise" {
		return
	}
	sizeData, err := os.ReadFile(thpSizeFile)
	if err != nil {
		return
	}
	size := thpSize(sizeData)
	if size == 0 || n < int64(size) {
		return
	}
	p := mapPiece(n)
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return
	}
	start, ok := mappingStart(maps, p)
	if !ok {
		return
	}
	lo, hi := hugeRange(start, p+uintptr(n), size)
	if lo == hi {
		return
	}
	if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, lo, hi-lo, syscall.MADV_HUGEPAGE); e != 0 {
		return
	}
	advised.lo, advised.hi = lo, hi
	runtime.GC()
}

// mapPiece allocates n bytes, which the runtime maps as one piece of
// heap, untouched, and returns their address; nothing holds them after.
func mapPiece(n int64) uintptr {
	return uintptr(unsafe.Pointer(unsafe.SliceData(make([]byte, n))))
}

// unadviseHugePages takes the advice back (MADV_NOHUGEPAGE), for a
// process that runs long: what is mapped already stays as it is.
func unadviseHugePages() {
	if advised.lo == advised.hi {
		return
	}
	syscall.Syscall(syscall.SYS_MADVISE, advised.lo, advised.hi-advised.lo, syscall.MADV_NOHUGEPAGE)
	advised.lo, advised.hi = 0, 0
}
