//go:build !go1.27 && !statuscheck_nolinkname

package gcsettings

import _ "unsafe" // for go:linkname

// SetGCPercent is runtime/debug.SetGCPercent: it sets the GC percent
// (negative: the collector off) and returns the one before.
//
//go:linkname SetGCPercent runtime/debug.setGCPercent
func SetGCPercent(percent int32) int32

// SetMemoryLimit is runtime/debug.SetMemoryLimit: it sets the soft memory
// limit (negative: unchanged) and returns the one before.
//
//go:linkname SetMemoryLimit runtime/debug.setMemoryLimit
func SetMemoryLimit(limit int64) int64

// Early reports whether a package that sets the collector through this
// one, and imports only standard packages whose turn comes early,
// initialises before the packages that allocate most: true here, false
// where debug.go is built.
const Early = true
