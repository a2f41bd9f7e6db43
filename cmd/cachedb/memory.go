package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/cachedb/cachedb/catalog/iceberg"
	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/mempool"
	"github.com/cachedb/cachedb/internal/metrics"
	"github.com/cachedb/cachedb/node"
)

// memoryFlags are a server process's memory budget and disk tier (docs/memory.md).
type memoryFlags struct {
	memoryLimit string
	diskDir     string
	diskLimit   string
	spillLimit  string
	columnCache string
}

func (m *memoryFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&m.memoryLimit, "memory-limit", "default", "memory this process may hold for dataset partitions, query state and training reads (256MiB, 4GiB, ...; 0: no limit; default: "+fmt.Sprint(mempool.DefaultFraction)+" of the cgroup's limit or of the host's memory)")
	f.StringVar(&m.diskDir, "disk-dir", "", "directory of the disk tier: dataset partitions that do not fit in --memory-limit move there as Arrow files (default: no disk tier; partitions that do not fit are refused)")
	f.StringVar(&m.diskLimit, "disk-limit", "0", "most the disk tier may hold (256MiB, 100GiB, ...; 0: the free space of --disk-dir's file system)")
	f.StringVar(&m.columnCache, "column-cache", "default", "most the cache of decoded Iceberg column chunks may hold, so that repeated queries over the same tables skip reading and decoding their Parquet files (256MiB, 4GiB, ...; 0: no cache; default: a quarter of --memory-limit, 1GiB without a limit); it gives its memory back first when the budget runs short")
	f.StringVar(&m.spillLimit, "spill-limit", "default", "most the spill files of queries whose memory ran out may hold at once (a query past it fails with RESOURCE_EXHAUSTED; 0: no limit; default: half the free space of the spill directory's file system at start)")
}

// The process's memory may pass --memory-limit by a slack: what the pool does not count (the Go
// runtime and its garbage, gRPC and Parquet decode buffers, goroutine stacks). The slack is a
// quarter of the limit, at least goSlackMin. The Go runtime's soft memory limit is the limit plus
// the slack less an eighth of the slack: the runtime passes its soft limit by a few megabytes
// while a collection runs, and the process maps memory besides the Go heap (its binary's data,
// thread stacks). With the soft limit at the whole allowance a 256 MiB data node held 538 and
// 542 MB of anonymous memory against the 537 MB allowed, in two of three saturated runs.
const goSlackMin = 256 << 20

// goSlack is the slack for a pool limit.
func goSlack(limit int64) int64 { return max(limit/4, goSlackMin) }

// goSoftLimit is the Go runtime's soft memory limit for a pool limit (0: none).
func goSoftLimit(limit int64) int64 {
	if limit <= 0 {
		return 0
	}
	return limit + goSlack(limit) - goSlack(limit)/8
}

// processMemory is one process's memory budget and partition tiers, shared by its head and
// data-node engines and runtimes.
type processMemory struct {
	pool  *mempool.Pool
	tiers *node.Tiers
	// spillDir is where operators spill (engine.Config.SpillDir): under --disk-dir when given.
	spillDir string
	// spill bounds the spill files of the process (engine.Config.Spill).
	spill *exec.SpillBudget
	// columns caches the column chunks Iceberg reads decode (nil: no cache); its memory is
	// reserved from pool.
	columns *iceberg.ColumnCache
	// tuneGC says the process set its GOGC (setGCPercent), which tuneGCPercent then keeps
	// following the live heap.
	tuneGC bool
}

// start builds the process's pool and tiers from the flags, sets the Go runtime's soft memory
// limit from the pool's limit (unless GOMEMLIMIT is set) and logs them. Close the tiers after
// every runtime.
func (m memoryFlags) start() (processMemory, error) {
	limit := mempool.DefaultLimit()
	if m.memoryLimit != "default" && m.memoryLimit != "" {
		n, err := mempool.ParseBytes(m.memoryLimit)
		if err != nil {
			return processMemory{}, fmt.Errorf("--memory-limit: %w", err)
		}
		limit = n
	}
	diskLimit, err := mempool.ParseBytes(m.diskLimit)
	if err != nil {
		return processMemory{}, fmt.Errorf("--disk-limit: %w", err)
	}
	if diskLimit > 0 && m.diskDir == "" {
		return processMemory{}, fmt.Errorf("--disk-limit needs --disk-dir")
	}
	pool := mempool.New(limit)
	tiers, err := node.NewTiers(node.TiersConfig{Pool: pool, DiskDir: m.diskDir, DiskLimit: diskLimit})
	if err != nil {
		return processMemory{}, fmt.Errorf("--disk-dir: %w", err)
	}
	attrs := []any{"memory_limit", describeLimit(limit)}
	if soft := goSoftLimit(limit); soft > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(soft)
		attrs = append(attrs, "go_soft_limit", mempool.FormatBytes(soft))
	}
	tuneGC := false
	if p := setGCPercent(debug.SetMemoryLimit(-1), os.Getenv); p > 0 {
		attrs = append(attrs, "go_gc_percent", p)
		tuneGC = true
	}
	if m.diskDir != "" {
		disk := "free space"
		if diskLimit > 0 {
			disk = mempool.FormatBytes(diskLimit)
		}
		attrs = append(attrs, "disk_dir", m.diskDir, "disk_limit", disk)
	}
	spillDir := ""
	if m.diskDir != "" {
		spillDir = filepath.Join(m.diskDir, fmt.Sprintf("cachedb-spill-%d", os.Getpid()))
		attrs = append(attrs, "spill_dir", spillDir)
	}
	spillLimit, err := m.spillBytes()
	if err != nil {
		tiers.Close()
		return processMemory{}, err
	}
	attrs = append(attrs, "spill_limit", describeLimit(spillLimit))
	cacheLimit, err := m.columnCacheBytes(limit)
	if err != nil {
		tiers.Close()
		return processMemory{}, err
	}
	attrs = append(attrs, "column_cache", describeLimit(cacheLimit))
	columns := iceberg.NewColumnCache(cacheLimit, pool)
	if columns != nil {
		metrics.SetColumnCacheSource(func() metrics.ColumnCacheFigures {
			st := columns.Stats()
			return metrics.ColumnCacheFigures{Bytes: st.Bytes, Hits: st.Hits, Misses: st.Misses, Evictions: st.Evictions}
		})
	}
	slog.Info("memory budget", attrs...)
	return processMemory{pool: pool, tiers: tiers, spillDir: spillDir, spill: exec.NewSpillBudget(spillLimit), columns: columns, tuneGC: tuneGC}, nil
}

// close gives back what the process's memory holds: the column cache, then the tiers. Call it
// after every runtime stopped.
func (m processMemory) close() {
	m.columns.Close()
	m.tiers.Close()
}

// defaultColumnCache is --column-cache without a --memory-limit.
const defaultColumnCache = 1 << 30

// columnCacheBytes is --column-cache: by default a quarter of the pool's limit.
func (m memoryFlags) columnCacheBytes(limit int64) (int64, error) {
	if m.columnCache != "default" && m.columnCache != "" {
		n, err := mempool.ParseBytes(m.columnCache)
		if err != nil {
			return 0, fmt.Errorf("--column-cache: %w", err)
		}
		return n, nil
	}
	if limit <= 0 {
		return defaultColumnCache, nil
	}
	return limit / 4, nil
}

// spillBytes is --spill-limit: by default half the free space of the file system spills go to
// (--disk-dir's, else the temporary directory's).
func (m memoryFlags) spillBytes() (int64, error) {
	if m.spillLimit != "default" && m.spillLimit != "" {
		n, err := mempool.ParseBytes(m.spillLimit)
		if err != nil {
			return 0, fmt.Errorf("--spill-limit: %w", err)
		}
		return n, nil
	}
	dir := m.diskDir
	if dir == "" {
		dir = os.TempDir()
	}
	return node.FreeSpace(dir) / 2, nil
}

func describeLimit(n int64) string {
	if n <= 0 {
		return "none"
	}
	return mempool.FormatBytes(n)
}
