//go:build !windows

package cli

import (
	"fmt"
	"os"
	"syscall"
)

const exeSuffix = ""

// execProgram replaces this process with path, args after its name.
func execProgram(path string, args []string) (int, error) {
	err := syscall.Exec(path, append([]string{path}, args...), os.Environ())
	return 0, fmt.Errorf("starting %s: %w", path, err)
}
