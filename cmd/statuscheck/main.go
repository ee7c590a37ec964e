// Command statuscheck validates, generates and simulates the status-source
// contract of OLM bundles. See README.md.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/statuscheck/statuscheck/internal/cli"
	"github.com/statuscheck/statuscheck/internal/gcfloor"
	"github.com/statuscheck/statuscheck/internal/warmstart"
	"github.com/statuscheck/statuscheck/pkg/apiserver"
)

// peakMemoryEnv, set to 1, makes statuscheck print its peak resident memory
// (VmHWM) on stderr when it ends; the hostile-input tests read it, since
// the rusage of a child started from a large test process is polluted by
// the parent's.
const peakMemoryEnv = "STATUSCHECK_DEBUG_PEAK_MEMORY"

// warmStartEnv, set to 1, makes statuscheck print on stderr, when it
// ends, how many manifest files it parsed while it started
// (internal/warmstart) and how many of them the command took.
const warmStartEnv = "STATUSCHECK_DEBUG_WARMSTART"

func main() {
	// The apiserver code statuscheck runs, and client-go, log through
	// klog; what matters reaches the user as findings and errors.
	apiserver.SilenceLogs()
	// The collector has been off since gcfloor's initialisation; the
	// commands that run long or grow large get it back now, the others
	// when they reach gcfloor.Floor.
	if !cli.ShortLived(os.Args[1:]) {
		gcfloor.Release()
	}
	code := cli.Main(os.Args[1:], os.Stdout, os.Stderr)
	if os.Getenv(warmStartEnv) == "1" {
		parsed, taken := warmstart.Parsed().Stats()
		fmt.Fprintf(os.Stderr, "statuscheck: warm start: %d files parsed ahead, %d taken\n", parsed, taken)
	}
	if os.Getenv(peakMemoryEnv) == "1" {
		if f, err := os.Open("/proc/self/status"); err == nil {
			s := bufio.NewScanner(f)
			for s.Scan() {
				if strings.HasPrefix(s.Text(), "VmHWM:") {
					fmt.Fprintf(os.Stderr, "statuscheck: peak memory %s\n", strings.TrimSpace(strings.TrimPrefix(s.Text(), "VmHWM:")))
				}
			}
			f.Close()
		}
	}
	os.Exit(code)
}
