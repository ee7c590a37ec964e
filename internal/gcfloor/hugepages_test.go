package gcfloor

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"unsafe"
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
	if unsafe.Sizeof(uintptr(0)) < 8 {
		t.Skip("the addresses are 64-bit")
	}
	for _, tc := range []struct {
		name   string
		addr   uint64
		want   uint64
		wantOK bool
	}{
		{name: "inside the heap's first mapping", addr: 0xc000123456, want: 0xc000000000, wantOK: true},
		{name: "the first byte of a mapping", addr: 0xc000400000, want: 0xc000400000, wantOK: true},
		{name: "a named mapping", addr: 0x7f0935000000, want: 0x7f0934000000, wantOK: true},
		{name: "between mappings", addr: 0x20000000, wantOK: false},
		{name: "a line whose end is below its start holds nothing", addr: 0x7ffc0800, wantOK: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := mappingStart([]byte(sampleMaps), uintptr(tc.addr))
			if ok != tc.wantOK || uint64(got) != tc.want {
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
		{name: "end below one huge page", start: 0, end: mib, size: 2 * mib},
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
// that of the first line whose range holds the address, and no start is
// found where no line's range holds it.
func FuzzMappingStart(f *testing.F) {
	f.Add([]byte(sampleMaps), uint64(0xc000123456))
	f.Add([]byte("0-ffffffffffffffff rw-p\n"), uint64(1))
	f.Add([]byte("10-20\n20-30 x\n"), uint64(0x20))
	f.Fuzz(func(t *testing.T, maps []byte, addr uint64) {
		if uint64(uintptr(addr)) != addr {
			return
		}
		start, ok := mappingStart(maps, uintptr(addr))
		var want uint64
		wantOK := false
		for _, line := range strings.Split(string(maps), "\n") {
			span, _, _ := strings.Cut(line, " ")
			lo, hi, found := strings.Cut(span, "-")
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			if found && err1 == nil && err2 == nil && a <= addr && addr < b {
				want, wantOK = a, true
				break
			}
		}
		if ok != wantOK || uint64(start) != want {
			t.Fatalf("mappingStart(%#x) = %#x, %v; the first line holding it starts at %#x (%v) in %q", addr, start, ok, want, wantOK, maps)
		}
	})
}

// FuzzTHPSettings: whatever the kernel's files and GODEBUG hold, the
// mode read is one bracketed word or nothing, the size a power of two or
// 0, and huge pages are off only where GODEBUG sets disablethp.
func FuzzTHPSettings(f *testing.F) {
	for _, s := range []string{"always [madvise] never\n", "[always] madvise never", "2097152\n", "[", "]", "[ ]", "0",
		"disablethp=1", "disablethp=1,disablethp=0", "gctrace=1,disablethp=2", "disablethp=x"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if m := thpMode(data); m != "" && (strings.ContainsAny(m, " \t\n[]") || !bytes.Contains(data, []byte("["+m+"]"))) {
			t.Fatalf("mode %q from %q", m, data)
		}
		if n := thpSize(data); n != 0 && (n&(n-1) != 0 || n < 64<<10) {
			t.Fatalf("size %d from %q", n, data)
		}
		if thpDisabled(string(data)) && !bytes.Contains(data, []byte("disablethp=")) {
			t.Fatalf("huge pages off for %q", data)
		}
	})
}

func TestTHPDisabled(t *testing.T) {
	for _, tc := range []struct {
		name    string
		godebug string
		want    bool
	}{
		{name: "unset", godebug: "", want: false},
		{name: "set", godebug: "disablethp=1", want: true},
		{name: "another number", godebug: "disablethp=2", want: true},
		{name: "among others", godebug: "gctrace=1,disablethp=1,madvdontneed=1", want: true},
		{name: "set, then unset", godebug: "disablethp=1,disablethp=0", want: false},
		{name: "unset, then set", godebug: "disablethp=0,disablethp=1", want: true},
		{name: "not a number changes nothing", godebug: "disablethp=1,disablethp=yes", want: true},
		{name: "a longer key", godebug: "xdisablethp=1", want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := thpDisabled(tc.godebug); got != tc.want {
				t.Errorf("thpDisabled(%q) = %v, want %v", tc.godebug, got, tc.want)
			}
		})
	}
}

func TestPieceSize(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name  string
		floor int64
		inUse int64
		want  int64
	}{
		{name: "the default floor: three quarters", floor: 128 * mib, inUse: 10 * mib, want: 96 * mib},
		{name: "the default floor, much in use: under 95% of it", floor: 128 * mib, inUse: 30 * mib, want: 128*mib/100*95 - 30*mib - 4*mib},
		{name: "the least floor it works under", floor: 64 * mib, inUse: 10 * mib, want: 64*mib/100*95 - 14*mib},
		{name: "under the least floor: none", floor: 64*mib - 1, inUse: 0, want: 0},
		{name: "more in use than the floor: none", floor: 128 * mib, inUse: 200 * mib, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pieceSize(tc.floor, tc.inUse); got != tc.want {
				t.Errorf("pieceSize(%d, %d) = %d, want %d", tc.floor, tc.inUse, got, tc.want)
			}
		})
	}
}
