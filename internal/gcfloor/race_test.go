//go:build race

package gcfloor

// raceEnabled: the race detector's shadow memory takes faults of its own
// for every write the test makes.
const raceEnabled = true
