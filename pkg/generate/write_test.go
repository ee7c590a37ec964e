package generate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "csv.yaml")
	require.NoError(t, os.WriteFile(p, []byte("old"), 0o640))
	require.NoError(t, WriteFile(p, []byte("old"), []byte("new")))
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "new", string(data))
	st, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), st.Mode().Perm(), "the mode is kept")
	entries, _ := os.ReadDir(dir)
	assert.Len(t, entries, 1, "no temporary file is left")
}

func TestWriteFileThroughASymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.yaml")
	link := filepath.Join(dir, "link.yaml")
	require.NoError(t, os.WriteFile(real, []byte("old"), 0o644))
	require.NoError(t, os.Symlink("real.yaml", link))
	require.NoError(t, WriteFile(link, []byte("old"), []byte("new")))
	target, err := os.Readlink(link)
	require.NoError(t, err)
	assert.Equal(t, "real.yaml", target, "the symlink stays a symlink")
	data, _ := os.ReadFile(real)
	assert.Equal(t, "new", string(data))
}

func TestWriteFileRefuses(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, p string)
		orig  string
		msg   string
	}{
		{name: "a read-only file", setup: func(t *testing.T, p string) { require.NoError(t, os.Chmod(p, 0o444)) }, orig: "old", msg: "the file is read-only"},
		{name: "a file changed since it was read", orig: "what it was when read", msg: "the file changed after statuscheck read it"},
		{name: "a file that is gone", setup: func(t *testing.T, p string) { require.NoError(t, os.Remove(p)) }, orig: "old", msg: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "csv.yaml")
			require.NoError(t, os.WriteFile(p, []byte("old"), 0o644))
			if tt.setup != nil {
				tt.setup(t, p)
			}
			err := WriteFile(p, []byte(tt.orig), []byte("new"))
			require.Error(t, err)
			assert.Contains(t, err.Error(), p)
			assert.Contains(t, err.Error(), tt.msg)
			if data, err := os.ReadFile(p); err == nil {
				assert.Equal(t, "old", string(data), "the original is untouched")
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				assert.False(t, strings.Contains(e.Name(), ".statuscheck-"), "temporary file left: %s", e.Name())
			}
		})
	}
}

func TestWriteFileChangedDuringWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "csv.yaml")
	require.NoError(t, os.WriteFile(p, []byte("old"), 0o644))
	// An editor saves the file between statuscheck's read and its write.
	require.NoError(t, os.WriteFile(p, []byte("edited by someone else"), 0o644))
	err := WriteFile(p, []byte("old"), []byte("new"))
	require.Error(t, err)
	data, _ := os.ReadFile(p)
	assert.Equal(t, "edited by someone else", string(data))
}
