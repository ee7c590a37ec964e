package cluster

import (
	"io"
	"testing"

	"github.com/statuscheck/statuscheck/internal/cli"
	"github.com/statuscheck/statuscheck/internal/testutil"
)

// TestHelpTextIsPlain: the cluster commands' help says what they do, with
// no issue numbers, source paths, Go identifiers of statuscheck's
// packages, test names or numbered sections (testutil.InternalText).
func TestHelpTextIsPlain(t *testing.T) {
	for _, c := range Commands(cli.Env{Stdout: io.Discard, Stderr: io.Discard, Exit: func(int) {}}) {
		testutil.PlainHelp(t, c)
	}
}
