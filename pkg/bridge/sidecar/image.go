package sidecar

import (
	"fmt"
	"strings"

	"github.com/distribution/reference"
)

// Placeholders are the words statuscheck's own suggested commands hold
// where the user's value goes: pasted literally, they are refused with
// what to put there instead.
var Placeholders = []string{"IMAGE", ".spec.FIELD", "FIELD", "BUNDLE"}

// CheckImage says why ref cannot be the bridge's image, nil when it is an
// image reference a kubelet can pull (the reference grammar of
// github.com/distribution/reference, which container runtimes parse
// with): a sidecar whose image cannot be pulled never runs, so nothing
// writes the OperatorCondition.
func CheckImage(ref string) error {
	switch {
	case ref == "":
		return fmt.Errorf("no image")
	case ref == "IMAGE" || strings.ContainsAny(ref, "<>"):
		return fmt.Errorf("%q is a placeholder, not an image: give the reference of the statuscheck image your cluster pulls (for example quay.io/you/statuscheck:v0.1.0; `make image` builds one)", ref)
	}
	if _, err := reference.ParseNormalizedNamed(ref); err != nil {
		return fmt.Errorf("%q is not an image reference: %w", ref, err)
	}
	return nil
}
