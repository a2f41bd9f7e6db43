package iceberg

import (
	"container/list"
	"sync"
)

// statsCacheSize bounds the snapshots whose file summaries a catalog remembers.
const statsCacheSize = 256

// statsCache remembers file summaries (Statistics) by metadata location and snapshot id. Both
// name immutable content, so an entry never goes stale; it only ages out. Concurrent misses
// of one key may each compute the summary; the results are the same.
type statsCache struct {
	mu    sync.Mutex
	byKey map[string]*list.Element
	lru   list.List // front = most recently used; values are *statsEntry
}

type statsEntry struct {
	key string
	sum *fileSummary
}

func (c *statsCache) get(key string) (*fileSummary, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.lru.MoveToFront(el)
		return el.Value.(*statsEntry).sum, true
	}
	return nil, false
}

func (c *statsCache) put(key string, sum *fileSummary) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey == nil {
		c.byKey = map[string]*list.Element{}
	}
	if el, ok := c.byKey[key]; ok {
		el.Value.(*statsEntry).sum = sum
		c.lru.MoveToFront(el)
		return
	}
	c.byKey[key] = c.lru.PushFront(&statsEntry{key: key, sum: sum})
	for c.lru.Len() > statsCacheSize {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.byKey, old.Value.(*statsEntry).key)
	}
}
