package cli

import (
	"bytes"
	"testing"

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
	testutil.PlainHelp(t, root)

	for _, format := range []string{"text", "json", "markdown"} {
		code, stdout, stderr := run(t, "rules", "-o", format)
		require.Equal(t, 0, code, stderr)
		if hits := testutil.InternalText(stdout); hits != nil {
			t.Errorf("rules -o %s names internals or history %q", format, hits)
		}
	}
}
