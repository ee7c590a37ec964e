package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/shlex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestREADMEWalkthrough runs the README's "Adopt it on your bundle"
// section as a user would read it: every command of its sh blocks in
// order, in a directory of its own, and after each, the output block
// shown below it (a validate run's text) compared line by line with what
// `statuscheck validate bundle/` prints on the bundle at that point. A
// shown line ending in "..." matches a line that starts with it; a line
// "..." alone skips any number of lines. The README says "Every command
// below was run as shown": this is what keeps it so.
func TestREADMEWalkthrough(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	section := sectionOf(string(readme), "## Adopt it on your bundle")
	require.NotEmpty(t, section, "the README has an \"Adopt it on your bundle\" section")
	blocks := fencedBlocks(section)
	require.GreaterOrEqual(t, len(blocks), 4, "the walkthrough has commands and the output they print")

	t.Chdir(t.TempDir())
	runIn := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Main(args, &out, &errb)
		return code, out.String(), errb.String()
	}
	commands, shown := 0, 0
	for _, b := range blocks {
		switch b.lang {
		case "sh":
			for _, line := range strings.Split(strings.TrimSpace(b.text), "\n") {
				args, err := shlex.Split(line)
				require.NoError(t, err, line)
				commands++
				switch args[0] {
				case "cp": // cp -r FIXTURE bundle
					require.Len(t, args, 4, line)
					require.NoError(t, os.CopyFS(args[3], os.DirFS(filepath.Join(repoRoot, args[2]))), line)
				case "statuscheck":
					code, stdout, stderr := runIn(args[1:]...)
					require.Equal(t, 0, code, "%s\n%s%s", line, stdout, stderr)
				default:
					t.Fatalf("the walkthrough runs only statuscheck and cp: %s", line)
				}
			}
		case "":
			shown++
			_, stdout, stderr := runIn("validate", "bundle/")
			assertShown(t, b.text, stdout+stderr)
		}
	}
	assert.GreaterOrEqual(t, commands, 4)
	assert.GreaterOrEqual(t, shown, 3)
}

type fenced struct {
	lang string
	text string
}

// sectionOf returns the text from the heading to the next heading of the
// same level.
func sectionOf(doc, heading string) string {
	i := strings.Index(doc, heading+"\n")
	if i < 0 {
		return ""
	}
	rest := doc[i+len(heading)+1:]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

func fencedBlocks(s string) []fenced {
	var out []fenced
	lines := strings.Split(s, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "```") {
			continue
		}
		lang := strings.TrimPrefix(lines[i], "```")
		var body []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			body = append(body, lines[i])
		}
		if lang == "go" {
			continue
		}
		out = append(out, fenced{lang: lang, text: strings.Join(body, "\n")})
	}
	return out
}

// assertShown: each shown line, trimmed, is a line of got, in order.
func assertShown(t *testing.T, shown, got string) {
	t.Helper()
	gotLines := strings.Split(got, "\n")
	k := 0
	skip := false
	for _, want := range strings.Split(shown, "\n") {
		want = strings.TrimSpace(want)
		if want == "..." {
			skip = true
			continue
		}
		prefix := strings.HasSuffix(want, "...")
		w := strings.TrimSuffix(want, "...")
		found := false
		for ; k < len(gotLines); k++ {
			g := strings.TrimSpace(gotLines[k])
			if g == want || (prefix && strings.HasPrefix(g, w)) {
				found = true
				k++
				break
			}
			if !skip && want != "" && g != "" {
				// Shown lines are consecutive unless "..." says otherwise.
				break
			}
		}
		if !found {
			assert.Failf(t, "the README shows a line validate does not print", "%q\nvalidate printed:\n%s", want, got)
			return
		}
		skip = false
	}
}
