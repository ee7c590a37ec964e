package explore

import (
	"fmt"
	"slices"
	"strings"
)

// Faults are the actors that broke statuscheck bridge (issue 25), each
// switched on apart (Options.Faults, simulate --explore --bridge
// --faults). Each fault happens at most once a trace, which keeps the
// search to the default depth in seconds; a second replica is an actor
// for the whole trace.
type Faults uint16

const (
	// FaultUnknown: the operator reports a fresh Upgradeable=Unknown for
	// the generation it reads, as HyperConverged does on start-up, and
	// then goes on as after starting a migration (True when done).
	FaultUnknown Faults = 1 << iota
	// FaultReplica: a second bridge replica, with its own reads and
	// pending writes, interleaved with the first.
	FaultReplica
	// FaultRestart: the first replica restarts and forgets what it held
	// in memory (a decision it had not written yet; the request the
	// bridge before issue 25 kept in its process). It writes nothing.
	FaultRestart
	// FaultRevert: GitOps puts the CR back (a force-sync, kubectl
	// replace): the request's token and the bridge's record of it are
	// taken off the CR.
	FaultRevert
	// FaultRecreate: the CR is deleted and made again from a copy (its
	// spec and annotations, token and record included): a new object, a
	// new UID, no status. The two steps are one move: the window between
	// them, with the CR absent, is whenAbsent's, which the contract
	// decides apart.
	FaultRecreate
	// FaultOtherWriter: the operator still writes its own
	// OperatorCondition's Upgradeable entry (operator-lib's
	// conditions.Set, as HyperConverged does on every reconcile) with its
	// last report, under its own field manager.
	FaultOtherWriter
	// FaultDuplicate: an admin or a tool appends a second Upgradeable
	// entry to the OperatorCondition's spec.conditions, a copy of the
	// first (the CRD has no listType map), under its own field manager.
	FaultDuplicate
	// FaultStop: the first replica stops gracefully, withdrawing a True
	// it wrote as its runner does (Bridge.Stopped; not under RequestAck
	// while a CSV replaces the running one), and does not run again. A
	// crash is a restart (FaultRestart) as far as the cluster can tell;
	// what a crash leaves until the process runs again is a window, not a
	// state (see the README).
	FaultStop
	faultEnd
)

// AllFaults is every fault.
const AllFaults = faultEnd - 1

// events are the faults that happen once, at a moment; the others are
// actors for the whole trace (a second replica, the operator writing its
// own OperatorCondition).
const events = FaultUnknown | FaultRestart | FaultRevert | FaultRecreate | FaultDuplicate | FaultStop

// DefaultMaxFaults is how many of the faults that happen at a moment a
// trace holds by default (Options.MaxFaults): each defect of issue 25
// needs one, and two show what one fault does to the fix of another.
const DefaultMaxFaults = 2

// faultNames are the faults' names, kebab-case, in their order.
var faultNames = []string{"unknown", "replica", "restart", "revert", "recreate", "other-writer", "duplicate", "stop"}

// FaultNames lists the faults' names, as ParseFaults reads them.
func FaultNames() []string { return append([]string(nil), faultNames...) }

// Has says whether every fault of g is in f.
func (f Faults) Has(g Faults) bool { return f&g == g }

// String names the faults, comma-separated ("" for none).
func (f Faults) String() string {
	var names []string
	for i, name := range faultNames {
		if f.Has(1 << i) {
			names = append(names, name)
		}
	}
	return strings.Join(names, ",")
}

// List names the faults one by one (for JSON).
func (f Faults) List() []string {
	if f == 0 {
		return []string{}
	}
	return strings.Split(f.String(), ",")
}

// ParseFaults reads a comma-separated list of fault names, or "all".
func ParseFaults(s string) (Faults, error) {
	var f Faults
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		switch name {
		case "":
			continue
		case "all":
			f |= AllFaults
			continue
		}
		i := slices.Index(faultNames, name)
		if i < 0 {
			return 0, fmt.Errorf("unknown fault %q (want %s, or all)", name, strings.Join(faultNames, ", "))
		}
		f |= 1 << i
	}
	return f, nil
}
