package olm

import "testing"

func TestClusterStarts(t *testing.T) {
	c := get(t)
	t.Logf("kube-apiserver and OLM ready in %s", c.Started)
}
