package cluster

import (
	"io"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/statuscheck/statuscheck/internal/cli"
	"github.com/statuscheck/statuscheck/internal/testutil"
)

// TestHelpTextIsPlain: the cluster commands' help says what they do, with
// no issue numbers, source paths, Go identifiers of statuscheck's
// packages, test names or numbered sections (testutil.InternalText).
func TestHelpTextIsPlain(t *testing.T) {
	var walk func(c *cobra.Command)
	check := func(where, text string) {
		t.Helper()
		if hits := testutil.InternalText(text); hits != nil {
			t.Errorf("%s names internals or history %q:\n%s", where, hits, text)
		}
	}
	walk = func(c *cobra.Command) {
		name := c.CommandPath()
		check(name+": Short", c.Short)
		check(name+": Long", c.Long)
		check(name+": Example", c.Example)
		visit := func(f *pflag.Flag) { check(name+" --"+f.Name, f.Usage) }
		c.LocalFlags().VisitAll(visit)
		c.PersistentFlags().VisitAll(visit)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	for _, c := range Commands(cli.Env{Stdout: io.Discard, Stderr: io.Discard, Exit: func(int) {}}) {
		walk(c)
	}
}
