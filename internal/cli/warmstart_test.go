package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/internal/gcfloor/gcsettings"
	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/internal/testutil/race"
)

// TestValidateWarmStart: statuscheck validate as a process parses its
// bundles' manifests while its packages initialise (internal/warmstart);
// this test binary parses none ahead (its arguments are not validate's).
// What the process reports is what validate reports here, for every
// bundle of the testdata, flags among the paths and, with the corpus,
// each of its bundles and the corpus as one directory of bundles. Under
// the race detector (make race) the binary is built with it too, so that
// the parse beside the package initialisation is checked for races.
func TestValidateWarmStart(t *testing.T) {
	bin := testutil.Binary(t)
	if race.Enabled {
		bin = filepath.Join(t.TempDir(), "statuscheck")
		cmd := exec.Command("go", "build", "-race", "-o", bin, "./cmd/statuscheck")
		cmd.Dir = repoRoot
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	roots, err := filepath.Glob(filepath.Join(repoRoot, "testdata", "bundles", "*", "*"))
	require.NoError(t, err)
	runs := [][]string{{"validate", "--fail-on", "info", "--", roots[0]}, {"validate", "-o", "junit", roots[0], roots[1]}}
	for _, r := range roots {
		runs = append(runs, []string{"validate", "-o", "json", r})
	}
	check := func(t *testing.T, runs [][]string) {
		for _, args := range runs {
			wantCode, wantOut, wantErr := run(t, args...)
			code, out, errOut := runBinary(t, bin, nil, args...)
			assert.Equal(t, wantErr, errOut, "%v: stderr", args)
			assert.Equal(t, wantCode, code, "%v: exit code", args)
			assert.Equal(t, wantOut, out, "%v: stdout", args)
		}
	}
	check(t, runs)
	t.Run("corpus", func(t *testing.T) {
		bundles := testutil.CorpusBundles(t)
		runs := [][]string{{"validate", "-o", "json", testutil.CorpusDir(t)}}
		for _, b := range bundles {
			runs = append(runs, []string{"validate", "-o", "json", b})
		}
		check(t, runs)
	})
}

// TestWarmStartInitOrder: in the binary, internal/warmstart initialises
// after internal/gcfloor (the collector is off when it starts parsing)
// and before the heaviest packages, whose initialisation it overlaps:
// package manifest, which it parses with, does not wait for apimachinery
// (package typed decodes).
func TestWarmStartInitOrder(t *testing.T) {
	inits := initTrace(t)
	const self = "github.com/statuscheck/statuscheck/internal/"
	at := inits.at(t, self+"warmstart")
	assert.Less(t, inits.at(t, self+"gcfloor"), at)
	for _, heavy := range []string{"k8s.io/kube-openapi/pkg/validation/strfmt", "k8s.io/apimachinery/pkg/runtime",
		"k8s.io/component-base/metrics/legacyregistry", "github.com/operator-framework/api/pkg/operators/v1alpha1"} {
		assert.Less(t, at, inits.at(t, heavy), "%s initialises before warmstart starts", heavy)
	}
}

// TestGCFloorInitialisesEarly: internal/gcfloor, which turns the
// collector off and readies the heap on huge pages, initialises before
// the packages that allocate most, and the packages before it allocate
// less than 1 MiB in all (2.4 MB when it imported runtime/debug, whose
// import path held it back; 40 KB today). A build that sets the
// collector through runtime/debug (go1.27 and later, or the tag
// statuscheck_nolinkname) does not, and is skipped.
func TestGCFloorInitialisesEarly(t *testing.T) {
	if !gcsettings.Early {
		t.Skip("this build of internal/gcfloor imports runtime/debug and initialises at its turn (internal/gcfloor/gcsettings)")
	}
	inits := initTrace(t)
	at := inits.at(t, "github.com/statuscheck/statuscheck/internal/gcfloor")
	for _, heavy := range []string{"k8s.io/kube-openapi/pkg/validation/strfmt", "github.com/distribution/reference", "google.golang.org/protobuf/types/descriptorpb"} {
		assert.Less(t, at, inits.at(t, heavy), "%s initialises before gcfloor", heavy)
	}
	before := 0
	for _, in := range inits[:at] {
		before += in.bytes
	}
	assert.Less(t, before, 1<<20, "bytes allocated before gcfloor initialises")
}

// initLine is a package's initialisation, as GODEBUG=inittrace=1 prints
// it: its import path and the bytes it allocated.
type initLine struct {
	pkg   string
	bytes int
}

type initLines []initLine

// initTrace is the binary's initialisations for --help, in order.
func initTrace(t *testing.T) initLines {
	t.Helper()
	code, _, errOut := runBinary(t, testutil.Binary(t), []string{"GODEBUG=inittrace=1"}, "--help")
	require.Zero(t, code, errOut)
	// init internal/bytealg @0.001 ms, 0 ms clock, 0 bytes, 0 allocs
	re := regexp.MustCompile(`(?m)^init (\S+) @.*, (\d+) bytes, \d+ allocs$`)
	var inits initLines
	for _, m := range re.FindAllStringSubmatch(errOut, -1) {
		n, err := strconv.Atoi(m[2])
		require.NoError(t, err)
		inits = append(inits, initLine{pkg: m[1], bytes: n})
	}
	require.NotEmpty(t, inits, "no inittrace lines in %q", errOut)
	return inits
}

// at is the index of pkg's initialisation; the test fails without one.
func (l initLines) at(t *testing.T, pkg string) int {
	t.Helper()
	i := slices.IndexFunc(l, func(in initLine) bool { return in.pkg == pkg })
	require.NotEqual(t, -1, i, "no initialisation of %s", pkg)
	return i
}

// TestWarmStartUsed: what the binary parses while it starts is what the
// validate command takes, all of it (each file of one bundle is read),
// and in at least one of five runs there is something (how much depends
// on how soon the parse gets a core).
func TestWarmStartUsed(t *testing.T) {
	re := regexp.MustCompile(`statuscheck: warm start: (\d+) files parsed ahead, (\d+) taken\n`)
	most := 0
	for range 5 {
		code, _, errOut := runBinary(t, testutil.Binary(t), []string{"STATUSCHECK_DEBUG_WARMSTART=1"}, "validate", filepath.Join(repoRoot, "testdata", "bundles", "good"))
		require.Equal(t, 1, code, errOut) // findings
		m := re.FindStringSubmatch(errOut)
		require.NotNil(t, m, "no warm start line in %q", errOut)
		assert.Equal(t, m[1], m[2], "files parsed ahead but not taken")
		n, _ := strconv.Atoi(m[1])
		most = max(most, n)
	}
	assert.Positive(t, most, "nothing parsed ahead in five runs")
}

// runBinary runs a statuscheck binary from the repository root with env
// added to the test's, and returns its exit code and output.
func runBinary(t *testing.T, bin string, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%v", args)
		code = ee.ExitCode()
	}
	return code, out.String(), errb.String()
}
