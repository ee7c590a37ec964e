package cli

import (
	"bytes"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/internal/testutil"
)

// TestHelpTextIsPlain: every command's help (its short and long text,
// examples and flag usages) and `statuscheck rules` in each format say
// what the tool or OLM does, with no issue or pull-request numbers,
// source paths, Go identifiers of statuscheck's packages, test names or
// numbered sections (testutil.InternalText).
func TestHelpTextIsPlain(t *testing.T) {
	var out, errb bytes.Buffer
	root := Command(&out, &errb, Options{})
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	check := func(where, text string) {
		t.Helper()
		if hits := testutil.InternalText(text); hits != nil {
			t.Errorf("%s names internals or history %q:\n%s", where, hits, text)
		}
	}
	var walk func(c *cobra.Command)
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
	walk(root)

	for _, format := range []string{"text", "json", "markdown"} {
		code, stdout, stderr := run(t, "rules", "-o", format)
		require.Equal(t, 0, code, stderr)
		check("rules -o "+format, stdout)
	}
}
