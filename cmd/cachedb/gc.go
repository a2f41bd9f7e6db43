package main

import (
	"context"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"time"
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

// gcHeadroomBytes bounds the garbage a process lets pile up between collections once its live
// heap is large. At gcPercentWithSoftLimit a process holding datasets (1.4 GB of them for TPC-H
// at scale factor 1) lets its heap grow to five times that before collecting: gigabytes of fresh
// memory the kernel faults in and zeroes, which cost some queries over datasets several times
// their usual CPU. So the percentage is lowered as the live heap grows, for a collection after
// about this many bytes beyond it, never below Go's default of 100.
const gcHeadroomBytes = 1 << 30

// gcPercentFor is the GOGC for a live heap of live bytes: gcPercentWithSoftLimit for a small
// one, lower for a large one (gcHeadroomBytes), at least 100.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return gcPercentWithSoftLimit
	}
	return int(max(100, min(gcPercentWithSoftLimit, gcHeadroomBytes*100/live)))
}

// gcTuner keeps GOGC at gcPercentFor the live heap as it changes (datasets made, dropped).
type gcTuner struct {
	live    func() uint64
	set     func(int) int
	percent int // the one set last
}

// step sets GOGC for the live heap now, when that differs from the one set last.
func (t *gcTuner) step() {
	if p := gcPercentFor(t.live()); p != t.percent {
		t.set(p)
		t.percent = p
	}
}

// tuneGCPercent runs a gcTuner every interval until ctx ends; a process whose GOGC setGCPercent
// set runs it (not one whose GOGC the environment gives).
func tuneGCPercent(ctx context.Context, interval time.Duration) {
	t := &gcTuner{live: liveHeapBytes, set: debug.SetGCPercent, percent: gcPercentWithSoftLimit}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			t.step()
		}
	}
}

// liveHeapBytes is the heap the last collection found live.
func liveHeapBytes() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
