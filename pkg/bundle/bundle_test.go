package bundle

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	registrybundle "github.com/operator-framework/operator-registry/pkg/lib/bundle"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const good = "../../testdata/bundles/good"

// TestConstantsMatchOperatorRegistry keeps the ported names and kinds equal
// to operator-registry's own (imported here only, to keep its container
// libraries out of the binary).
func TestConstantsMatchOperatorRegistry(t *testing.T) {
	assert.Equal(t, registrybundle.MediatypeLabel, MediatypeLabel)
	assert.Equal(t, registrybundle.ManifestsLabel, ManifestsLabel)
	assert.Equal(t, registrybundle.MetadataLabel, MetadataLabel)
	assert.Equal(t, registrybundle.PackageLabel, PackageLabel)
	assert.Equal(t, registrybundle.ChannelsLabel, ChannelsLabel)
	assert.Equal(t, registrybundle.ChannelDefaultLabel, ChannelDefaultLabel)
	assert.Equal(t, registrybundle.RegistryV1Type, RegistryV1Type)
	assert.Equal(t, registrybundle.ManifestsDir, ManifestsDir)
	assert.Equal(t, registrybundle.MetadataDir, MetadataDir)
	assert.Equal(t, registrybundle.AnnotationsFile, AnnotationsFile)
	for _, k := range SupportedKinds() {
		ok, _ := registrybundle.IsSupported(k)
		assert.True(t, ok, "%s is supported here but not by operator-registry", k)
	}
	for _, k := range []string{"Deployment", "Namespace", "Pod", "StatefulSet", "MutatingWebhookConfiguration", "APIService", "OperatorGroup", "Subscription"} {
		ok, _ := registrybundle.IsSupported(k)
		assert.Equal(t, ok, IsSupported(k), k)
	}
	assert.Len(t, SupportedKinds(), 22)
}

func TestLoadGood(t *testing.T) {
	for _, p := range []string{good, filepath.Join(good, "manifests")} {
		b, err := Load(p, Options{})
		require.NoError(t, err)
		assert.Empty(t, b.Problems, p)
		assert.Empty(t, b.Errors, p)
		require.NotNil(t, b.CSV())
		assert.Equal(t, "cool-operator.v0.2.0", b.CSV().Obj.Name)
		require.Len(t, b.CRDs, 1)
		assert.Equal(t, "CoolOperator", b.CRDs[0].Kind())
		require.NotNil(t, b.Metadata, "metadata is found beside a manifests directory too")
		assert.Equal(t, "cool-operator", b.Metadata.Annotations[PackageLabel])
		assert.Equal(t, filepath.Clean(good), filepath.Clean(b.Root))
		v := b.CRDs[0].Version("v1beta1")
		require.NotNil(t, v)
		assert.True(t, v.Served)
		assert.True(t, v.StatusSubresource)
		pos, ok := b.CRDs[0].Doc.Locate(v.SubresourcesPath)
		assert.True(t, ok)
		assert.Equal(t, 18, pos.Line)
	}
}

// writeBundle makes a bundle directory from name → content.
func writeBundle(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return dir
}

func readGood(t *testing.T, name string) string {
	data, err := os.ReadFile(filepath.Join(good, name))
	require.NoError(t, err)
	return string(data)
}

const csvName = "manifests/cool-operator.clusterserviceversion.yaml"

func codes(b *Bundle) []string {
	var out []string
	for _, p := range b.Problems {
		out = append(out, p.Code)
	}
	return out
}

func TestHostileInput(t *testing.T) {
	csv := readGood(t, csvName)
	tests := []struct {
		name  string
		files map[string]string
		setup func(t *testing.T, dir string)
		code  string
		file  string
		msg   string
	}{
		{name: "binary bytes", files: map[string]string{csvName: csv, "manifests/blob.yaml": "\x7fELF\x02\x01\x01\x00\x00\x00"}, code: CodeParse, file: "blob.yaml", msg: "binary content"},
		{name: "not yaml", files: map[string]string{csvName: csv, "manifests/x.yaml": "key: [unclosed\n"}, code: CodeParse, file: "x.yaml", msg: "invalid YAML"},
		{name: "yaml but not an object", files: map[string]string{csvName: csv, "manifests/x.yaml": "- just\n- a list\n"}, code: CodeParse, file: "x.yaml", msg: "not a Kubernetes object"},
		{name: "an object without kind", files: map[string]string{csvName: csv, "manifests/x.yaml": "apiVersion: v1\nmetadata: {name: x}\n"}, code: CodeParse, file: "x.yaml", msg: "kind missing"},
		{name: "an empty file", files: map[string]string{csvName: csv, "manifests/x.yaml": ""}, code: CodeParse, file: "x.yaml", msg: "empty manifest"},
		{name: "a csv that does not decode", files: map[string]string{csvName: strings.Replace(csv, "  replaces: cool-operator.v0.1.0", "  replaces: [a, b]", 1)}, code: CodeParse, file: "clusterserviceversion.yaml", msg: "field spec.replaces"},
		{name: "an alias bomb", files: map[string]string{csvName: csv, "manifests/bomb.yaml": "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"}, code: CodeLimit, file: "bomb.yaml", msg: "aliases expand"},
		{name: "absurdly deep nesting", files: map[string]string{csvName: csv, "manifests/deep.yaml": "a: " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "\n"}, code: CodeLimit, file: "deep.yaml", msg: "nesting deeper than 512"},
		{name: "a file over the size limit", files: map[string]string{csvName: csv}, setup: func(t *testing.T, dir string) {
			f, err := os.Create(filepath.Join(dir, "manifests", "huge.yaml"))
			require.NoError(t, err)
			require.NoError(t, f.Truncate(40<<20)) // sparse: no 40 MB written
			require.NoError(t, f.Close())
		}, code: CodeLimit, file: "huge.yaml", msg: "over the 16777216-byte limit"},
		{name: "a symlink out of the bundle", files: map[string]string{csvName: csv}, setup: func(t *testing.T, dir string) {
			require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "manifests", "passwd.yaml")))
		}, code: CodeSymlink, file: "passwd.yaml", msg: "points outside the bundle"},
		{name: "a dangling symlink", files: map[string]string{csvName: csv}, setup: func(t *testing.T, dir string) {
			require.NoError(t, os.Symlink("nowhere.yaml", filepath.Join(dir, "manifests", "dangling.yaml")))
		}, code: CodeSymlink, file: "dangling.yaml", msg: "cannot be resolved"},
		{name: "a named pipe", files: map[string]string{csvName: csv}, setup: func(t *testing.T, dir string) {
			require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "manifests", "pipe.yaml"), 0o644))
		}, code: CodeLayout, file: "pipe.yaml", msg: "not a regular file"},
		{name: "a directory in manifests", files: map[string]string{csvName: csv, "manifests/sub/x.yaml": "a: 1"}, code: CodeLayout, file: "sub", msg: "directory inside"},
		{name: "a hidden file", files: map[string]string{csvName: csv, "manifests/.x.yaml": "a: 1"}, code: CodeLayout, file: ".x.yaml", msg: "hidden file"},
		{name: "two csvs", files: map[string]string{csvName: csv, "manifests/z.clusterserviceversion.yaml": strings.Replace(csv, "name: cool-operator.v0.2.0", "name: cool-operator.v0.3.0", 1)}, code: CodeMultipleCSVs, file: "z.clusterserviceversion.yaml", msg: "second ClusterServiceVersion \"cool-operator.v0.3.0\""},
		{name: "an empty bundle root", files: map[string]string{"manifests/.keep": ""}, code: CodeCSVMissing, file: "manifests", msg: "no manifests in"},
		{name: "an annotations file that is not yaml", files: map[string]string{csvName: csv, "metadata/annotations.yaml": "annotations: [\n"}, code: CodeParse, file: "annotations.yaml", msg: "invalid YAML"},
		{name: "an empty metadata directory", files: map[string]string{csvName: csv, "metadata/.keep": ""}, code: CodeMetadataMissing, file: "metadata", msg: "no annotations file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeBundle(t, tt.files)
			if tt.setup != nil {
				tt.setup(t, dir)
			}
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			b, err := Load(dir, Options{})
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			require.NoError(t, err)
			assert.Empty(t, b.Errors)
			var found *Problem
			for i, p := range b.Problems {
				if p.Code == tt.code {
					found = &b.Problems[i]
				}
			}
			require.NotNil(t, found, "want %s, got %v", tt.code, codes(b))
			assert.Contains(t, filepath.Base(found.Pos.File), tt.file)
			assert.True(t, strings.HasPrefix(found.Pos.File, dir), "the problem names the file: %s", found.Pos.File)
			assert.Contains(t, found.Message, tt.msg)
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "memory stays bounded")
		})
	}
}

func TestLoadFailures(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "missing"), Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "loading bundle")
	assert.Contains(t, err.Error(), "no such file or directory")

	// A file is taken as a CSV file (issue 27): one that is another
	// object is refused.
	file := filepath.Join(t.TempDir(), "configmap.yaml")
	require.NoError(t, os.WriteFile(file, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"), 0o644))
	_, err = Load(file, Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "loading bundle "+file+": a ConfigMap, not a ClusterServiceVersion")
}

// deniedFS is the OS file system, except that reading the named files
// fails as it does without permission (which root cannot reproduce with
// chmod).
type deniedFS struct {
	OS
	denied map[string]bool
}

func (d deniedFS) ReadFile(name string, limit int64) ([]byte, error) {
	if d.denied[filepath.Base(name)] {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return d.OS.ReadFile(name, limit)
}

func (d deniedFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if d.denied[filepath.Base(name)] {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return d.OS.ReadDir(name)
}

func TestUnreadableFilesAreErrors(t *testing.T) {
	dir := writeBundle(t, map[string]string{csvName: readGood(t, csvName), "manifests/secret.yaml": "apiVersion: v1\nkind: Secret\n"})
	b, err := Load(dir, Options{FS: deniedFS{denied: map[string]bool{"secret.yaml": true}}})
	require.NoError(t, err)
	require.Len(t, b.Errors, 1)
	assert.Contains(t, b.Errors[0].Error(), filepath.Join(dir, "manifests", "secret.yaml"))
	assert.True(t, errors.Is(b.Errors[0], fs.ErrPermission))
	assert.NotNil(t, b.CSV(), "the readable files are still loaded")

	b, err = Load(dir, Options{FS: deniedFS{denied: map[string]bool{"manifests": true}}})
	require.NoError(t, err)
	require.Len(t, b.Errors, 1)
	assert.Contains(t, b.Errors[0].Error(), "permission denied")

	if os.Geteuid() != 0 {
		// Without root, the real file system refuses too.
		p := filepath.Join(dir, "manifests", "secret.yaml")
		require.NoError(t, os.Chmod(p, 0))
		b, err = Load(dir, Options{})
		require.NoError(t, err)
		require.Len(t, b.Errors, 1)
		assert.Contains(t, b.Errors[0].Error(), "permission denied")
	}
}

func TestV1beta1CRDIsConverted(t *testing.T) {
	dir := writeBundle(t, map[string]string{"manifests/crd.yaml": `apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  version: v1alpha1
  versions:
  - name: v1alpha1
    served: true
    storage: true
  - name: v1beta1
    served: true
    storage: false
    subresources:
      status: {}
  validation:
    openAPIV3Schema:
      type: object
      properties:
        status:
          type: object
`})
	b, err := Load(dir, Options{})
	require.NoError(t, err)
	require.Len(t, b.CRDs, 1)
	c := b.CRDs[0]
	assert.True(t, c.Namespaced(), "v1beta1 scope defaults to Namespaced")
	v1 := c.Version("v1alpha1")
	require.NotNil(t, v1)
	assert.False(t, v1.StatusSubresource)
	require.NotNil(t, v1.Schema, "top-level validation applies to every version")
	assert.Equal(t, "spec.validation.openAPIV3Schema", v1.SchemaPath.String())
	assert.Equal(t, "spec.subresources", v1.SubresourcesPath.String())
	v2 := c.Version("v1beta1")
	require.NotNil(t, v2)
	assert.True(t, v2.StatusSubresource)
	assert.Equal(t, "spec.versions[1].subresources", v2.SubresourcesPath.String())
	assert.Contains(t, codes(b), CodeCSVMissing)
}

// TestRootsOfAPackageManifestDirectory: the old package-manifest layout
// (a package manifest, as operator-framework/api's loader finds it:
// any file that decodes into a PackageManifest with a name, beside a
// directory per version of flat manifests, and files such as
// community-operators' ci.yaml) expands to its versions, as a directory
// of bundles does; a directory of plain manifests that has subdirectories
// too stays itself.
func TestRootsOfAPackageManifestDirectory(t *testing.T) {
	manifests := func(t *testing.T, dir string) {
		for _, f := range []string{"cool-operator.clusterserviceversion.yaml", "cool.operators.corp_cooloperators.yaml"} {
			data, err := os.ReadFile(filepath.Join(good, "manifests", f))
			require.NoError(t, err)
			require.NoError(t, os.MkdirAll(dir, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, f), data, 0o644))
		}
	}
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{name: "a package manifest named as operator-sdk names it, and ci.yaml",
			files: map[string]string{"cool.package.yaml": "packageName: cool\nchannels:\n- name: alpha\n  currentCSV: cool-operator.v0.2.0\n", "ci.yaml": "updateGraph: replaces-mode\n"},
			want:  []string{"0.1.0", "0.2.0"}},
		{name: "a package manifest in JSON under another name",
			files: map[string]string{"package.json": `{"packageName": "cool", "channels": [{"name": "alpha", "currentCSV": "cool-operator.v0.2.0"}]}`},
			want:  []string{"0.1.0", "0.2.0"}},
		{name: "a manifest that is no package manifest",
			files: map[string]string{"service.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: cool\n"},
			want:  []string{"."}},
		{name: "community operators' ci.yaml alone beside the versions",
			files: map[string]string{"ci.yaml": "updateGraph: replaces-mode\nreviewers:\n- someone\n"},
			want:  []string{"0.1.0", "0.2.0"}},
		{name: "a package manifest beside a Kubernetes object",
			files: map[string]string{"cool.package.yaml": "packageName: cool\nchannels:\n- name: alpha\n  currentCSV: cool-operator.v0.2.0\n", "service.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: cool\n"},
			want:  []string{"."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			manifests(t, filepath.Join(dir, "0.1.0"))
			manifests(t, filepath.Join(dir, "0.2.0"))
			for name, data := range tt.files {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
			}
			var got []string
			for _, r := range Roots(dir, Options{}) {
				rel, err := filepath.Rel(dir, r)
				require.NoError(t, err)
				got = append(got, rel)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}
