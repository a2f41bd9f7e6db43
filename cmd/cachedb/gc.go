package main

import (
	"context"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// gcPercentWithSoftLimit is the Go garbage collector's target percentage (GOGC) a server process
// starts with when a soft memory limit bounds its heap (the tuner then follows the live heap,
// gcPercentFor). Queries allocate Parquet pages and Arrow batches at a high rate and hold little
// between batches, so Go's default of 100 collects often for little garbage (a GOGC of 400 took
// 13 % of the CPU time of the 22 TPC-H queries off). The larger target cannot push the process
// past its budget: the soft limit (goSoftLimit) makes the collector run harder as the heap nears
// it, whatever the percentage.
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

// gcHeadroomBytes is the garbage a process lets pile up between collections, whatever its live
// heap (less under a small soft limit, gcHeadroom): the percentage (GOGC) follows the live heap
// so that a collection comes after about this many bytes beyond it, never below Go's default of
// 100. A large live heap (datasets held in memory) gets a low percentage: at
// gcPercentWithSoftLimit a process holding 1.4 GB of datasets let its heap grow to five times
// that before collecting, gigabytes of fresh memory the kernel faults in and zeroes. A small one
// gets a high percentage: at gcPercentWithSoftLimit a server reading Iceberg tables with some
// 100 MB live collected after 400 MB, below what one large query allocates, and the runtime
// handed the rest back to the kernel while the server was idle; the next such query faulted it
// in again (TPC-H Q18 without the column cache, run every 3 s: 85,000 page faults and 0.47 s a
// run, against 19,000 and 0.32 s with this headroom).
const gcHeadroomBytes = 1 << 30

// gcMinLiveBytes is the smallest live heap gcPercentFor divides by: it caps the percentage of a
// nearly empty heap (6,400 % for gcHeadroomBytes).
const gcMinLiveBytes = 16 << 20

// gcHeadroom is the headroom for a soft memory limit: gcHeadroomBytes, or an eighth of a limit
// below 8 GiB. A small budget's heap so collects at 400 % of a small live heap, or less, and does
// not ride its soft limit, which what the process maps beyond the Go heap (its binary, threads)
// would then pass.
func gcHeadroom(softLimit int64) uint64 {
	if softLimit <= 0 || softLimit == math.MaxInt64 {
		return gcHeadroomBytes
	}
	return min(gcHeadroomBytes, uint64(softLimit)/8)
}

// gcPercentFor is the GOGC for a live heap of live bytes and the given headroom: a collection
// after about headroom bytes of garbage, at least 100.
func gcPercentFor(live, headroom uint64) int {
	return int(max(100, headroom*100/max(live, gcMinLiveBytes)))
}

// gcTuner keeps GOGC at gcPercentFor the live heap as it changes (datasets made, dropped).
type gcTuner struct {
	live     func() uint64
	set      func(int) int
	headroom uint64
	percent  int // the one set last
}

// step sets GOGC for the live heap now, when that differs from the one set last.
func (t *gcTuner) step() {
	if p := gcPercentFor(t.live(), t.headroom); p != t.percent {
		t.set(p)
		t.percent = p
	}
}

// tuneGCPercent runs a gcTuner every interval until ctx ends; a process whose GOGC setGCPercent
// set runs it (not one whose GOGC the environment gives).
func tuneGCPercent(ctx context.Context, interval time.Duration) {
	t := &gcTuner{live: liveHeapBytes, set: debug.SetGCPercent, headroom: gcHeadroom(debug.SetMemoryLimit(-1)), percent: gcPercentWithSoftLimit}
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
