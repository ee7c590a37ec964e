package gcfloor

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func TestTHPMode(t *testing.T) {
	for _, tc := range []struct {
		name string
		data string
		want string
	}{
		{name: "madvise, as most distributions ship it", data: "always [madvise] never\n", want: "madvise"},
		{name: "always", data: "[always] madvise never\n", want: "always"},
		{name: "never", data: "always madvise [never]\n", want: "never"},
		{name: "no brackets", data: "always madvise never\n", want: ""},
		{name: "an open bracket only", data: "always [madvise never\n", want: ""},
		{name: "empty", data: "", want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := thpMode([]byte(tc.data)); got != tc.want {
				t.Errorf("thpMode(%q) = %q, want %q", tc.data, got, tc.want)
			}
		})
	}
}

func TestTHPSize(t *testing.T) {
	for _, tc := range []struct {
		name string
		data string
		want uintptr
	}{
		{name: "2 MiB, x86-64 and arm64 with 4 KiB pages", data: "2097152\n", want: 2 << 20},
		{name: "512 MiB, arm64 with 64 KiB pages", data: "536870912\n", want: 512 << 20},
		{name: "not a power of two", data: "3000000\n", want: 0},
		{name: "too small", data: "4096\n", want: 0},
		{name: "not a number", data: "2M\n", want: 0},
		{name: "empty", data: "", want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := thpSize([]byte(tc.data)); got != tc.want {
				t.Errorf("thpSize(%q) = %d, want %d", tc.data, got, tc.want)
			}
		})
	}
}

const sampleMaps = `00400000-01a00000 r-xp 00000000 fe:01 123 /usr/local/bin/statuscheck
c000000000-c000400000 rw-p 00000000 00:00 0
c000400000-c004000000 ---p 00000000 00:00 0
7f0934000000-7f0936000000 rw-p 00000000 00:00 0 [anon: Go: heap reservation]
garbage line
7ffc1000-7ffc0000 rw-p 00000000 00:00 0
`

func TestMappingStart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		addr   uintptr
		want   uintptr
		wantOK bool
	}{
		{name: "inside the heap's first mapping", addr: 0xc000123456, want: 0xc000000000, wantOK: true},
		{name: "the first byte of a mapping", addr: 0xc000400000, want: 0xc000400000, wantOK: true},
		{name: "a named mapping", addr: 0x7f0935000000, want: 0x7f0934000000, wantOK: true},
		{name: "between mappings", addr: 0x20000000, wantOK: false},
		{name: "a line whose end is below its start holds nothing", addr: 0x7ffc0800, wantOK: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := mappingStart([]byte(sampleMaps), tc.addr)
			if ok != tc.wantOK || got != tc.want {
				t.Errorf("mappingStart(%#x) = %#x, %v; want %#x, %v", tc.addr, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestHugeRange(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name           string
		start, end     uintptr
		size           uintptr
		wantLo, wantHi uintptr
	}{
		{name: "rounded inwards", start: 3 * mib, end: 100*mib + 5, size: 2 * mib, wantLo: 4 * mib, wantHi: 100 * mib},
		{name: "already aligned", start: 2 * mib, end: 8 * mib, size: 2 * mib, wantLo: 2 * mib, wantHi: 8 * mib},
		{name: "no whole huge page", start: 3 * mib, end: 5 * mib, size: 2 * mib},
		{name: "no huge page size", start: 0, end: 8 * mib, size: 0},
		{name: "rounding up would wrap", start: ^uintptr(0) - mib, end: ^uintptr(0), size: 2 * mib},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi := hugeRange(tc.start, tc.end, tc.size)
			if lo != tc.wantLo || hi != tc.wantHi {
				t.Errorf("hugeRange(%#x, %#x, %#x) = [%#x, %#x), want [%#x, %#x)", tc.start, tc.end, tc.size, lo, hi, tc.wantLo, tc.wantHi)
			}
		})
	}
}

// FuzzMappingStart: whatever /proc/self/maps holds, a start found is
// that of a line holding the address, no more than it.
func FuzzMappingStart(f *testing.F) {
	f.Add([]byte(sampleMaps), uint64(0xc000123456))
	f.Add([]byte("0-ffffffffffffffff rw-p\n"), uint64(1))
	f.Add([]byte("10-20\n20-30 x\n"), uint64(0x20))
	f.Fuzz(func(t *testing.T, maps []byte, addr uint64) {
		start, ok := mappingStart(maps, uintptr(addr))
		if !ok {
			if start != 0 {
				t.Fatalf("no mapping, start %#x", start)
			}
			return
		}
		if uint64(start) > addr || !bytes.Contains(bytes.ToLower(maps), []byte(fmt.Sprintf("%x-", start))) {
			t.Fatalf("start %#x for %#x in %q", start, addr, maps)
		}
	})
}

// FuzzTHPFiles: whatever the kernel's files hold, the mode read is one
// bracketed word or nothing, and the size a power of two or 0.
func FuzzTHPFiles(f *testing.F) {
	for _, s := range []string{"always [madvise] never\n", "[always] madvise never", "2097152\n", "[", "]", "[ ]", "0"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if m := thpMode(data); m != "" && (strings.ContainsAny(m, " \t\n[]") || !bytes.Contains(data, []byte("["+m+"]"))) {
			t.Fatalf("mode %q from %q", m, data)
		}
		if n := thpSize(data); n != 0 && (n&(n-1) != 0 || n < 64<<10) {
			t.Fatalf("size %d from %q", n, data)
		}
	})
}
