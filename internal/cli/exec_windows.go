package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
)

const exeSuffix = ".exe"

// execProgram runs path, args after its name, as a child with this
// process's standard streams (Windows has no execve), and returns its
// exit code.
func execProgram(path string, args []string) (int, error) {
	// The console sends Ctrl+C to the child too, which stops as it
	// decides; this process waits for it.
	signal.Ignore(os.Interrupt)
	cmd := exec.Command(path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return 0, fmt.Errorf("starting %s: %w", path, err)
	}
	return 0, nil
}
