package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/statuscheck/statuscheck/internal/testutil"
)

// The hostile-input suite runs the real binary, so that it can run as
// another user (files without read permission mean nothing to root), watch
// the process's peak memory, and kill it mid-write.

type hostile struct {
	dir string // world-readable scratch space
	bin string
}

var hostileEnv *hostile

func setupHostile(t *testing.T) *hostile {
	t.Helper()
	if hostileEnv != nil {
		return hostileEnv
	}
	dir, err := os.MkdirTemp("", "statuscheck-hostile")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	hostileEnv = &hostile{dir: dir, bin: testutil.Binary(t)}
	return hostileEnv
}

// TestMain removes what the subprocess tests left: the built binary and
// the hostile suite's scratch space.
func TestMain(m *testing.M) {
	code := m.Run()
	testutil.RemoveBinary()
	if hostileEnv != nil {
		_ = os.RemoveAll(hostileEnv.dir)
	}
	os.Exit(code)
}

var peakRE = regexp.MustCompile(`statuscheck: peak memory (\d+) kB\n`)

type runResult struct {
	code           int
	stdout, stderr string
	maxRSS         int64 // KiB
	signaled       bool
}

// exec runs the binary, as user nobody when uid is set.
func (h *hostile) exec(t *testing.T, env []string, asNobody bool, args ...string) runResult {
	t.Helper()
	cmd := exec.Command(h.bin, args...)
	cmd.Dir = h.dir
	cmd.Env = append(append(os.Environ(), "STATUSCHECK_DEBUG_PEAK_MEMORY=1"), env...)
	if asNobody {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := runResult{stdout: stdout.String(), stderr: stderr.String()}
	if m := peakRE.FindStringSubmatch(r.stderr); m != nil {
		r.maxRSS, _ = strconv.ParseInt(m[1], 10, 64)
		r.stderr = peakRE.ReplaceAllString(r.stderr, "")
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		r.signaled = true
	}
	r.code = cmd.ProcessState.ExitCode()
	if err != nil && r.code < 0 && !r.signaled {
		t.Fatalf("running %v: %v", args, err)
	}
	return r
}

// mkdir makes a world-readable directory with files.
func (h *hostile) mkdir(t *testing.T, name string, files map[string][]byte) string {
	t.Helper()
	dir := filepath.Join(h.dir, strings.ReplaceAll(t.Name(), "/", "_"), name)
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for f, data := range files {
		p := filepath.Join(dir, f)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, data, 0o644))
	}
	_ = filepath.Walk(filepath.Join(h.dir, strings.ReplaceAll(t.Name(), "/", "_")), func(p string, info os.FileInfo, err error) error {
		if err == nil && info.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	return dir
}

// good reads a file of the protected bundle, which validates clean (the
// good bundle carries the verdict's errors: nothing holds its upgrade).
func good(t *testing.T, name string) []byte {
	data, err := os.ReadFile(filepath.Join(repoRoot, "testdata/bundles/protected", name))
	require.NoError(t, err)
	return data
}

const (
	csvPath = "manifests/cool-operator.clusterserviceversion.yaml"
	crdPath = "manifests/cool.operators.corp_cooloperators.yaml"
	annPath = "metadata/annotations.yaml"
)

func bomCRLF(b []byte) []byte {
	return append([]byte("\xef\xbb\xbf"), bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n"))...)
}

const aliasBombYAML = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lol}\ndata:\n  a: &a [l,l,l,l,l,l,l,l,l]\n  b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n  c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n  d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n  e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n  f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n  g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n  h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"

func traceOf(steps string) []byte {
	return []byte("apiVersion: statuscheck.operatorframework.io/v1alpha1\nkind: StatusTrace\nstatusSource: {apiVersion: cool.operators.corp/v1beta1, kind: CoolOperator, name: cool-operator}\nstatusSubresource: true\ninitial:\n  apiVersion: cool.operators.corp/v1beta1\n  kind: CoolOperator\n  metadata: {name: cool-operator, generation: 1}\n  status: {conditions: [{type: Upgradeable, status: \"True\", observedGeneration: 1}]}\nsteps:\n" + steps)
}

// TestHostileInput runs validate, generate and simulate over each hostile
// input: each gets exit 1 or 2 and a message naming the file, none
// panics, and memory stays bounded; BOM, CRLF and JSON simply work.
func TestHostileInput(t *testing.T) {
	h := setupHostile(t)
	csv, crd, ann := good(t, csvPath), good(t, crdPath), good(t, annPath)
	huge := append([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n  big: "), bytes.Repeat([]byte("x"), 40<<20)...)
	latin1 := bytes.Replace(csv, []byte("Cool Operators Corp"), []byte("Cool Op\xe9rateurs Corp"), 1)
	csvJSON, crdJSON := jsonOf(t, csv), jsonOf(t, crd)

	type check struct {
		args  []string
		code  int
		names string // what the output must name ("" for none)
	}
	tests := []struct {
		name   string
		bundle map[string][]byte
		trace  []byte
		checks func(bundle, csvFile, trace string) []check
	}{
		{name: "binary bytes",
			bundle: map[string][]byte{csvPath: []byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00"), crdPath: crd, annPath: ann},
			trace:  []byte("\x00\x01\x02\x03binary"),
			checks: func(b, c, tr string) []check {
				return []check{{[]string{"validate", b}, 1, c}, {[]string{"generate", b}, 2, c}, {[]string{"generate", c}, 2, c}, {[]string{"simulate", tr}, 2, tr}}
			}},
		{name: "a BOM and CRLF line endings work",
			bundle: map[string][]byte{csvPath: bomCRLF(csv), crdPath: bomCRLF(crd), annPath: bomCRLF(ann)},
			trace:  bomCRLF(traceOf("- {actor: olm, check: {expect: Allow}}\n")),
			checks: func(b, c, tr string) []check {
				return []check{{[]string{"validate", "--fail-on", "info", b}, 0, ""}, {[]string{"generate", "--check", b}, 0, ""}, {[]string{"simulate", tr}, 0, ""}}
			}},
		{name: "JSON instead of YAML works",
			bundle: map[string][]byte{"manifests/csv.json": csvJSON, "manifests/crd.json": crdJSON, annPath: ann},
			trace:  jsonOf(t, traceOf("- {actor: olm, check: {expect: Allow}}\n")),
			checks: func(b, c, tr string) []check {
				return []check{{[]string{"validate", "--fail-on", "info", b}, 0, ""}, {[]string{"generate", "--check", b}, 0, ""}, {[]string{"simulate", tr}, 0, ""}}
			}},
		{name: "text that is not UTF-8",
			bundle: map[string][]byte{csvPath: latin1, crdPath: crd, annPath: ann},
			trace:  append(traceOf(""), []byte("- {actor: olm, check: {}} # caf\xe9\n")...),
			checks: func(b, c, tr string) []check {
				return []check{{[]string{"validate", b}, 1, c}, {[]string{"generate", c}, 2, c}, {[]string{"simulate", tr}, 2, tr}}
			}},
		{name: "an alias bomb",
			bundle: map[string][]byte{csvPath: csv, crdPath: crd, annPath: ann, "manifests/bomb.yaml": []byte(aliasBombYAML)},
			trace:  append([]byte(strings.Replace(aliasBombYAML, "kind: ConfigMap", "kind: CoolOperator", 1)), '\n'),
			checks: func(b, c, tr string) []check {
				return []check{{[]string{"validate", b}, 1, "bomb.yaml"}, {[]string{"simulate", tr}, 2, tr}}
			}},
		{name: "a 40 MB manifest",
			bundle: map[string][]byte{csvPath: csv, crdPath: crd, annPath: ann, "manifests/huge.yaml": huge},
			trace:  huge,
			checks: func(b, c, tr string) []check {
				return []check{{[]string{"validate", b}, 1, "huge.yaml"}, {[]string{"generate", filepath.Join(b, "manifests/huge.yaml")}, 2, "huge.yaml"}, {[]string{"simulate", tr}, 2, tr}}
			}},
		{name: "a CRD of 20,000 rules the apiserver refuses",
			// Not structural: refused before a rule is compiled, which
			// building its resource beside the validation would do.
			bundle: map[string][]byte{csvPath: csv, crdPath: testutil.CoolCRDWithRules(t, 20000), annPath: ann},
			checks: func(b, c, tr string) []check {
				return []check{{[]string{"validate", b}, 1, filepath.Base(crdPath)}}
			}},
		{name: "two CSVs",
			bundle: map[string][]byte{csvPath: csv, "manifests/z.clusterserviceversion.yaml": csv, crdPath: crd, annPath: ann},
			checks: func(b, c, tr string) []check {
				return []check{{[]string{"validate", b}, 1, "z.clusterserviceversion.yaml"}, {[]string{"generate", b}, 2, "z.clusterserviceversion.yaml"},
					{[]string{"simulate", "--bundle", b, filepath.Join(repoRoot, "testdata/traces/seed.yaml")}, 2, "z.clusterserviceversion.yaml"}}
			}},
		{name: "an empty directory",
			bundle: map[string][]byte{},
			checks: func(b, c, tr string) []check {
				return []check{{[]string{"validate", b}, 2, b}, {[]string{"generate", b}, 2, b}, {[]string{"simulate", b}, 2, b},
					{[]string{"simulate", "--bundle", b, filepath.Join(repoRoot, "testdata/traces/seed.yaml")}, 2, b}}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := h.mkdir(t, "bundle", tt.bundle)
			tr := filepath.Join(b, "..", "trace.yaml")
			if tt.trace != nil {
				require.NoError(t, os.WriteFile(tr, tt.trace, 0o644))
			}
			csvFile := filepath.Join(b, csvPath)
			for _, c := range tt.checks(b, csvFile, tr) {
				r := h.exec(t, nil, false, c.args...)
				out := r.stdout + r.stderr
				assert.Equal(t, c.code, r.code, "%v\n%s", c.args, out)
				assert.NotContains(t, out, "panic", "%v", c.args)
				assert.NotContains(t, out, "goroutine ", "%v", c.args)
				if c.names != "" {
					assert.Contains(t, out, c.names, "the message names the file: %v", c.args)
				}
				assert.Positive(t, r.maxRSS, "the peak memory was reported")
				assert.Less(t, r.maxRSS, int64(256<<10), "peak memory (KiB) of %v", c.args)
				t.Logf("%v: exit %d, peak RSS %d MiB", c.args[0], r.code, r.maxRSS>>10)
			}
		})
	}
}

// jsonOf converts a YAML manifest to indented JSON, the way a user would
// hand JSON instead.
func jsonOf(t *testing.T, data []byte) []byte {
	t.Helper()
	j, err := sigsyaml.YAMLToJSON(data)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, json.Indent(&out, j, "", "  "))
	return out.Bytes()
}

func TestSymlinksOutOfTheBundle(t *testing.T) {
	h := setupHostile(t)
	b := h.mkdir(t, "bundle", map[string][]byte{csvPath: good(t, csvPath), annPath: good(t, annPath)})
	outside := h.mkdir(t, "outside", map[string][]byte{"crd.yaml": good(t, crdPath), "csv.yaml": good(t, csvPath)})
	require.NoError(t, os.Symlink(filepath.Join(outside, "crd.yaml"), filepath.Join(b, crdPath)))
	r := h.exec(t, nil, false, "validate", b)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stdout, filepath.Join(b, crdPath)+": error bundle-symlink-escape: symlink points outside the bundle")
	r = h.exec(t, nil, false, "simulate", "--bundle", b, filepath.Join(repoRoot, "testdata/traces/seed.yaml"))
	assert.Equal(t, 2, r.code, "the CRD is not followed out of the bundle: %s", r.stderr)

	b2 := h.mkdir(t, "bundle2", map[string][]byte{crdPath: good(t, crdPath)})
	require.NoError(t, os.Symlink(filepath.Join(outside, "csv.yaml"), filepath.Join(b2, csvPath)))
	r = h.exec(t, nil, false, "generate", b2)
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, filepath.Join(b2, csvPath))
	assert.Contains(t, r.stderr, "points outside the bundle")
}

// TestUnreadableFiles takes away read permission. Root reads everything,
// so as root the binary runs as user nobody.
func TestUnreadableFiles(t *testing.T) {
	h := setupHostile(t)
	asNobody := os.Geteuid() == 0
	b := h.mkdir(t, "bundle", map[string][]byte{csvPath: good(t, csvPath), crdPath: good(t, crdPath), annPath: good(t, annPath)})
	tr := filepath.Join(b, "..", "trace.yaml")
	require.NoError(t, os.WriteFile(tr, traceOf("- {actor: olm, check: {}}\n"), 0o644))
	require.NoError(t, os.Chmod(filepath.Join(b, crdPath), 0o000))
	require.NoError(t, os.Chmod(tr, 0o000))
	r := h.exec(t, nil, asNobody, "validate", b)
	assert.Equal(t, 2, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stderr, "reading "+filepath.Join(b, crdPath)+": permission denied")
	r = h.exec(t, nil, asNobody, "simulate", tr)
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "reading "+tr+": permission denied")

	require.NoError(t, os.Chmod(filepath.Join(b, crdPath), 0o644))
	require.NoError(t, os.Chmod(filepath.Join(b, csvPath), 0o000))
	r = h.exec(t, nil, asNobody, "generate", filepath.Join(b, csvPath))
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, filepath.Join(b, csvPath))
	assert.Contains(t, r.stderr, "permission denied")
}

// TestKilledBetweenWriteAndRename kills generate -w at the worst moment:
// the new content is in the temporary file, the rename has not happened.
// The original file must be whole.
func TestKilledBetweenWriteAndRename(t *testing.T) {
	h := setupHostile(t)
	csv, err := os.ReadFile(filepath.Join(repoRoot, "testdata/bundles/rules/status-source-missing/fail", csvPath))
	require.NoError(t, err)
	b := h.mkdir(t, "bundle", map[string][]byte{csvPath: csv, crdPath: good(t, crdPath), annPath: good(t, annPath)})
	// The binary has no hook for this: ptrace stops it as it enters the
	// rename system call, and it is killed there.
	cmd := exec.Command(h.bin, "generate", "-w", b)
	cmd.Dir = h.dir
	killed, err := testutil.RunKilledAtRename(cmd)
	require.NoError(t, err)
	require.True(t, killed, "generate -w reached its rename and was killed there")
	after, err := os.ReadFile(filepath.Join(b, csvPath))
	require.NoError(t, err)
	assert.Equal(t, string(csv), string(after), "the original is intact")
	leftovers, _ := filepath.Glob(filepath.Join(b, "manifests", ".*.statuscheck-*"))
	require.Len(t, leftovers, 1, "the temporary file held the new content")
	tmp, _ := os.ReadFile(leftovers[0])
	assert.Contains(t, string(tmp), "operatorframework.io/status-source")

	r := h.exec(t, nil, false, "generate", "-w", b)
	assert.Equal(t, 0, r.code, "a rerun completes the write: %s", r.stderr)
	after, _ = os.ReadFile(filepath.Join(b, csvPath))
	assert.Contains(t, string(after), "operatorframework.io/status-source")
	r = h.exec(t, nil, false, "validate", b)
	assert.Equal(t, 1, r.code, "the leftover hidden temporary file is flagged, not silently read")
	assert.Contains(t, r.stdout, "bundle-layout")
}
