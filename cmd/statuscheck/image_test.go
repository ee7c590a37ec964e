package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statuscheck/statuscheck/internal/testutil"
)

// lastStage is a Containerfile's last stage, its comments and blank
// lines left out, and its COPY line apart.
func lastStage(t *testing.T, path string) (lines []string, copyLine string) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var stage []string
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasPrefix(l, "FROM ") {
			stage = nil
		}
		stage = append(stage, l)
	}
	for _, l := range stage {
		if strings.HasPrefix(l, "COPY ") {
			copyLine = l
			continue
		}
		lines = append(lines, l)
	}
	return lines, copyLine
}

// TestImageRecipesAgree: the Dockerfile (for users with a registry) and
// build/Containerfile (make image, offline) build the same image: the same
// last stage but for where the binary comes from, FROM scratch, a numeric
// non-root user, statuscheck as the entrypoint (the bridge sidecar runs it
// with args [bridge], the scorecard test with validate ... /bundle), the
// OCI labels.
func TestImageRecipesAgree(t *testing.T) {
	root := testutil.RepoRoot()
	docker, dockerCopy := lastStage(t, filepath.Join(root, "Dockerfile"))
	offline, offlineCopy := lastStage(t, filepath.Join(root, "build", "Containerfile"))
	assert.Equal(t, offline, docker, "the Dockerfile's last stage is build/Containerfile's")
	// statuscheck-cluster's build, every command linked, as statuscheck:
	// the bridge sidecar is one process.
	assert.Equal(t, "COPY --from=build /out/linux-${TARGETARCH}/statuscheck-cluster /usr/local/bin/statuscheck", dockerCopy)
	assert.Equal(t, "COPY linux-${TARGETARCH}/statuscheck-cluster /usr/local/bin/statuscheck", offlineCopy)
	// What the two recipes build is what they copy.
	for file, build := range map[string]string{
		"Makefile":   "-o bin/image/linux-$$arch/statuscheck-cluster ./cmd/statuscheck-cluster",
		"Dockerfile": "-o /out/linux-${TARGETARCH}/statuscheck-cluster ./cmd/statuscheck-cluster",
	} {
		data, err := os.ReadFile(filepath.Join(root, file))
		require.NoError(t, err)
		assert.Contains(t, string(data), build, file)
	}
	assert.Equal(t, "FROM scratch", offline[0])
	assert.Contains(t, offline, "USER 65532:65532", "a numeric non-root user, for runAsNonRoot")
	assert.Equal(t, `ENTRYPOINT ["/usr/local/bin/statuscheck"]`, offline[len(offline)-1], "statuscheck itself: the sidecar's args are a subcommand")
	for _, label := range []string{"org.opencontainers.image.source", "org.opencontainers.image.version", "org.opencontainers.image.revision"} {
		assert.Contains(t, strings.Join(offline, "\n"), label)
	}
	ignore, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	require.NoError(t, err)
	assert.Contains(t, strings.Split(string(ignore), "\n"), ".git", "the build context leaves .git out")
}
