package sidecar

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/internal/testutil"
)

// TestItem11EntrypointIsTheImages: RunsBridge judges a container by the
// image's entrypoint, which is build/Containerfile's ENTRYPOINT; and the
// container generate writes runs the bridge.
func TestItem11EntrypointIsTheImages(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "build", "Containerfile"))
	require.NoError(t, err)
	var entrypoint string
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "ENTRYPOINT "); ok {
			entrypoint = rest
		}
		assert.False(t, strings.HasPrefix(line, "CMD "), "the image has a CMD: a container without args runs it, which RunsBridge does not assume")
	}
	assert.Equal(t, `["`+Entrypoint+`"]`, entrypoint)
	for _, secure := range []bool{false, true} {
		field, err := RunsBridge(Container(Options{Image: "img:1", MetricsPort: MetricsPort, ProbePort: ProbePort, SecureMetrics: secure}))
		assert.NoError(t, err)
		assert.Empty(t, field)
	}
}
