package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/statuscheck/statuscheck/internal/testutil"
	"github.com/statuscheck/statuscheck/pkg/catalog/fbc"
)

// openPTY opens a pseudo-terminal pair: what is written to the returned
// terminal can be read from the controller.
func openPTY(t *testing.T) (controller, terminal *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	require.NoError(t, unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// TestProgressOnlyOnATerminal validates a 3,000-bundle catalog twice: with
// stderr a terminal it shows progress, with stderr a pipe or a buffer it
// says nothing.
func TestProgressOnlyOnATerminal(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteCatalog(t, filepath.Join(dir, "catalog"), 3000)
	cat := filepath.Join(dir, "catalog")

	var quiet bytes.Buffer
	code := Run([]string{"validate", cat}, io.Discard, &quiet, Options{Catalogs: fbc.Walk})
	assert.Equal(t, 0, code)
	assert.Empty(t, quiet.String(), "no progress in a log")

	controller, terminal := openPTY(t)
	got := make(chan []byte)
	go func() {
		var all []byte
		buf := make([]byte, 4096)
		for {
			n, err := controller.Read(buf)
			all = append(all, buf[:n]...)
			if err != nil {
				got <- all
				return
			}
		}
	}()
	code = Run([]string{"validate", cat}, io.Discard, terminal, Options{Catalogs: fbc.Walk})
	assert.Equal(t, 0, code)
	require.NoError(t, terminal.Close()) // the controller then reads EIO
	var out []byte
	select {
	case out = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the pseudo-terminal did not close")
	}
	assert.Contains(t, string(out), "catalog: ", "progress on a terminal")
	assert.Contains(t, string(out), "bundles read")
	assert.Contains(t, string(out), "\x1b[K", "the progress line is cleared")
}
