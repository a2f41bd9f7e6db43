package iceberg

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/internal/mempool"
)

// cachedLake is a lake with one table "t" of 400 rows in two files of row groups of 64 rows,
// with string columns dictionary-encoded.
func cachedLake(t *testing.T) *lake {
	l := newLake(t, "lake")
	tbl := l.create("default", "t", directSchema(), icecat.WithProperties(iceberg.Properties{table.ParquetRowGroupLimitKey: "64"}))
	tbl = appendJSON(t, tbl, directRows(0, 300))
	appendJSON(t, tbl, directRows(1000, 100))
	return l
}

// removeDataFiles deletes every Parquet file under the lake, so that a read that still needs
// one fails.
func removeDataFiles(t *testing.T, l *lake) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(l.dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".parquet") {
			n++
			return os.Remove(p)
		}
		return err
	})
	if err != nil || n == 0 {
		t.Fatalf("removed %d data files: %v", n, err)
	}
}

// TestColumnCacheServesRepeatedReads: a second read of the same columns takes every column
// chunk and footer from the cache, with the same rows, and opens no file (the files are gone).
func TestColumnCacheServesRepeatedReads(t *testing.T) {
	l := cachedLake(t)
	cache := NewColumnCache(64<<20, nil)
	defer cache.Close()
	c := l.reader(Config{ColumnCache: cache})
	plain := l.reader(Config{})
	plain.noDirect = true
	req := catalog.ScanRequest{Columns: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}
	want := scanTable(t, plain, "t", req)
	first := scanTable(t, c, "t", req)
	after := cache.Stats()
	if after.Misses == 0 || after.Hits != 0 || after.Chunks != int(after.Misses) || after.Bytes <= 0 {
		t.Fatalf("after the first read: %+v; want every chunk missed, then cached", after)
	}
	removeDataFiles(t, l)
	second := scanTable(t, c, "t", req)
	st := cache.Stats()
	if st.Misses != after.Misses || st.Hits != after.Misses {
		t.Errorf("second read: %+v; want %d hits and no new miss", st, after.Misses)
	}
	for name, got := range map[string]scanResult{"first": first, "second": second} {
		if !slices.Equal(got.rows, want.rows) || !got.sch.Equal(want.sch) {
			t.Errorf("%s read: %d rows (%q…), want iceberg-go's %d (%q…)", name, len(got.rows), head(got.rows), len(want.rows), head(want.rows))
		}
	}
}

// TestColumnCacheMixesCachedAndReadColumns: a read of more columns than the cache holds takes
// the cached ones and reads the others, with iceberg-go's rows, for whole files, pruned row
// groups and split tasks; a filter that keeps fewer row groups reads only cached chunks.
func TestColumnCacheMixesCachedAndReadColumns(t *testing.T) {
	l := cachedLake(t)
	cache := NewColumnCache(64<<20, nil)
	defer cache.Close()
	plain := l.reader(Config{})
	plain.noDirect = true
	steps := []struct {
		name  string
		split int64
		req   catalog.ScanRequest
		hits  bool // some chunk comes from the cache
		miss  bool // some chunk is read from the file
	}{
		{"two columns", 0, catalog.ScanRequest{Columns: []int{0, 1}}, false, true},
		{"those and three more, reordered", 0, catalog.ScanRequest{Columns: []int{9, 1, 0, 2, 3}}, true, true},
		{"split tasks", 1, catalog.ScanRequest{Columns: []int{3, 0}}, true, false},
		{"pruned row groups", 0, catalog.ScanRequest{Columns: []int{1, 0, 2}, Filter: between(0, i64(60), i64(200))}, true, false},
		{"a new column of pruned row groups", 0, catalog.ScanRequest{Columns: []int{5}, Filter: between(0, i64(60), i64(200))}, false, true},
	}
	for _, step := range steps {
		c := l.reader(Config{ColumnCache: cache, SplitBytes: step.split})
		before := cache.Stats()
		got := scanTable(t, c, "t", step.req)
		st := cache.Stats()
		want := scanTable(t, plain, "t", step.req)
		if !slices.Equal(got.rows, want.rows) || !got.sch.Equal(want.sch) {
			t.Errorf("%s: %d rows (%q…), want iceberg-go's %d (%q…)", step.name, len(got.rows), head(got.rows), len(want.rows), head(want.rows))
		}
		if hits, misses := st.Hits > before.Hits, st.Misses > before.Misses; hits != step.hits || misses != step.miss {
			t.Errorf("%s: hits %d→%d, misses %d→%d; want hits %t, misses %t", step.name, before.Hits, st.Hits, before.Misses, st.Misses, step.hits, step.miss)
		}
	}
}

// TestColumnCacheStaysWithinLimit: a cache smaller than the table keeps at most its limit,
// dropping the least recently used chunks, and reads stay right.
func TestColumnCacheStaysWithinLimit(t *testing.T) {
	l := cachedLake(t)
	full := NewColumnCache(64<<20, nil)
	defer full.Close()
	req := catalog.ScanRequest{Columns: []int{0, 1, 2, 3}}
	want := scanTable(t, l.reader(Config{ColumnCache: full}), "t", req)
	limit := full.Stats().Bytes / 3
	small := NewColumnCache(limit, nil)
	defer small.Close()
	c := l.reader(Config{ColumnCache: small})
	for range 2 {
		got := scanTable(t, c, "t", req)
		if !slices.Equal(got.rows, want.rows) {
			t.Fatalf("%d rows, want %d", len(got.rows), len(want.rows))
		}
		if st := small.Stats(); st.Bytes > limit || st.Bytes == 0 || st.Evictions == 0 {
			t.Errorf("cache of %d bytes: %+v; want some kept, within the limit, and evictions", limit, st)
		}
	}
}

// TestColumnCacheGivesWayToThePool: the cache's memory is reserved from the pool, and a
// reservation the pool could not grant otherwise evicts cached chunks first.
func TestColumnCacheGivesWayToThePool(t *testing.T) {
	l := cachedLake(t)
	pool := mempool.New(1 << 30)
	cache := NewColumnCache(64<<20, pool)
	defer cache.Close()
	scanTable(t, l.reader(Config{ColumnCache: cache}), "t", catalog.ScanRequest{})
	held := cache.Stats().Bytes
	if got := consumerBytes(pool, ColumnCacheConsumer.Name); held == 0 || got != held {
		t.Fatalf("cache holds %d bytes, the pool counts %d for it", held, got)
	}
	other := pool.Reserve(mempool.Consumer{Name: "sort"})
	defer other.Free()
	if err := other.TryGrow(pool.Limit() - held/2); err != nil {
		t.Fatalf("a reservation that fits once the cache gives way: %v", err)
	}
	st := cache.Stats()
	if st.Bytes > held/2 || st.Evictions == 0 || consumerBytes(pool, ColumnCacheConsumer.Name) != st.Bytes {
		t.Errorf("after the pool ran short: %+v, pool counts %d; want at least half evicted", st, consumerBytes(pool, ColumnCacheConsumer.Name))
	}
	cache.Close()
	if got := consumerBytes(pool, ColumnCacheConsumer.Name); got != 0 {
		t.Errorf("closed cache still holds %d bytes of the pool", got)
	}
}

// TestColumnCacheKeepsOnlyWholeRowGroups: a read stopped after its first batch caches
// nothing of the row group it left unfinished.
func TestColumnCacheKeepsOnlyWholeRowGroups(t *testing.T) {
	l := cachedLake(t)
	cache := NewColumnCache(64<<20, nil)
	defer cache.Close()
	c := l.reader(Config{ColumnCache: cache})
	tbl, err := c.Table(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := tbl.Scan(context.Background(), catalog.ScanRequest{Columns: []int{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := plan.Tasks[0].Open(context.Background(), memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	if !rdr.Next() {
		t.Fatalf("no batch: %v", rdr.Err())
	}
	rdr.Release()
	if st := cache.Stats(); st.Chunks != 0 || st.Misses != 2 {
		t.Errorf("after one batch of a row group: %+v; want 2 misses and nothing cached", st)
	}
}

func consumerBytes(p *mempool.Pool, name string) int64 {
	for _, c := range p.Stats().Consumers {
		if c.Name == name {
			return c.Bytes
		}
	}
	return 0
}

// TestColumnCacheLeavesReadOnceReadsOut: a read marked catalog.ReadOnce (a dataset partition
// being made, which keeps its rows) takes cached chunks but caches none of those it reads.
func TestColumnCacheLeavesReadOnceReadsOut(t *testing.T) {
	l := cachedLake(t)
	cache := NewColumnCache(64<<20, nil)
	defer cache.Close()
	c := l.reader(Config{ColumnCache: cache})
	scanTable(t, c, "t", catalog.ScanRequest{Columns: []int{0}})
	held := cache.Stats()
	tbl, err := c.Table(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	res, err := tryScanCtx(catalog.WithReadOnce(context.Background()), tbl, catalog.ScanRequest{Columns: []int{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	rows := len(res.rows)
	st := cache.Stats()
	if rows != 400 || st.Chunks != held.Chunks || st.Hits-held.Hits != int64(held.Chunks) || st.Misses == held.Misses {
		t.Errorf("read-once read of %d rows: cache %+v, before %+v; want the cached column's chunks hit and nothing added", rows, st, held)
	}
}
