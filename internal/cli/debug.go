package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

// PeakMemoryEnv, set to 1, makes the commands (cmd/statuscheck,
// cmd/statuscheck-cluster) print their peak resident memory (VmHWM) on
// stderr when they end (ReportPeakMemory); the hostile-input and bridge
// tests read it, since the rusage of a child started from a large test
// process is polluted by the parent's.
const PeakMemoryEnv = "STATUSCHECK_DEBUG_PEAK_MEMORY"

// ReportPeakMemory prints the process's peak resident memory on stderr
// when PeakMemoryEnv is 1 (Linux only: it reads /proc/self/status).
func ReportPeakMemory(stderr io.Writer) {
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
