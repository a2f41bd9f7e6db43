package iceberg

import (
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
)

// snapshotCacheSize bounds the snapshots whose derived facts (data-file counts, file
// summaries) a catalog remembers.
const snapshotCacheSize = 256

// snapshotCache remembers a value derived from a snapshot by metadata location and snapshot id.
// Both name immutable content, so an entry never goes stale; it only ages out (least recently
// used first). Concurrent misses of one key may each compute the value; the results are the
// same. The zero value is ready to use.
type snapshotCache[V any] struct {
	once  sync.Once
	cache *lru.Cache[string, V]
}

func (c *snapshotCache[V]) entries() *lru.Cache[string, V] {
	c.once.Do(func() {
		// lru.New fails only for a size below 1.
		c.cache, _ = lru.New[string, V](snapshotCacheSize)
	})
	return c.cache
}

func (c *snapshotCache[V]) get(key string) (V, bool) { return c.entries().Get(key) }

func (c *snapshotCache[V]) put(key string, v V) { c.entries().Add(key, v) }
