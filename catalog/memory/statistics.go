package memory

import (
	"context"

	"github.com/cachedb/cachedb/catalog"
)

var (
	_ catalog.StatisticsTable = (*Table)(nil)
	_ catalog.StatisticsTable = (*Dataset)(nil)
)

// Statistics implements catalog.StatisticsTable: the row count and each column's null count, both
// exact for the table's current contents (arrays carry their null counts, so nothing is read).
func (t *Table) Statistics(context.Context) (catalog.Statistics, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	cols := make([]catalog.ColumnStatistics, t.schema.NumFields())
	for i := range cols {
		cols[i] = catalog.UnknownColumn
		cols[i].Nulls = 0
	}
	for _, b := range t.batches {
		for i := range cols {
			cols[i].Nulls += int64(b.Column(i).NullN())
		}
	}
	return catalog.Statistics{Rows: t.rows, Columns: cols}, nil
}

// Statistics implements catalog.StatisticsTable: the row count of the partitions known so far
// (on the head, what the data nodes reported when they made them), or, on a data node planning a
// stage, the head's count (SetPlannedRows).
func (d *Dataset) Statistics(context.Context) (catalog.Statistics, error) {
	if planned := d.plannedRows.Load(); planned > 0 {
		return catalog.Statistics{Rows: planned - 1}, nil
	}
	rows, _ := d.Totals()
	return catalog.Statistics{Rows: rows}, nil
}
