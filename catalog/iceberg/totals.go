package iceberg

import (
	"container/list"
	"context"
	"strconv"
	"sync"

	"github.com/apache/iceberg-go/table"
)

// totalsCacheSize bounds the snapshots whose totals a catalog remembers.
const totalsCacheSize = 256

// totalsCache remembers snapshotTotals by metadata location and snapshot id. Both name
// immutable content, so an entry never goes stale; it only ages out.
type totalsCache struct {
	mu    sync.Mutex
	byKey map[string]*list.Element
	lru   list.List // front = most recently used; values are *totalsEntry
}

type totalsEntry struct {
	key string
	tot snapshotTotals
}

func (c *totalsCache) get(key string) (snapshotTotals, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.lru.MoveToFront(el)
		return el.Value.(*totalsEntry).tot, true
	}
	return snapshotTotals{}, false
}

func (c *totalsCache) put(key string, tot snapshotTotals) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey == nil {
		c.byKey = map[string]*list.Element{}
	}
	if el, ok := c.byKey[key]; ok {
		el.Value.(*totalsEntry).tot = tot
		c.lru.MoveToFront(el)
		return
	}
	c.byKey[key] = c.lru.PushFront(&totalsEntry{key: key, tot: tot})
	for c.lru.Len() > totalsCacheSize {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.byKey, old.Value.(*totalsEntry).key)
	}
}

// totals returns the data files and row groups of t's pinned snapshot for EXPLAIN. planned is
// the plan just made; when it was made without a filter it covers the whole snapshot and is
// counted directly. Otherwise the total files come from the snapshot summary and the total row
// groups from a filterless plan (manifests only), computed once per snapshot. A failure to
// count leaves the row groups unknown rather than failing the scan.
func (c *Catalog) totals(ctx context.Context, t *Table, planned []table.FileScanTask, filtered bool) snapshotTotals {
	key := t.tbl.MetadataLocation() + "#" + strconv.FormatInt(t.pin.snap.SnapshotID, 10)
	if tot, ok := c.totalsCache.get(key); ok {
		return tot
	}
	if !filtered {
		tot := totalsOf(planned)
		c.totalsCache.put(key, tot)
		return tot
	}
	tot := snapshotTotals{files: summaryFiles(t.pin.snap), rowGroups: -1}
	scan, err := t.newScan(t.tbl)
	if err != nil {
		return tot
	}
	all, err := scan.PlanFiles(ctx)
	_ = scan.Close()
	if err != nil {
		return tot
	}
	counted := totalsOf(all)
	if tot.files < 0 {
		tot.files = counted.files
	}
	tot.rowGroups = counted.rowGroups
	c.totalsCache.put(key, tot)
	return tot
}
