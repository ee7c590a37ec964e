package gcfloor

import (
	"bytes"
	"strconv"
)

// The heap on huge pages.
//
// Under the floor the collector is off, so every byte a short-lived
// process allocates is memory it has not touched before, and the kernel
// maps it in a page fault a 4 KiB page. Where a page fault is slow (10
// µs on a virtual machine whose exceptions go through its hypervisor,
// against a fraction of a microsecond on bare metal) those faults are
// most of what validating a bundle costs. With transparent huge pages in
// "madvise" mode (the default of most distributions), memory advised
// MADV_HUGEPAGE is mapped 2 MiB a fault instead. The Go runtime advises
// none of its heap (it stopped in Go 1.21.1), and a mapping it makes
// later does not inherit an advice given before it; so initialisation
// has the runtime map the heap the floor is for in one piece (an
// allocation of HugeShare of it), advises that mapping, from the heap's
// start, and frees the allocation with a collection of a heap still
// small, for the allocations that follow to reuse.
// (docs/development.md, "On a machine whose page faults are slow".)

// HugeShare is the share of the floor the heap is made ready on huge
// pages for, in quarters: three quarters, so that the memory the runtime
// counts as its own stays under the soft limit its scavenger keeps to
// (95% of the memory limit, here the floor), which would otherwise hand
// part of it back to the kernel at once.
const HugeShare = 3

// advised is the range adviseHugePages advised, [lo, hi); empty when it
// advised none.
var advised struct{ lo, hi uintptr }

// thpModeFile says whether the kernel gives huge pages to memory advised
// MADV_HUGEPAGE ("madvise"), to all anonymous memory ("always": the heap
// has them already) or to none ("never"); thpSizeFile holds their size.
const (
	thpModeFile = "/sys/kernel/mm/transparent_hugepage/enabled"
	thpSizeFile = "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"
)

// thpMode is the selected mode in the content of thpModeFile, the word in
// brackets ("always [madvise] never" gives "madvise"), "" when there is
// none.
func thpMode(data []byte) string {
	_, after, ok := bytes.Cut(data, []byte("["))
	if !ok {
		return ""
	}
	mode, _, ok := bytes.Cut(after, []byte("]"))
	if !ok || bytes.ContainsAny(mode, " \t\n[") {
		return ""
	}
	return string(mode)
}

// thpSize is the huge page size thpSizeFile holds, 0 when it holds no
// power of two of at least 64 KiB.
func thpSize(data []byte) uintptr {
	n, err := strconv.ParseUint(string(bytes.TrimSpace(data)), 10, 64)
	if err != nil || n < 64<<10 || n > 1<<40 || n&(n-1) != 0 {
		return 0
	}
	return uintptr(n)
}

// mappingStart is the start of the mapping that holds addr in maps, the
// content of /proc/self/maps (lines "start-end perms offset dev inode
// path", addresses in hexadecimal); false when no line holds it.
func mappingStart(maps []byte, addr uintptr) (uintptr, bool) {
	for len(maps) > 0 {
		var line []byte
		line, maps, _ = bytes.Cut(maps, []byte("\n"))
		span, _, _ := bytes.Cut(line, []byte(" "))
		lo, hi, ok := bytes.Cut(span, []byte("-"))
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(string(lo), 16, 64)
		end, err2 := strconv.ParseUint(string(hi), 16, 64)
		if err1 != nil || err2 != nil || start >= end {
			continue
		}
		if uint64(addr) >= start && uint64(addr) < end {
			return uintptr(start), true
		}
	}
	return 0, false
}

// hugeRange is the part of [start, end) made of whole huge pages of size
// size: start rounded up, end rounded down; empty (lo == hi) when none.
func hugeRange(start, end, size uintptr) (lo, hi uintptr) {
	if size == 0 || end < size {
		return 0, 0
	}
	lo = (start + size - 1) &^ (size - 1)
	hi = end &^ (size - 1)
	if lo < start || hi <= lo {
		return 0, 0
	}
	return lo, hi
}
