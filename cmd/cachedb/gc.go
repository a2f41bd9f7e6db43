package main

import (
	"math"
	"runtime/debug"
)

// gcPercentWithSoftLimit is the Go garbage collector's target percentage (GOGC) a server process
// runs with when a soft memory limit bounds its heap. Queries allocate Parquet pages and Arrow
// batches at a high rate and hold little between batches, so Go's default of 100 collects often
// for little garbage (a GOGC of 400 took 13 % of the CPU time of the 22 TPC-H queries off). The
// larger target cannot push the process past its budget: the soft limit (goSoftLimit) makes the
// collector run harder as the heap nears it, whatever the percentage.
const gcPercentWithSoftLimit = 400

// gcPercent is the GOGC a process sets for the soft memory limit in force (0 or math.MaxInt64,
// Go's "no limit": none): -1, leave Go's default, when no soft limit bounds the heap, since then
// nothing would.
func gcPercent(softLimit int64) int {
	if softLimit <= 0 || softLimit == math.MaxInt64 {
		return -1
	}
	return gcPercentWithSoftLimit
}

// setGCPercent applies gcPercent for the soft limit in force (set by the process or by
// GOMEMLIMIT) unless GOGC is set in the environment, which wins; it returns the percentage set,
// -1 for none.
func setGCPercent(softLimit int64, env func(string) string) int {
	p := gcPercent(softLimit)
	if p < 0 || env("GOGC") != "" {
		return -1
	}
	debug.SetGCPercent(p)
	return p
}
