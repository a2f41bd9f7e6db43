package exec

import "sync"

// QueryCache holds values computed once per execution of a query and shared by every
// partition and every outer row: the results of uncorrelated subqueries. A subquery that reads
// no column of any enclosing query has the same result wherever it is evaluated, so computing
// it once turns a per-batch (or, nested in a correlated subquery, per-row) cost into a
// per-query one.
//
// Values that hold Arrow memory are released by Release, which the owner of the execution
// calls once every reader of the query is released.
type QueryCache struct {
	mu      sync.Mutex
	entries map[any]*cacheEntry
}

type cacheEntry struct {
	once sync.Once
	val  any
	err  error
}

// NewQueryCache returns an empty cache.
func NewQueryCache() *QueryCache { return &QueryCache{entries: map[any]*cacheEntry{}} }

// Do returns the value cached under key, computing it with f on first use. Concurrent callers
// for one key wait for the first computation. An error is cached too: the query fails anyway.
// A nil cache computes every time.
func (c *QueryCache) Do(key any, f func() (any, error)) (any, error) {
	if c == nil {
		return f()
	}
	c.mu.Lock()
	e := c.entries[key]
	if e == nil {
		e = &cacheEntry{}
		c.entries[key] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.val, e.err = f() })
	return e.val, e.err
}

// Release frees the Arrow memory of the cached values and empties the cache.
func (c *QueryCache) Release() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if r, ok := e.val.(interface{ Release() }); ok && e.err == nil {
			r.Release()
		}
	}
	c.entries = map[any]*cacheEntry{}
}
