package iceberg

import (
	"context"
	"strconv"

	"github.com/apache/iceberg-go/table"
)

// totalFiles is the number of data files in t's pinned snapshot for EXPLAIN, "?" when it cannot
// be counted: the snapshot summary's total-data-files; else, when planned was made without a
// filter (so it covers the whole snapshot), its files; else those of a filterless plan
// (manifests only), computed once per snapshot.
func (c *Catalog) totalFiles(ctx context.Context, t *Table, planned []table.FileScanTask, filtered bool) string {
	if n := summaryFiles(t.pin.snap); n >= 0 {
		return strconv.FormatInt(n, 10)
	}
	key := t.tbl.MetadataLocation() + "#" + strconv.FormatInt(t.pin.snap.SnapshotID, 10)
	if n, ok := c.totalsCache.get(key); ok {
		return strconv.FormatInt(n, 10)
	}
	if filtered {
		scan, err := t.newScan(t.tbl)
		if err != nil {
			return "?"
		}
		all, err := scan.PlanFiles(ctx)
		_ = scan.Close()
		if err != nil {
			return "?"
		}
		planned = all
	}
	n := filesIn(planned)
	c.totalsCache.put(key, n)
	return strconv.FormatInt(n, 10)
}

// filesIn counts the distinct data files of a plan.
func filesIn(tasks []table.FileScanTask) int64 {
	seen := map[string]bool{}
	for _, task := range tasks {
		seen[task.File.FilePath()] = true
	}
	return int64(len(seen))
}

// summaryFiles reads the snapshot summary's total-data-files, -1 when absent.
func summaryFiles(snap *table.Snapshot) int64 {
	if snap == nil || snap.Summary == nil {
		return -1
	}
	if v, ok := snap.Summary.Properties["total-data-files"]; ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			return n
		}
	}
	return -1
}
