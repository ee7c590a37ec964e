//go:build !unix

package generate

import (
	"io/fs"
	"os"
)

// keepOwner does nothing where files have no Unix owner: the new file is
// the writer's, as any file it creates.
func keepOwner(*os.File, fs.FileInfo) {}
