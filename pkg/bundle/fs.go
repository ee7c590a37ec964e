package bundle

import (
	"io/fs"
	"os"
	"path/filepath"

	"github.com/statuscheck/statuscheck/pkg/manifest"
)

// FS is the file system a bundle is read from. OS reads the real one; tests
// swap in failures the real one cannot produce on demand (a permission
// denied while running as root, an I/O error).
type FS interface {
	Stat(name string) (fs.FileInfo, error)
	Lstat(name string) (fs.FileInfo, error)
	ReadDir(name string) ([]fs.DirEntry, error)
	// ReadFile reads a regular file, failing with an *ErrTooLarge rather
	// than reading more than limit bytes (limit <= 0: no limit).
	ReadFile(name string, limit int64) ([]byte, error)
	EvalSymlinks(name string) (string, error)
}

// ErrTooLarge is returned by FS.ReadFile for a file over the limit.
type ErrTooLarge = manifest.ErrTooLarge

// OS is the operating system's file system.
type OS struct{}

// Stat implements FS.
func (OS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

// Lstat implements FS.
func (OS) Lstat(name string) (fs.FileInfo, error) { return os.Lstat(name) }

// ReadDir implements FS.
func (OS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

// EvalSymlinks implements FS.
func (OS) EvalSymlinks(name string) (string, error) { return filepath.EvalSymlinks(name) }

// ReadFile implements FS (manifest.ReadFile).
func (OS) ReadFile(name string, limit int64) ([]byte, error) { return manifest.ReadFile(name, limit) }
