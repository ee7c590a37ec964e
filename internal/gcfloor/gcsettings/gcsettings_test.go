package gcsettings

import (
	"runtime/debug"
	"testing"
)

// TestSettingsAreRuntimeDebugs: SetGCPercent and SetMemoryLimit, in the
// implementation this build takes (linkname.go, or debug.go under the
// tag statuscheck_nolinkname), set what runtime/debug's SetGCPercent and
// SetMemoryLimit read back, and read back what those set.
func TestSettingsAreRuntimeDebugs(t *testing.T) {
	percent, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
	for _, tc := range []struct {
		name    string
		percent int32
		limit   int64
	}{
		{name: "off", percent: -1, limit: 64 << 20},
		{name: "400 under 2 GiB", percent: 400, limit: 2 << 30},
		{name: "the default", percent: 100, limit: 1<<63 - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			SetGCPercent(tc.percent)
			SetMemoryLimit(tc.limit)
			if p, l := debug.SetGCPercent(int(tc.percent)), debug.SetMemoryLimit(-1); p != int(tc.percent) || l != tc.limit {
				t.Fatalf("set %d and %d; runtime/debug reads %d and %d", tc.percent, tc.limit, p, l)
			}
			debug.SetGCPercent(int(tc.percent) + 1)
			debug.SetMemoryLimit(tc.limit - 1)
			if p, l := SetGCPercent(tc.percent), SetMemoryLimit(-1); p != tc.percent+1 || l != tc.limit-1 {
				t.Fatalf("runtime/debug set %d and %d; read back %d and %d", tc.percent+1, tc.limit-1, p, l)
			}
			SetMemoryLimit(tc.limit)
		})
	}
}
