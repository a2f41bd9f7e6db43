package main

import (
	"runtime/debug"
	"testing"

	"github.com/spf13/cobra"

	"github.com/cachedb/cachedb/internal/mempool"
)

func TestMemoryFlagsBuildThePoolAndTheGoSoftLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	t.Setenv("GOMEMLIMIT", "")
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
	mem.tiers.Close()

	mem, err = parse("--memory-limit=256MiB", "--disk-dir="+t.TempDir(), "--disk-limit=1GiB")
	if err != nil {
		t.Fatal(err)
	}
	defer mem.tiers.Close()
	if mem.pool.Limit() != 256<<20 {
		t.Errorf("--memory-limit=256MiB gave %d", mem.pool.Limit())
	}
	if got := debug.SetMemoryLimit(-1); got != 256<<20+goSlackMin {
		t.Errorf("Go soft limit %d, want the limit plus the minimum slack", got)
	}
	if got := goSoftLimit(4 << 30); got != 5<<30 {
		t.Errorf("soft limit of 4GiB = %d, want 5GiB", got)
	}
	if mem, err := parse("--memory-limit=0"); err != nil || mem.pool.Limit() != 0 {
		t.Errorf("--memory-limit=0: %v, %v", mem.pool, err)
	} else {
		mem.tiers.Close()
	}
	for _, bad := range [][]string{{"--memory-limit=lots"}, {"--disk-limit=1GiB"}, {"--disk-dir=/dev/null/x"}} {
		if _, err := parse(bad...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
