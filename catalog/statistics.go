package catalog

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// Statistics is what a source knows about a table's contents without reading its data: the
// optimizer's input for estimating how many rows a plan produces. Every figure is an estimate
// that may be stale or approximate; nothing may depend on it for correctness.
type Statistics struct {
	// Rows is the number of rows, -1 when unknown.
	Rows int64
	// Columns has one entry per column of the table's schema, by index, or is nil when the
	// source knows nothing per column.
	Columns []ColumnStatistics
}

// ColumnStatistics describes one column. Unknown figures are -1 (counts) or nil (bounds).
type ColumnStatistics struct {
	// Distinct estimates the number of distinct non-null values.
	Distinct int64
	// Nulls is the number of null values.
	Nulls int64
	// Min and Max bound the non-null values: every value lies within them, though they need not
	// be attained (a source may store truncated string bounds). They have the column's Arrow
	// type.
	Min, Max scalar.Scalar
}

// UnknownColumn is a ColumnStatistics that knows nothing.
var UnknownColumn = ColumnStatistics{Distinct: -1, Nulls: -1}

// StatisticsTable is a table whose source can describe its contents. Statistics must be cheap:
// it reads metadata a source keeps (Iceberg manifests, in-memory row counts), never data files.
type StatisticsTable interface {
	Table
	Statistics(ctx context.Context) (Statistics, error)
}
