package iceberg

import (
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/cachedb/cachedb/internal/mempool"
)

// The column cache. Data files are immutable: what a file at a path with a size holds never
// changes (a rewrite makes a new file). So the columns a direct read decodes from a row group
// stay right for as long as anyone asks, and a ColumnCache keeps them: per file, row group and
// Parquet column, the batches the direct reader made (dictionaries expanded), plus the files'
// footers. A later direct read of the same row group takes the cached columns instead of reading
// and decoding them again, and a read whose columns and footer are all cached does not open the
// file (no object-store request). Entries go least recently used first, when the cache passes
// its limit, and when the process's memory pool is short: the cache is one of the pool's
// evictors, so it gives way before queries are refused or partitions move to disk. What it holds
// is reserved from the pool as ColumnCacheConsumer.

// ColumnCacheConsumer names the column cache's reservation in the pool's statistics.
var ColumnCacheConsumer = mempool.Consumer{Name: "Iceberg column cache"}

// maxCachedFooters bounds the footers a column cache keeps (their bytes count toward its
// limit too).
const maxCachedFooters = 4096

// ColumnCache is a process's cache of decoded Parquet column chunks, shared by its Iceberg
// catalogs (Config.ColumnCache). It is safe for concurrent use.
type ColumnCache struct {
	limit int64
	mem   memory.Allocator
	res   *mempool.Reservation
	// removeEvictor takes the cache off the pool's evictors.
	removeEvictor func()

	mu      sync.Mutex
	chunks  *simplelru.LRU[chunkKey, *cachedChunk]
	footers *simplelru.LRU[fileKey, *cachedFooter]
	// bytes is what the entries hold: the reservation's size, give or take entries being added
	// or evicted right now.
	bytes int64

	hits, misses, evictions atomic.Int64
}

// fileKey names one data file of one catalog.
type fileKey struct {
	catalog, path string
	size          int64
}

// chunkKey names one column chunk as read: the file's row group and Parquet leaf column, and
// the Arrow type the batches have.
type chunkKey struct {
	file  fileKey
	group int
	leaf  int
	typ   string
}

// cachedChunk is one column chunk's batches, in the order the reader made them.
type cachedChunk struct {
	batches []arrow.Array
	bytes   int64
}

type cachedFooter struct {
	meta  *metadata.FileMetaData
	bytes int64
}

// NewColumnCache returns a cache holding at most limit bytes, reserved from pool (nil: a pool
// of its own without a limit). limit <= 0 returns nil: no cache. Close it when done.
func NewColumnCache(limit int64, pool *mempool.Pool) *ColumnCache {
	if limit <= 0 {
		return nil
	}
	if pool == nil {
		pool = mempool.Unlimited()
	}
	c := &ColumnCache{limit: limit, mem: memory.NewGoAllocator(), res: pool.Reserve(ColumnCacheConsumer)}
	c.chunks, _ = simplelru.NewLRU[chunkKey, *cachedChunk](1<<30, nil)
	c.footers, _ = simplelru.NewLRU[fileKey, *cachedFooter](maxCachedFooters, nil)
	c.removeEvictor = pool.AddEvictor(c.evict)
	return c
}

// Limit is the most the cache holds, in bytes.
func (c *ColumnCache) Limit() int64 { return c.limit }

// ColumnCacheStats is a snapshot of a cache's use.
type ColumnCacheStats struct {
	// Bytes is what the cached chunks and footers hold; Chunks counts the chunks.
	Bytes  int64
	Chunks int
	// Hits and Misses count column chunks a direct read found in the cache or had to decode;
	// Evictions counts chunks dropped to make room.
	Hits, Misses, Evictions int64
}

// Stats returns the cache's figures; nil has none.
func (c *ColumnCache) Stats() ColumnCacheStats {
	if c == nil {
		return ColumnCacheStats{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return ColumnCacheStats{Bytes: c.bytes, Chunks: c.chunks.Len(),
		Hits: c.hits.Load(), Misses: c.misses.Load(), Evictions: c.evictions.Load()}
}

// Close drops every entry and gives the memory back. The cache must not be used after.
func (c *ColumnCache) Close() {
	if c == nil {
		return
	}
	c.removeEvictor()
	c.evict(1 << 62)
}

// alloc is the allocator of batches meant for the cache: its own, since cached batches outlive
// the query that read them.
func (c *ColumnCache) alloc() memory.Allocator { return c.mem }

// chunk returns the cached batches of k, each retained for the caller; nil when not cached.
func (c *ColumnCache) chunk(k chunkKey) []arrow.Array {
	c.mu.Lock()
	e, ok := c.chunks.Get(k)
	var out []arrow.Array
	if ok {
		out = make([]arrow.Array, len(e.batches))
		for i, b := range e.batches {
			b.Retain()
			out[i] = b
		}
	}
	c.mu.Unlock()
	if ok {
		c.hits.Add(1)
	} else {
		c.misses.Add(1)
	}
	return out
}

// putChunk caches batches as k's (retaining them) when they fit: the cache evicts its oldest
// entries to stay within its limit and reserves the bytes from the pool; a chunk the pool
// refuses, or larger than a quarter of the limit, is not cached.
func (c *ColumnCache) putChunk(k chunkKey, batches []arrow.Array) {
	n := int64(0)
	for _, b := range batches {
		n += arrayBytes(b.Data())
	}
	if n > c.limit/4 || !c.admit(n) {
		return
	}
	for _, b := range batches {
		b.Retain()
	}
	c.mu.Lock()
	if c.chunks.Contains(k) {
		// Another read of the same chunk got here first: keep its batches.
		c.mu.Unlock()
		c.res.Shrink(n)
		releaseAll(batches)
		return
	}
	c.chunks.Add(k, &cachedChunk{batches: batches, bytes: n})
	c.bytes += n
	c.mu.Unlock()
}

// footer returns the cached footer of f, nil when not cached.
func (c *ColumnCache) footer(f fileKey) *metadata.FileMetaData {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.footers.Get(f); ok {
		return e.meta
	}
	return nil
}

// putFooter caches f's footer, when it fits as a chunk would.
func (c *ColumnCache) putFooter(f fileKey, meta *metadata.FileMetaData) {
	n := int64(meta.Size())
	if n > c.limit/4 || !c.admit(n) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.footers.Contains(f) {
		c.res.Shrink(n)
		return
	}
	if c.footers.Len() == maxCachedFooters {
		if _, old, ok := c.footers.RemoveOldest(); ok {
			c.bytes -= old.bytes
			c.res.Shrink(old.bytes)
		}
	}
	c.footers.Add(f, &cachedFooter{meta: meta, bytes: n})
	c.bytes += n
}

// admit makes room for n more bytes within the limit and reserves them from the pool; false
// when the pool refuses them. No lock is held while reserving: the pool may ask this cache's
// evict.
func (c *ColumnCache) admit(n int64) bool {
	c.mu.Lock()
	over := c.bytes + n - c.limit
	c.mu.Unlock()
	if over > 0 {
		c.evict(over)
	}
	return c.res.TryGrow(n) == nil
}

// evict drops the least recently used entries, chunks before footers, until need bytes are
// freed or none is left, gives their reservation back and returns what it freed (the pool's
// Reclaimer contract).
func (c *ColumnCache) evict(need int64) int64 {
	var dropped [][]arrow.Array
	freed := int64(0)
	c.mu.Lock()
	for freed < need {
		_, e, ok := c.chunks.RemoveOldest()
		if !ok {
			break
		}
		freed += e.bytes
		dropped = append(dropped, e.batches)
		c.evictions.Add(1)
	}
	for freed < need {
		_, e, ok := c.footers.RemoveOldest()
		if !ok {
			break
		}
		freed += e.bytes
	}
	c.bytes -= freed
	c.mu.Unlock()
	c.res.Shrink(freed)
	for _, b := range dropped {
		releaseAll(b)
	}
	return freed
}

// arrayBytes is the memory an array's buffers hold, their capacity beyond their length (a
// Parquet reader's builders leave some) and their children's included.
func arrayBytes(d arrow.ArrayData) int64 {
	n := int64(0)
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Cap())
		}
	}
	for _, ch := range d.Children() {
		n += arrayBytes(ch)
	}
	// (*array.Data).Dictionary is a nil *array.Data, not a nil interface, when there is none.
	if dict, ok := d.Dictionary().(*array.Data); ok && dict != nil {
		n += arrayBytes(dict)
	}
	return n
}

func releaseAll(arrs []arrow.Array) {
	for _, a := range arrs {
		if a != nil {
			a.Release()
		}
	}
}
