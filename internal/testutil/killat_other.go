//go:build !(linux && amd64)

package testutil

import (
	"errors"
	"os/exec"
)

// RunKilledAtRename needs ptrace on linux/amd64.
func RunKilledAtRename(*exec.Cmd) (bool, error) {
	return false, errors.New("killing a process at its rename needs ptrace on linux/amd64")
}
