// Package catalog reads file-based catalogs (FBC) with operator-registry's
// declcfg: it streams olm.package, olm.channel and olm.bundle metas, and
// turns every bundle whose CSV and CRDs ride along as olm.bundle.object
// properties into a bundle.Bundle that validate can check. Bundles are
// handed over one at a time and not kept, so a catalog of thousands of
// bundles passes through in bounded memory.
package catalog

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/manifest"
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

// Walk streams a catalog (a directory or one file) through visit.
// progress, if set, is called with the count of bundles seen so far.
func Walk(ctx context.Context, path string, visit Visit, progress func(int)) (Stats, error) {
	var stats Stats
	var seen atomic.Int64
	var mu sync.Mutex
	walk := func(file string, meta *declcfg.Meta, err error) error {
		if err != nil {
			return fmt.Errorf("reading catalog %s: %w", filepath.Join(path, file), err)
		}
		full := file
		if st, serr := os.Stat(path); serr == nil && st.IsDir() {
			full = filepath.Join(path, file)
		}
		mu.Lock()
		switch meta.Schema {
		case declcfg.SchemaPackage:
			stats.Packages++
		case declcfg.SchemaChannel:
			stats.Channels++
		case declcfg.SchemaBundle:
			stats.Bundles++
		}
		mu.Unlock()
		if meta.Schema != declcfg.SchemaBundle {
			return nil
		}
		b, err := fromMeta(full, meta)
		if err != nil {
			return err
		}
		if progress != nil {
			progress(int(seen.Add(1)))
		}
		if b == nil {
			return nil
		}
		mu.Lock()
		stats.WithObjects++
		mu.Unlock()
		return visit(full, meta.Name, b)
	}
	st, err := os.Stat(path)
	if err != nil {
		return stats, fmt.Errorf("reading catalog %s: %w", path, err)
	}
	if st.IsDir() {
		err = declcfg.WalkMetasFS(ctx, os.DirFS(path), walk, declcfg.WithConcurrency(runtime.GOMAXPROCS(0)))
	} else {
		f, ferr := os.Open(path)
		if ferr != nil {
			return stats, fmt.Errorf("reading catalog %s: %w", path, ferr)
		}
		defer f.Close()
		err = declcfg.WalkMetasReader(f, func(meta *declcfg.Meta, err error) error { return walk(path, meta, err) })
	}
	return stats, err
}

// fromMeta builds a bundle from an olm.bundle meta's olm.bundle.object
// properties, with bundle.FromDocuments as the directory loader does, so
// an entry gets every check a bundle directory gets; nil when it carries
// no objects.
func fromMeta(file string, meta *declcfg.Meta) (*bundle.Bundle, error) {
	var db declcfg.Bundle
	if err := json.Unmarshal(meta.Blob, &db); err != nil {
		return nil, fmt.Errorf("%s: olm.bundle %q: %w", file, meta.Name, err)
	}
	var docs []*manifest.Document
	var problems []bundle.Problem
	objects := 0
	for i, p := range db.Properties {
		if p.Type != property.TypeBundleObject {
			continue
		}
		objects++
		var obj property.BundleObject
		where := fmt.Sprintf("%s[%s].olm.bundle.object[%d]", file, db.Name, i)
		if err := json.Unmarshal(p.Value, &obj); err != nil {
			problems = append(problems, bundle.Problem{Code: bundle.CodeParse, Pos: manifest.Position{File: where},
				Message: fmt.Sprintf("olm.bundle.object is not {\"data\": BASE64}: %v", err)})
			continue
		}
		parsed, err := manifest.Parse(where, obj.Data, manifest.DefaultLimits)
		if err != nil || len(parsed) == 0 {
			msg := "empty olm.bundle.object"
			if err != nil {
				msg = err.Error()
			}
			problems = append(problems, bundle.Problem{Code: bundle.CodeParse, Pos: manifest.Position{File: where}, Message: msg})
			continue
		}
		docs = append(docs, parsed[0])
	}
	if objects == 0 {
		return nil, nil
	}
	b := bundle.FromDocuments(file, docs, nil)
	b.Problems = append(problems, b.Problems...)
	return b, nil
}
