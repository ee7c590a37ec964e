// Package catalog tells a file-based catalog (FBC) from a bundle and says
// what reading one yields (Walker, Visit, Stats) without reading it: the
// reading, with operator-registry's declcfg, is package fbc's, which
// statuscheck-cluster links and statuscheck does not: declcfg's
// dependencies (an image-reference grammar, go-git's gitignore, gob)
// initialise in every process that links them, and statuscheck starts
// one for each bundle a pre-commit hook checks.
package catalog

import (
	"bufio"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/statuscheck/statuscheck/pkg/bundle"
)

// schemaRE is compiled when a file is first sniffed, not when the
// package initialises: every validate process initialises it, and a
// bundle directory is never sniffed.
var schemaRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)("schema"\s*:\s*"olm\.(package|channel|bundle)"|^schema:\s*["']?olm\.(package|channel|bundle))`)
})

// IsCatalog reports whether path is a file-based catalog: a file, or a
// directory without manifests/, holding olm.package, olm.channel or
// olm.bundle documents. Only the first 64 KiB of a few files are read.
func IsCatalog(path string) bool {
	st, err := os.Stat(path)
	if err != nil {
		return false
	}
	if !st.IsDir() {
		return sniff(path)
	}
	if _, err := os.Stat(filepath.Join(path, "manifests")); err == nil {
		return false
	}
	found := false
	checked := 0
	_ = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil || found || checked > 20 {
			return filepath.SkipAll
		}
		if d.IsDir() {
			if strings.Count(strings.TrimPrefix(p, path), string(filepath.Separator)) > 3 {
				return filepath.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".json", ".yaml", ".yml":
			checked++
			found = sniff(p)
		}
		return nil
	})
	return found
}

// sniff reads the head of a regular file (not a FIFO, whose open would
// block) for a catalog's schema.
func sniff(p string) bool {
	if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
		return false
	}
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 64<<10)
	n, _ := bufio.NewReader(f).Read(head)
	return schemaRE().Match(head[:n])
}

// Stats counts what a catalog held.
type Stats struct {
	Packages, Channels, Bundles int
	// WithObjects counts bundles that carry their manifests (validated);
	// the others only reference an image and are skipped.
	WithObjects int
}

// Visit receives each bundle of a catalog. path is the catalog file the
// bundle's meta came from. It may be called from several goroutines.
type Visit func(path, name string, b *bundle.Bundle) error

// Walker streams a catalog (a directory or one file) through visit;
// progress, if set, is called with the count of bundles seen so far.
// fbc.Walk is the one that reads them.
type Walker func(ctx context.Context, path string, visit Visit, progress func(int)) (Stats, error)
