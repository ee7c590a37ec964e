// Package testutil finds the shared test data: the repository root and the
// corpus of real bundles beside the project (../shared/corpus/bundles).
package testutil

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// RepoRoot is the absolute path of the repository checkout.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Deps is `go list -deps` of pkg, a package pattern relative to the
// repository root ("./cmd/statuscheck"): every package it links. It fails
// the test on an answer too short to be a binary's whole graph.
func Deps(tb testing.TB, pkg string) []string {
	tb.Helper()
	cmd := exec.Command("go", "list", "-deps", pkg)
	cmd.Dir = RepoRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr.Bytes())
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		tb.Fatalf("go list -deps %s gave %d packages; expected its whole graph", pkg, len(deps))
	}
	return deps
}

// CorpusDir returns the directory of real bundles: $STATUSCHECK_CORPUS, or
// ../shared/corpus/bundles beside the checkout, as every developer machine
// and CI run has it. A checkout without it (a clone in a temporary folder)
// skips the corpus tests rather than failing them.
func CorpusDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("STATUSCHECK_CORPUS")
	if dir == "" {
		dir = filepath.Join(RepoRoot(), "..", "shared", "corpus", "bundles")
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		tb.Skipf("corpus of real bundles not found at %s (set STATUSCHECK_CORPUS)", dir)
	}
	return dir
}

// CorpusBundles lists the corpus bundle directories, sorted.
func CorpusBundles(tb testing.TB) []string {
	tb.Helper()
	dir := CorpusDir(tb)
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatalf("reading corpus: %v", err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		tb.Fatalf("corpus %s holds no bundles", dir)
	}
	return out
}

// WriteCatalog writes a file-based catalog of n bundles into dir, each
// carrying the protected bundle's CSV and CRD (clean: its upgrade is held)
// as olm.bundle.object properties,
// ten bundles to a package.
func WriteCatalog(tb testing.TB, dir string, n int) {
	tb.Helper()
	root := RepoRoot()
	csv, err := os.ReadFile(filepath.Join(root, "testdata/bundles/protected/manifests/cool-operator.clusterserviceversion.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	crd, err := os.ReadFile(filepath.Join(root, "testdata/bundles/protected/manifests/cool.operators.corp_cooloperators.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	csv64, crd64 := base64.StdEncoding.EncodeToString(csv), base64.StdEncoding.EncodeToString(crd)
	for p := 0; p < (n+9)/10; p++ {
		pkg := fmt.Sprintf("pkg-%04d", p)
		if err := os.MkdirAll(filepath.Join(dir, pkg), 0o755); err != nil {
			tb.Fatal(err)
		}
		f, err := os.Create(filepath.Join(dir, pkg, "catalog.json"))
		if err != nil {
			tb.Fatal(err)
		}
		enc := json.NewEncoder(f)
		must := func(err error) {
			if err != nil {
				tb.Fatal(err)
			}
		}
		must(enc.Encode(map[string]interface{}{"schema": "olm.package", "name": pkg, "defaultChannel": "stable"}))
		var entries []map[string]string
		for i := 0; i < 10 && p*10+i < n; i++ {
			entries = append(entries, map[string]string{"name": fmt.Sprintf("%s.v0.%d.0", pkg, i)})
		}
		must(enc.Encode(map[string]interface{}{"schema": "olm.channel", "package": pkg, "name": "stable", "entries": entries}))
		for _, e := range entries {
			must(enc.Encode(map[string]interface{}{"schema": "olm.bundle", "name": e["name"], "package": pkg, "image": "quay.io/x/" + e["name"],
				"properties": []map[string]interface{}{
					{"type": "olm.package", "value": map[string]string{"packageName": pkg, "version": "0.1.0"}},
					{"type": "olm.bundle.object", "value": map[string]string{"data": csv64}},
					{"type": "olm.bundle.object", "value": map[string]string{"data": crd64}},
				}}))
		}
		must(f.Close())
	}
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// Binary builds cmd/statuscheck once per test binary, with
// cmd/statuscheck-cluster beside it (where statuscheck runs the cluster
// commands), into a directory that lives as long as the process, and
// returns statuscheck's path: the tests that run the real binary as a
// subprocess share it. Its directory is
// world-readable, so that tests may run it as another user. TestMain
// removes it with RemoveBinary. STATUSCHECK_BINARY, when set, names a
// binary to run instead (one of earlier code, to watch a test fail on it).
func Binary(tb testing.TB) string {
	tb.Helper()
	binOnce.Do(func() {
		if b := os.Getenv("STATUSCHECK_BINARY"); b != "" {
			// A binary built elsewhere (of earlier code, to see a test
			// fail on it); never removed.
			binPath, binErr = b, nil
			if _, err := os.Stat(b); err != nil {
				binErr = fmt.Errorf("STATUSCHECK_BINARY: %w", err)
			}
			return
		}
		dir, err := os.MkdirTemp("", "statuscheck-bin")
		if err == nil {
			err = os.Chmod(dir, 0o755)
		}
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "statuscheck")
		cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/statuscheck", "./cmd/statuscheck-cluster")
		cmd.Dir = RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("building statuscheck: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		tb.Fatal(binErr)
	}
	return binPath
}

// RemoveBinary removes what Binary built, if it built anything.
func RemoveBinary() {
	if binPath != "" && os.Getenv("STATUSCHECK_BINARY") == "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
}

// SyncBuffer is a buffer one goroutine (a subprocess's output copier, a
// recorder) writes while the test reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// ReadCRD reads an apiextensions.k8s.io/v1 CRD file of the repository
// (rel is relative to its root).
func ReadCRD(tb testing.TB, rel string) *apiextv1.CustomResourceDefinition {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(RepoRoot(), rel))
	if err != nil {
		tb.Fatal(err)
	}
	crd := &apiextv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		tb.Fatalf("%s: %v", rel, err)
	}
	return crd
}

// Long marks a test that runs a long model-checking search: make test runs
// it; make race runs the tests with -short and leaves it out (the search
// is sequential, so the race detector finds nothing there, and it would
// take it ten times as long and as much memory).
func Long(tb testing.TB) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("a long search: make test runs it (-short leaves it out)")
	}
}
