package gcfloor

import (
	"bytes"
	"runtime/metrics"
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
// none of its heap (only some of its own metadata, malloc.go and
// mpagealloc.go; runtime/extern.go, disablethp, says why it stopped:
// memory overuse, go.dev/issue/64332, khugepaged making huge pages again
// of memory the runtime had handed back), and a mapping it makes later
// does not inherit an advice given before it. So initialisation has the
// runtime map most of the heap the floor is for in one piece (an
// allocation), advises that piece, with the heap before it in its
// mapping and arena, and frees it with one collection of a heap still
// small, for the allocations that follow to reuse. The advice goes when
// the collector comes on (lift): a process past the floor, or one that
// runs long, hands memory back, and advised memory would be made huge
// pages again.
// (docs/development.md, "On a machine whose page faults are slow".)

// HugeShare is the share of the floor the piece is, at most, in
// quarters.
const HugeShare = 3

// minHugeFloor is the least floor the heap is made ready on huge pages
// under (a container's memory limit of 128 MiB): under a smaller one the
// piece, with what the runtime has already, would pass the memory the
// scavenger keeps to and be handed back to the kernel, after collections
// the floor is there to spare.
const minHugeFloor = 64 << 20

// pieceMargin is what the piece leaves, under the scavenger's goal, for
// the runtime's own structures that grow with it.
const pieceMargin = 4 << 20

// pieceSize is the size of the piece under a floor of floor bytes when
// the runtime holds inUse bytes of memory already: HugeShare quarters of
// the floor, but no more than keeps the runtime's memory under 95% of the
// floor, the memory limit's scavenging goal (mgcscavenge.go,
// gcPaceScavenger), with pieceMargin to spare; 0 under minHugeFloor.
func pieceSize(floor, inUse int64) int64 {
	if floor < minHugeFloor {
		return 0
	}
	return max(0, min(floor/4*HugeShare, floor/100*95-inUse-pieceMargin))
}

// hugePiece is pieceSize for the memory the runtime holds now: what it
// has mapped less what it has handed back (MemStats' Sys less
// HeapReleased, read through runtime/metrics, which, unlike
// runtime.ReadMemStats, neither stops the world nor flushes every
// processor's cached spans into the central lists, whose blocks are
// memory the runtime touches afresh).
func hugePiece(floor int64) int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return pieceSize(floor, int64(s[0].Value.Uint64()-s[1].Value.Uint64()))
}

// thpDisabled reports whether GODEBUG (its value godebug) turns huge
// pages off for the heap (runtime/extern.go): disablethp set to a number
// other than 0, read as the runtime reads it at start-up
// (runtime1.go, parsegodebug): left to right, a later setting over an
// earlier one, a value that is not a 32-bit number changing nothing.
func thpDisabled(godebug string) bool {
	disabled := false
	for field := range bytes.SplitSeq([]byte(godebug), []byte(",")) {
		key, value, ok := bytes.Cut(field, []byte("="))
		if !ok || string(key) != "disablethp" {
			continue
		}
		if n, err := strconv.ParseInt(string(value), 10, 32); err == nil {
			disabled = n != 0
		}
	}
	return disabled
}

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
