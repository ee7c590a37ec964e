package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/statuscheck/statuscheck/internal/warmstart"
)

// PeakMemoryEnv, set to 1, makes the commands (cmd/statuscheck,
// cmd/statuscheck-cluster) print their peak resident memory (VmHWM) on
// stderr when they end (ReportDebug); the hostile-input and bridge
// tests read it, since the rusage of a child started from a large test
// process is polluted by the parent's.
const PeakMemoryEnv = "STATUSCHECK_DEBUG_PEAK_MEMORY"

// WarmStartEnv, set to 1, makes the commands print on stderr, when they
// end, how many manifest files internal/warmstart parsed while they
// started and how many of them the command took (ReportDebug).
const WarmStartEnv = "STATUSCHECK_DEBUG_WARMSTART"

// ReportDebug prints, on stderr, what PeakMemoryEnv and WarmStartEnv ask
// for; Process calls it last.
func ReportDebug(stderr io.Writer) {
	if os.Getenv(WarmStartEnv) == "1" {
		parsed, taken := warmstart.Parsed().Stats()
		fmt.Fprintf(stderr, "statuscheck: warm start: %d files parsed ahead, %d taken\n", parsed, taken)
	}
	reportPeakMemory(stderr)
}

// reportPeakMemory prints the process's peak resident memory when
// PeakMemoryEnv is 1 (Linux only: it reads /proc/self/status).
func reportPeakMemory(stderr io.Writer) {
	if os.Getenv(PeakMemoryEnv) != "1" {
		return
	}
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			fmt.Fprintf(stderr, "statuscheck: peak memory %s\n", strings.TrimSpace(v))
		}
	}
}
