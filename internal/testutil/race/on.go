//go:build race

package race

// Enabled: the binary runs under the race detector.
const Enabled = true
