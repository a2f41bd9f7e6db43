package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"

	"github.com/spf13/cobra"

	"github.com/cachedb/cachedb/internal/mempool"
)

func TestMemoryFlagsBuildThePoolAndTheGoSoftLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("GOGC", "")
	parse := func(args ...string) (processMemory, error) {
		var m memoryFlags
		cmd := &cobra.Command{}
		m.register(cmd)
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		return m.start()
	}
	mem, err := parse()
	if err != nil {
		t.Fatal(err)
	}
	if mem.pool.Limit() != mempool.DefaultLimit() {
		t.Errorf("default limit %d, want %d", mem.pool.Limit(), mempool.DefaultLimit())
	}
	mem.close()

	mem, err = parse("--memory-limit=256MiB", "--disk-dir="+t.TempDir(), "--disk-limit=1GiB")
	if err != nil {
		t.Fatal(err)
	}
	defer mem.close()
	if mem.pool.Limit() != 256<<20 {
		t.Errorf("--memory-limit=256MiB gave %d", mem.pool.Limit())
	}
	if got := debug.SetMemoryLimit(-1); got != 256<<20+goSlackMin-goSlackMin/8 {
		t.Errorf("Go soft limit %d, want the limit plus the minimum slack less an eighth of it", got)
	}
	if got := debug.SetGCPercent(gcPercentWithSoftLimit); got != gcPercentWithSoftLimit {
		t.Errorf("GOGC %d under a soft limit, want %d", got, gcPercentWithSoftLimit)
	}
	if got := goSoftLimit(4 << 30); got != 5<<30-128<<20 {
		t.Errorf("soft limit of 4GiB = %d, want 5GiB less 128MiB", got)
	}
	if mem, err := parse("--memory-limit=0"); err != nil || mem.pool.Limit() != 0 {
		t.Errorf("--memory-limit=0: %v, %v", mem.pool, err)
	} else {
		mem.close()
	}
	for _, bad := range [][]string{{"--memory-limit=lots"}, {"--disk-limit=1GiB"}, {"--disk-dir=/dev/null/x"}} {
		if _, err := parse(bad...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestGCPercentFollowsTheSoftLimit(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	noEnv := func(string) string { return "" }
	if got := setGCPercent(math.MaxInt64, noEnv); got != -1 {
		t.Errorf("without a soft limit set GOGC %d, want Go's default left alone", got)
	}
	if got := setGCPercent(0, noEnv); got != -1 {
		t.Errorf("with a zero soft limit set GOGC %d, want none", got)
	}
	if got := setGCPercent(1<<30, func(k string) string {
		if k == "GOGC" {
			return "50"
		}
		return ""
	}); got != -1 {
		t.Errorf("GOGC in the environment was overridden with %d", got)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC changed to %d where it should have been left alone", got)
	}
	if got := setGCPercent(1<<30, noEnv); got != gcPercentWithSoftLimit {
		t.Errorf("with a soft limit set GOGC %d, want %d", got, gcPercentWithSoftLimit)
	}
	if got := debug.SetGCPercent(100); got != gcPercentWithSoftLimit {
		t.Errorf("the runtime's GOGC is %d, want %d", got, gcPercentWithSoftLimit)
	}
}

// GOGC follows the live heap: about gcHeadroomBytes of garbage between collections (an eighth
// of a soft limit below 8 GiB: 400 % of a small heap under the 512 MiB soft limit of a 256 MiB
// budget), high while the heap is small, lower as datasets fill it, never below 100; the tuner
// sets it only when it changes.
func TestGCPercentFollowsTheLiveHeap(t *testing.T) {
	const gib = 1 << 30
	for _, c := range []struct {
		live, headroom uint64
		want           int
	}{
		{0, gib, gib * 100 / gcMinLiveBytes},
		{1 << 20, gib, gib * 100 / gcMinLiveBytes},
		{100 << 20, gib, 1024},
		{gib / 4, gib, 400},
		{gib / 2, gib, 200},
		{gib, gib, 100},
		{3 * gib / 2, gib, 100},
		{1 << 40, gib, 100},
		{0, 64 << 20, 400},
		{64 << 20, 64 << 20, 100},
		{32 << 20, 128 << 20, 400},
	} {
		if got := gcPercentFor(c.live, c.headroom); got != c.want {
			t.Errorf("live heap %d, headroom %d: GOGC %d, want %d", c.live, c.headroom, got, c.want)
		}
	}
	for _, c := range []struct {
		softLimit int64
		want      uint64
	}{
		{0, gib}, {math.MaxInt64, gib}, {512 << 20, 64 << 20}, {4 * gib, 512 << 20}, {8 * gib, gib}, {64 * gib, gib},
	} {
		if got := gcHeadroom(c.softLimit); got != c.want {
			t.Errorf("soft limit %d: headroom %d, want %d", c.softLimit, got, c.want)
		}
	}
	var live uint64
	var sets []int
	tuner := &gcTuner{live: func() uint64 { return live }, set: func(p int) int { sets = append(sets, p); return 0 }, headroom: gib, percent: gcPercentWithSoftLimit}
	for _, l := range []uint64{1400 << 20, 1400 << 20, gib / 2, gib / 4, 100 << 20} {
		live = l
		tuner.step()
	}
	if want := []int{100, 200, 400, 1024}; !slices.Equal(sets, want) {
		t.Errorf("the tuner set GOGC %v, want %v", sets, want)
	}
	runtime.GC()
	if liveHeapBytes() == 0 {
		t.Error("the runtime reports no live heap")
	}
}
