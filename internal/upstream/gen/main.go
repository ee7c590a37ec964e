// Command gen writes internal/upstream's copies of the apiserver's
// registry strategies from the module cache (package upstream says why):
//
//	go generate ./internal/upstream    (or make upstream)
//
// Each file is written whole or not at all (a temporary file renamed over
// it), and a file in a copy's directory that the copies no longer have is
// removed. It imports package upstream alone, not pkg/generate's writer:
// the copies need not compile for it to make them again.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/statuscheck/statuscheck/internal/upstream"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(2)
	}
}

func run() error {
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", upstream.ImportPath).Output()
	if err != nil {
		return fmt.Errorf("finding %s: %w", upstream.ImportPath, err)
	}
	dir := strings.TrimSpace(string(out))
	mods, err := upstream.Modules(dir)
	if err != nil {
		return err
	}
	files, err := upstream.Generate(mods)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	pkgs := map[string]bool{}
	for _, name := range names {
		pkgs[filepath.Dir(name)] = true
		if err := write(filepath.Join(dir, filepath.FromSlash(name)), files[name]); err != nil {
			return err
		}
	}
	for pkg := range pkgs {
		entries, err := os.ReadDir(filepath.Join(dir, pkg))
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.IsDir() || slices.Contains(names, pkg+"/"+e.Name()) {
				continue
			}
			if err := os.Remove(filepath.Join(dir, pkg, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

func write(name string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), ".gen-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return os.Rename(tmp.Name(), name)
}
