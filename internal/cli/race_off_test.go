//go:build !race

package cli

// raceBuild: this test binary runs under the race detector.
const raceBuild = false
