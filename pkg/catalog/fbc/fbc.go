// Package fbc reads file-based catalogs (FBC) with operator-registry's
// declcfg: it streams olm.package, olm.channel and olm.bundle metas, and
// turns every bundle whose CSV and CRDs ride along as olm.bundle.object
// properties into a bundle.Bundle that validate can check. Bundles are
// handed over one at a time and not kept, so a catalog of thousands of
// bundles passes through in bounded memory. Telling a catalog from a
// bundle is package catalog's, which does not link declcfg.
package fbc

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/statuscheck/statuscheck/pkg/bundle"
	"github.com/statuscheck/statuscheck/pkg/catalog"
	"github.com/statuscheck/statuscheck/pkg/manifest"
)

// Walk is a catalog.Walker.
var _ catalog.Walker = Walk

// Walk streams a catalog (a directory or one file) through visit with
// declcfg.WalkMetasFS (a directory, GOMAXPROCS files at a time) or
// declcfg.WalkMetasReader (a file); it is a catalog.Walker. progress, if
// set, is called with the count of bundles seen so far.
func Walk(ctx context.Context, path string, visit catalog.Visit, progress func(int)) (catalog.Stats, error) {
	var stats catalog.Stats
	var seen atomic.Int64
	var mu sync.Mutex
	st, err := os.Stat(path)
	if err != nil {
		return stats, fmt.Errorf("reading catalog %s: %w", path, err)
	}
	// file is relative to path for a directory, path itself for a file.
	walk := func(file string, meta *declcfg.Meta, err error) error {
		full := file
		if st.IsDir() {
			full = filepath.Join(path, file)
		}
		if err != nil {
			return fmt.Errorf("reading catalog %s: %w", full, err)
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
