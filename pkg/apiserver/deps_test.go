package apiserver

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLinksNoStorage: the registry's strategies come from
// internal/upstream's copies, not from their packages upstream, whose REST
// storage links the apiserver's storage backend and etcd's client
// (about 320 packages, initialised by every statuscheck process). The
// strategies themselves are linked.
func TestLinksNoStorage(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	require.NoError(t, err)
	deps := strings.Fields(string(out))
	require.Greater(t, len(deps), 100, "go list -deps gave the package's whole graph")
	for _, p := range []string{
		"k8s.io/apiextensions-apiserver/pkg/registry/customresource",
		"k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition",
		"k8s.io/apiserver/pkg/registry/generic",
		"k8s.io/apiserver/pkg/registry/generic/registry",
		"k8s.io/apiserver/pkg/storage/storagebackend/factory",
		"go.etcd.io/etcd/client/v3",
	} {
		assert.False(t, slices.Contains(deps, p), "pkg/apiserver links %s", p)
	}
	for _, p := range []string{
		"github.com/statuscheck/statuscheck/internal/upstream/customresource",
		"github.com/statuscheck/statuscheck/internal/upstream/customresourcedefinition",
		"k8s.io/apiextensions-apiserver/pkg/apiserver/validation",
	} {
		assert.True(t, slices.Contains(deps, p), "pkg/apiserver links %s", p)
	}
}
