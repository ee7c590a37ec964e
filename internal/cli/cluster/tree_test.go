package cluster

import (
	gocontext "context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/shlex"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/statuscheck/statuscheck/pkg/bridge/controller"
	"github.com/statuscheck/statuscheck/pkg/result"
)

// recipeCommands are the statuscheck command lines of a document's fenced
// sh block after marker ("" for every sh block).
func recipeCommands(t *testing.T, readme, marker string) [][]string {
	t.Helper()
	text := readme
	if marker != "" {
		i := strings.Index(readme, marker)
		require.True(t, i >= 0, "the document has no %q", marker)
		text = readme[i:]
		j := strings.Index(text, "```sh\n")
		require.True(t, j >= 0)
		end := strings.Index(text[j+6:], "```")
		text = text[j : j+6+end+3]
	}
	var out [][]string
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(text, -1) {
		for _, line := range strings.Split(strings.ReplaceAll(block[1], "\\\n", " "), "\n") {
			line = strings.TrimSpace(line)
			if !strings.HasPrefix(line, "statuscheck ") {
				continue
			}
			words, err := shlex.Split(line) // drops the # comment
			require.NoError(t, err, line)
			for len(words) > 0 && (words[len(words)-1] == "&" || strings.HasPrefix(words[len(words)-1], ">")) {
				words = words[:len(words)-1]
			}
			if k := wordIndex(words, ">"); k >= 0 {
				words = words[:k]
			}
			out = append(out, words)
		}
	}
	return out
}

func wordIndex(words []string, w string) int {
	for i, x := range words {
		if x == w {
			return i
		}
	}
	return -1
}

// parseLine parses a statuscheck command line with the real command tree:
// the command, its flags and their values, the flag groups, its
// arguments. Nothing runs.
func parseLine(words []string) error {
	root := tree()
	cmd, rest, err := root.Find(words[1:])
	if err != nil {
		return err
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	if err := cmd.ValidateFlagGroups(); err != nil {
		return err
	}
	return cmd.ValidateArgs(cmd.Flags().Args())
}

// TestItemRecordUpgradeRecipe: the recipe for recording a real upgrade
// (docs/commands.md) records the CR and the CSVs, then simulates the
// recording, and every statuscheck command in it, and in every sh block of
// the README and of docs/commands.md, parses with the real command tree.
func TestItemRecordUpgradeRecipe(t *testing.T) {
	doc := func(name string) string {
		data, err := os.ReadFile(filepath.Join(repoRoot, name))
		require.NoError(t, err)
		return string(data)
	}
	readme, commands := doc("README.md"), doc(filepath.Join("docs", "commands.md"))
	recipe := recipeCommands(t, commands, "<!-- record-upgrade-recipe:")
	require.Len(t, recipe, 2, "record, then simulate: %q", recipe)
	rec, sim := recipe[0], recipe[1]
	assert.Equal(t, "record", rec[1])
	assert.Equal(t, "simulate", sim[1])
	out := rec[wordIndex(rec, "-o")+1]
	assert.Equal(t, out, sim[len(sim)-1], "simulate replays what record wrote")
	all := slices.Concat(recipe, recipeCommands(t, readme, ""), recipeCommands(t, commands, ""))
	require.Greater(t, len(all), 20, "the README's and docs/commands.md's commands are read")
	for _, words := range all {
		assert.NoError(t, parseLine(words), "docs: %s", strings.Join(words, " "))
	}
	// The test can fail: a flag the tree does not have is an error.
	assert.Error(t, parseLine([]string{"statuscheck", "record", "--watch-csvs"}))
	assert.Error(t, parseLine([]string{"statuscheck", "record", "--crd", "x.yaml"}), "a flag group")
}

// valueNamePattern is a flag's value name as --help shows it: an upper-case
// valueNamePattern (FILE, GROUP/VERSION, GROUP/VERSION/KIND[/NAMESPACE]/NAME)
// or an enum's values (text|json).
var valueNamePattern = regexp.MustCompile(`^([A-Z][A-Z0-9_]*([/\[\]]+[A-Z0-9_]*)*\]?|[A-Za-z0-9-]+(\|[A-Za-z0-9-]+)+)$`)

// TestItemFlagValueNames walks the command tree: pflag takes a flag's
// value name from the first back-quoted word of its usage, else its type
// (string, int, duration); --help must show a valueNamePattern or the enum.
func TestItemFlagValueNames(t *testing.T) {
	root := tree()
	var walk func(*cobra.Command)
	seen := 0
	walk = func(c *cobra.Command) {
		check := func(f *pflag.Flag) {
			seen++
			name, usage := pflag.UnquoteUsage(f)
			if name == "" {
				return // a boolean
			}
			assert.Regexp(t, valueNamePattern, name, "%s --%s shows %q (usage %q)", c.CommandPath(), f.Name, name, usage)
		}
		c.LocalFlags().VisitAll(check)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	assert.Greater(t, seen, 40)
	code, stdout, _ := run(t, "generate", "--help")
	require.Equal(t, 0, code)
	assert.Regexp(t, `\n\s+--bridge IMAGE\s`, stdout)
	for _, bad := range []string{"string", "int", "duration", "strings", "statuscheck"} {
		assert.False(t, valueNamePattern.MatchString(bad), bad)
	}
}

// notKubernetes is an HTTPS server that answers 404 to everything, and a
// kubeconfig that trusts it.
func notKubernetes(t *testing.T) (kubeconfig, url string) {
	t.Helper()
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: srv.URL,
		CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u", Namespace: "cool"}
	kc.CurrentContext = "c"
	p := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, p))
	return p, srv.URL
}

// TestItemNotAnAPIServer: an HTTPS endpoint that answers 404 everywhere is
// not "a CRD not installed": record and the bridge say it is no
// Kubernetes apiserver.
func TestItemNotAnAPIServer(t *testing.T) {
	kc, url := notKubernetes(t)
	want := "the server at " + url + " is not a Kubernetes apiserver: no /version or /api discovery (/version answers 404 Not Found, /api answers 404 Not Found)"
	code, stdout, stderr := run(t, "record", "--kubeconfig", kc, "--bundle", "testdata/bundles/good")
	assert.Equal(t, result.ExitFailure, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, want)
	assert.NotContains(t, stderr, "CRD installed")
	assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)

	// The bridge without a CRD resolves the kind on the cluster, from the
	// pod's copy of the annotation or from the running CSV.
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	require.NoError(t, err)
	for _, annotation := range []string{`{"apiVersion":"cool.operators.corp/v1beta1","kind":"CoolOperator","name":"cool-operator"}`, ""} {
		opts := controller.Options{Namespace: "cool", ConditionName: "cool.v1"}
		err = clusterSource(gocontext.Background(), cfg, annotation, &opts)
		require.Error(t, err)
		assert.Contains(t, err.Error(), want, "annotation %q", annotation)
		assert.NotContains(t, err.Error(), "CRD of CoolOperator installed")
	}
}
