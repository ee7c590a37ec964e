package apiserver

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/statuscheck/statuscheck/internal/testutil"
)

// TestLinksNoStorage: the registry's strategies and the CRD validation
// come from internal/upstream's copies, not from their packages upstream:
// the strategies' REST storage links the apiserver's storage backend and
// etcd's client, and the validation's webhook package egress selection,
// gRPC and OpenTelemetry's exporters (about 460 packages, initialised by
// every statuscheck process). The copies themselves are linked.
func TestLinksNoStorage(t *testing.T) {
	deps := testutil.Deps(t, "./pkg/apiserver")
	for _, p := range []string{
		"k8s.io/apiextensions-apiserver/pkg/registry/customresource",
		"k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition",
		"k8s.io/apiserver/pkg/registry/generic",
		"k8s.io/apiserver/pkg/registry/generic/registry",
		"k8s.io/apiserver/pkg/storage/storagebackend/factory",
		"go.etcd.io/etcd/client/v3",
		"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation",
		"k8s.io/apiserver/pkg/util/webhook",
		"google.golang.org/grpc",
	} {
		assert.False(t, slices.Contains(deps, p), "pkg/apiserver links %s", p)
	}
	for _, p := range []string{
		"github.com/statuscheck/statuscheck/internal/upstream/customresource",
		"github.com/statuscheck/statuscheck/internal/upstream/customresourcedefinition",
		"github.com/statuscheck/statuscheck/internal/upstream/validation",
		"k8s.io/apiextensions-apiserver/pkg/apiserver/validation",
	} {
		assert.True(t, slices.Contains(deps, p), "pkg/apiserver links %s", p)
	}
}
