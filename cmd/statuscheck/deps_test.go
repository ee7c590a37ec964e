package main

import (
	"strings"
	"testing"

	"github.com/statuscheck/statuscheck/internal/testutil"
)

// TestBinaryLinksNoTestTier: the real-OLM tier (test/olm, a module of its
// own) brings k8s.io/kubernetes and OLM; none of it may reach either
// binary (statuscheck-cluster holds record and the bridge).
func TestBinaryLinksNoTestTier(t *testing.T) {
	for _, cmd := range []string{"./cmd/statuscheck", "./cmd/statuscheck-cluster"} {
		for _, p := range testutil.Deps(t, cmd) {
			for _, banned := range []string{"k8s.io/kubernetes", "github.com/operator-framework/operator-lifecycle-manager", "github.com/statuscheck/statuscheck/test/"} {
				if p == banned || strings.HasPrefix(p, banned+"/") || strings.HasPrefix(p, banned) && strings.HasSuffix(banned, "/") {
					t.Errorf("%s links %s", cmd, p)
				}
			}
		}
	}
}
