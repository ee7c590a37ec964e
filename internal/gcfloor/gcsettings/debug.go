//go:build go1.27 || statuscheck_nolinkname

package gcsettings

import "runtime/debug"

// SetGCPercent is runtime/debug.SetGCPercent: it sets the GC percent
// (negative: the collector off) and returns the one before.
func SetGCPercent(percent int32) int32 { return int32(debug.SetGCPercent(int(percent))) }

// SetMemoryLimit is runtime/debug.SetMemoryLimit: it sets the soft memory
// limit (negative: unchanged) and returns the one before.
func SetMemoryLimit(limit int64) int64 { return debug.SetMemoryLimit(limit) }

// Early reports whether a package that sets the collector through this
// one initialises before the packages that allocate most: false here,
// where the import of runtime/debug holds it back (doc.go).
const Early = false
