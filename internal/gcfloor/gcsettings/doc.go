// Package gcsettings sets the garbage collector's GC percent and memory
// limit, as runtime/debug's SetGCPercent and SetMemoryLimit do, for
// internal/gcfloor, without importing runtime/debug where the toolchain
// allows it.
//
// Packages initialise in import-path order as far as their imports allow
// (the linker's inittaskSym, cmd/link/internal/ld/inittask.go: at each
// step the lexically first package whose imports are done), and an
// import of runtime/debug, whose path sorts after most of the binary's
// ("github.com/…", "go.…", "google.golang.org/…", "k8s.io/…"), holds a
// package back until every package before it in that order that can go
// has gone: gcfloor was the 214th of statuscheck's 478 initialisations,
// after 2.3-2.4 MB allocated on 4 KiB pages, and its collection was of a
// heap that size. Without runtime/debug it was 91st, after 0.36 MB, and
// without strings too (whose turn comes late for the same reason) 30th,
// after 40 KB.
//
// linkname.go reaches the functions runtime/debug's call, which package
// runtime defines and pushes to runtime/debug with go:linkname on their
// definitions (runtime/mgcpacer.go), what the linker allows a reference
// to (cmd/link/internal/loader, checkLinkname); their signatures are the
// same since Go 1.19. A toolchain this has not been tried with (go1.27
// and later), or the build tag statuscheck_nolinkname, builds debug.go
// instead: runtime/debug's exported functions, and gcfloor at
// runtime/debug's turn. make test and vet run the package both ways.
package gcsettings
