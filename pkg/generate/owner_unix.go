//go:build unix

package generate

import (
	"io/fs"
	"os"
	"syscall"
)

// keepOwner gives the new file the original's owner and group, where the
// process may (root may; anyone may keep their own).
func keepOwner(f *os.File, st fs.FileInfo) {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		_ = f.Chown(int(sys.Uid), int(sys.Gid))
	}
}
