package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksNoTestTier: the real-OLM tier (test/olm, a module of its
// own) brings k8s.io/kubernetes and OLM; none of it may reach the binary.
func TestBinaryLinksNoTestTier(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps gave %d packages; expected the binary's whole graph", len(deps))
	}
	for _, p := range deps {
		for _, banned := range []string{"k8s.io/kubernetes", "github.com/operator-framework/operator-lifecycle-manager", "github.com/statuscheck/statuscheck/test/"} {
			if p == banned || strings.HasPrefix(p, banned+"/") || strings.HasPrefix(p, banned) && strings.HasSuffix(banned, "/") {
				t.Errorf("statuscheck links %s", p)
			}
		}
	}
}
