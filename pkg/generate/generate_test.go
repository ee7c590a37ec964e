package generate

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"

	"github.com/statuscheck/statuscheck/api/v1alpha1"
	"github.com/statuscheck/statuscheck/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden want.yaml files")

func strp(s string) *string { return &s }

var coolValues = Values{APIVersion: strp("cool.operators.corp/v1beta1"), Kind: strp("CoolOperator"), Name: strp("cool-operator")}

const coolValue = `{"apiVersion":"cool.operators.corp/v1beta1","kind":"CoolOperator","name":"cool-operator"}`

// TestGolden edits testdata/generate/CASE/in.yaml and compares the result
// with want.yaml; a second run must change nothing.
func TestGolden(t *testing.T) {
	root := filepath.Join(testutil.RepoRoot(), "testdata", "generate")
	cases, err := os.ReadDir(root)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(cases), 15)
	for _, c := range cases {
		t.Run(c.Name(), func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join(root, c.Name(), "in.yaml"))
			require.NoError(t, err)
			file := filepath.Join(t.TempDir(), "csv.yaml")
			require.NoError(t, os.WriteFile(file, in, 0o644))
			res, err := Run(file, Options{Values: coolValues})
			require.NoError(t, err)
			require.True(t, res.Changed())
			wantPath := filepath.Join(root, c.Name(), "want.yaml")
			if *update {
				require.NoError(t, os.WriteFile(wantPath, res.New, 0o644))
			}
			want, err := os.ReadFile(wantPath)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(res.New))
			assertOnlyAnnotationLines(t, in, res.New)

			require.NoError(t, os.WriteFile(file, res.New, 0o644))
			again, err := Run(file, Options{Values: coolValues})
			require.NoError(t, err)
			assert.False(t, again.Changed(), "a second run changes nothing")
			if bytes.Contains(in, []byte("\r\n")) {
				assert.Equal(t, bytes.Count(res.New, []byte("\n")), bytes.Count(res.New, []byte("\r\n")), "CRLF stays CRLF")
			}
		})
	}
}

// assertOnlyAnnotationLines checks the textual diff: there is one hunk;
// every line added carries the annotation (or opens the map that holds
// it); every line removed lies between the old annotation's key and the
// next key after it, as the old file's YAML nodes place them.
func assertOnlyAnnotationLines(t *testing.T, old, new []byte) {
	t.Helper()
	from, to := annotationLines(t, old)
	a := difflib.SplitLines(string(old))
	b := difflib.SplitLines(string(new))
	m := difflib.NewMatcher(a, b)
	hunks := 0
	for _, op := range m.GetOpCodes() {
		if op.Tag == 'e' {
			continue
		}
		hunks++
		for _, l := range b[op.J1:op.J2] {
			ok := strings.Contains(l, v1alpha1.AnnotationKey) || strings.Contains(l, coolValue) ||
				strings.TrimSpace(l) == "annotations:" || strings.TrimSpace(l) == "metadata:"
			assert.True(t, ok, "added line is not the annotation's: %q", l)
		}
		for i := op.I1; i < op.I2; i++ {
			assert.True(t, i+1 >= from && i+1 < to, "removed line %d is not the annotation's (lines %d to %d): %q", i+1, from, to-1, a[i])
		}
	}
	assert.Equal(t, 1, hunks, "one place changes")
}

// annotationLines gives the 1-based line range [from, to) that the old
// annotation may occupy: from its key to the next key of any mapping that
// follows it. Without an old annotation, only the line holding the
// annotations map (a flow map is rewritten on its own line) may change.
func annotationLines(t *testing.T, data []byte) (int, int) {
	t.Helper()
	var keys []int // lines of every mapping key, in order
	var annKey, annMap int
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			break
		}
		var walk func(n *yaml.Node)
		walk = func(n *yaml.Node) {
			for i := 0; i+1 < len(n.Content) && n.Kind == yaml.MappingNode; i += 2 {
				k := n.Content[i]
				keys = append(keys, k.Line)
				if k.Value == v1alpha1.AnnotationKey && annKey == 0 {
					annKey = k.Line
				}
				if (k.Value == "annotations" || k.Value == "metadata") && annMap == 0 && n.Content[i+1].Style&yaml.FlowStyle != 0 {
					annMap = n.Content[i+1].Line
				}
			}
			for _, c := range n.Content {
				walk(c)
			}
		}
		walk(&doc)
	}
	if annKey == 0 {
		if annMap != 0 {
			return annMap, annMap + 1
		}
		return 0, 0
	}
	sort.Ints(keys)
	for _, l := range keys {
		if l > annKey {
			return annKey, l
		}
	}
	return annKey, len(bytes.Split(data, []byte("\n"))) + 1
}

func TestSetAnnotationPreservesBytesAroundTheEdit(t *testing.T) {
	in := []byte("apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  annotations:\n    a: 'x' # c\n    b: y\n  name: n\n")
	e, err := SetAnnotation(in, v1alpha1.AnnotationKey, coolValue)
	require.NoError(t, err)
	out := e.Apply(in)
	assert.Equal(t, string(in[:e.Start]), string(out[:e.Start]))
	assert.Equal(t, string(in[e.End:]), string(out[e.Start+len(e.Text):]))
	assert.Equal(t, "\n    "+v1alpha1.AnnotationKey+": '"+coolValue+"'", e.Text)
	require.NoError(t, Verify("x.yaml", in, out, v1alpha1.AnnotationKey, coolValue))
}

func TestSetAnnotationErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		msg  string
	}{
		{name: "no csv", in: "apiVersion: v1\nkind: ConfigMap\n", msg: "no ClusterServiceVersion"},
		{name: "metadata is a list", in: "kind: ClusterServiceVersion\nmetadata: [a]\n", msg: "metadata is a sequence"},
		{name: "annotations is a string", in: "kind: ClusterServiceVersion\nmetadata:\n  annotations: x\n", msg: "metadata.annotations is a scalar"},
		{name: "the annotation is a map", in: "kind: ClusterServiceVersion\nmetadata:\n  annotations:\n    " + v1alpha1.AnnotationKey + ":\n      a: b\n", msg: "is a mapping, not a string"},
		{name: "the annotation is an alias", in: "kind: ClusterServiceVersion\nmetadata:\n  labels: {a: &v x}\n  annotations:\n    " + v1alpha1.AnnotationKey + ": *v\n", msg: "the existing annotation is an alias, not a string"},
		{name: "utf-16", in: "\xff\xfek\x00", msg: "UTF-16"},
		{name: "not yaml", in: "kind: [\n", msg: "did not find expected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := SetAnnotation([]byte(tt.in), v1alpha1.AnnotationKey, coolValue)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestVerifyCatchesOtherChanges(t *testing.T) {
	old := []byte("kind: ClusterServiceVersion\nmetadata:\n  name: a\n")
	tests := map[string]string{
		"another field changed": "kind: ClusterServiceVersion\nmetadata:\n  name: b\n  annotations:\n    " + v1alpha1.AnnotationKey + ": v\n",
		"annotation missing":    "kind: ClusterServiceVersion\nmetadata:\n  name: a\n",
		"a document added":      "kind: ClusterServiceVersion\nmetadata:\n  name: a\n  annotations:\n    " + v1alpha1.AnnotationKey + ": v\n---\na: 1\n",
		"broken":                "kind: [\n",
	}
	for name, new := range tests {
		t.Run(name, func(t *testing.T) {
			err := Verify("f.yaml", old, []byte(new), v1alpha1.AnnotationKey, "v")
			require.Error(t, err)
			assert.Contains(t, err.Error(), "nothing was written")
		})
	}
}

// TestFindingsPointIntoTheUsersFile is issue 11, item 4: generate's
// findings name lines of the file on disk, not of the edited text; a
// finding about the annotation it would write says so.
func TestFindingsPointIntoTheUsersFile(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(testutil.RepoRoot(), "testdata/bundles/rules/status-rbac-missing/fail/manifests")
	for _, name := range []string{"cool-operator.clusterserviceversion.yaml", "cool.operators.corp_cooloperators.yaml"} {
		data, err := os.ReadFile(filepath.Join(src, name))
		require.NoError(t, err)
		if strings.HasSuffix(name, "clusterserviceversion.yaml") {
			// No annotation yet: generate inserts one, above the RBAC.
			data = regexp.MustCompile(`(?m)^    # The operator's own CR.*\n    operatorframework.io/status-source: .*\n`).ReplaceAll(data, nil)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
	csvFile := filepath.Join(dir, "cool-operator.clusterserviceversion.yaml")
	old, err := os.ReadFile(csvFile)
	require.NoError(t, err)
	lineOf := func(text string) int {
		for i, l := range strings.Split(string(old), "\n") {
			if strings.Contains(l, text) {
				return i + 1
			}
		}
		t.Fatalf("%q not in the file", text)
		return 0
	}
	values := coolValues
	values.Conditions = []string{"Upgradable"}
	res, err := Run(dir, Options{Values: values})
	require.NoError(t, err)
	require.True(t, res.Changed())
	seen := map[string]bool{}
	for _, f := range res.Findings {
		if f.File != csvFile {
			continue
		}
		seen[f.Rule] = true
		switch f.Rule {
		case "status-rbac-missing":
			assert.Equal(t, lineOf("permissions:"), f.Line, "the line of permissions: in the user's file")
			assert.False(t, strings.HasPrefix(f.Message, ProposedPrefix))
		case "condition-type-spelling":
			assert.True(t, strings.HasPrefix(f.Message, ProposedPrefix), "a finding on the new annotation says it is proposed: %s", f.Message)
			assert.LessOrEqual(t, f.Line, lineOf("spec:"), "it points where the annotation would go")
		}
	}
	assert.True(t, seen["status-rbac-missing"] && seen["condition-type-spelling"], "findings: %+v", res.Findings)
}
