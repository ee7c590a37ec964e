package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksNoTestTier: the real-OLM tier (test/olm, a module of its
// own) brings k8s.io/kubernetes and OLM; none of it may reach either
// binary (statuscheck-cluster holds record and the bridge).
func TestBinaryLinksNoTestTier(t *testing.T) {
	for _, cmd := range []string{".", "../statuscheck-cluster"} {
		out, err := exec.Command("go", "list", "-deps", cmd).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", cmd, err)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 100 {
			t.Fatalf("go list -deps %s gave %d packages; expected the binary's whole graph", cmd, len(deps))
		}
		for _, p := range deps {
			for _, banned := range []string{"k8s.io/kubernetes", "github.com/operator-framework/operator-lifecycle-manager", "github.com/statuscheck/statuscheck/test/"} {
				if p == banned || strings.HasPrefix(p, banned+"/") || strings.HasPrefix(p, banned) && strings.HasSuffix(banned, "/") {
					t.Errorf("%s links %s", cmd, p)
				}
			}
		}
	}
}
