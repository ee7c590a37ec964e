// Package race says whether a test binary runs under the race detector,
// for tests that measure what its instrumentation changes (allocations,
// page faults, time): one home for the build tag.
package race
