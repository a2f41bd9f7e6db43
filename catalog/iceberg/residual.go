package iceberg

import "github.com/apache/iceberg-go"

// readResidual is the residual filter a task is read with. iceberg-go applies a task's residual
// in two ways: it skips the row groups whose statistics (and dictionaries and bloom filters)
// rule it out, and it evaluates it on every row it reads, copying the rows that pass into new
// batches. The engine applies the query's whole filter to every row a scan returns anyway
// (catalog.ScanRequest), so the row-by-row pass is work done twice; but the row-group skipping
// is only redundant where planning already tested the task's row groups against the filter with
// its file's footer (pruneRowGroups, tested). Such a task reads with no residual at all
// (AlwaysTrue: no row filter, no second pruning); any other task keeps the scan's read filter
// (nil: iceberg-go then uses the scan's row filter, see icebergFilter), so that a file whose
// footer planning did not read still has its row groups skipped.
func readResidual(pt prunedTask) iceberg.BooleanExpression {
	if pt.tested {
		return iceberg.AlwaysTrue{}
	}
	return nil
}
