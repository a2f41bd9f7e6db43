package exec

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/mempool"
)

// JoinKind is the kind of a physical join.
type JoinKind int

const (
	// InnerJoin outputs the left ++ right columns of every matching pair.
	InnerJoin JoinKind = iota
	// LeftJoin is InnerJoin plus every unmatched left row padded with NULL right columns.
	LeftJoin
	// SemiJoin outputs, once, each left row that has at least one match (EXISTS, IN).
	SemiJoin
	// AntiJoin outputs each left row that has no match (NOT EXISTS).
	AntiJoin
	// NullAwareAntiJoin is x NOT IN (subquery): each left row is kept when the right side is
	// empty; otherwise it is dropped when its key is NULL, when any right key is NULL, or when it
	// matches. Under a nested-loop join a pair whose condition is NULL drops the left row.
	NullAwareAntiJoin
)

func (k JoinKind) String() string {
	switch k {
	case InnerJoin:
		return "inner"
	case LeftJoin:
		return "left"
	case SemiJoin:
		return "semi"
	case AntiJoin:
		return "anti"
	case NullAwareAntiJoin:
		return "null-aware anti"
	}
	return fmt.Sprintf("JoinKind(%d)", int(k))
}

// leftOnly reports whether the join outputs the left columns only.
func (k JoinKind) leftOnly() bool {
	return k == SemiJoin || k == AntiJoin || k == NullAwareAntiJoin
}

func (k JoinKind) valid() bool { return k >= InnerJoin && k <= NullAwareAntiJoin }

// joinSchemas returns the output schema of a join of kind over left and right, and the schema
// of the left ++ right rows that join conditions are evaluated against.
func joinSchemas(kind JoinKind, left, right *arrow.Schema) (out, pairs *arrow.Schema) {
	fields := append(append([]arrow.Field(nil), left.Fields()...), right.Fields()...)
	pairs = arrow.NewSchema(fields, nil)
	switch kind {
	case InnerJoin:
		return pairs, pairs
	case LeftJoin:
		padded := append([]arrow.Field(nil), fields...)
		for i := left.NumFields(); i < len(padded); i++ {
			padded[i].Nullable = true
		}
		s := arrow.NewSchema(padded, nil)
		return s, s
	}
	return left, pairs
}

// materialize executes every partition of op and returns all its rows as one batch (the caller
// releases it), reserved by res: each batch (and its copy in the concatenation) is reserved
// before it is held, and a refusal fails with it.
func materialize(ctx context.Context, tc *TaskContext, op Operator, res *mempool.Reservation) (arrow.RecordBatch, error) {
	batches, err := collectReserved(ctx, op, tc, res, 2)
	if err != nil {
		return nil, err
	}
	defer releaseBatches(batches)
	out, err := concatBatches(tc, op.Schema(), batches)
	if err == nil {
		res.Shrink(batchesBytes(batches))
	}
	return out, err
}

// concatBatches concatenates batches of schema into one new batch.
func concatBatches(tc *TaskContext, schema *arrow.Schema, batches []arrow.RecordBatch) (arrow.RecordBatch, error) {
	if len(batches) == 1 {
		return array.NewRecordBatch(schema, batches[0].Columns(), batches[0].NumRows()), nil
	}
	var rows int64
	for _, b := range batches {
		rows += b.NumRows()
	}
	cols := make([]arrow.Array, schema.NumFields())
	defer releaseAll(cols)
	for c, f := range schema.Fields() {
		if len(batches) == 0 {
			cols[c] = array.MakeArrayOfNull(tc.Alloc, f.Type, 0)
			continue
		}
		parts := make([]arrow.Array, len(batches))
		for i, b := range batches {
			parts[i] = b.Column(c)
		}
		col, err := array.Concatenate(parts, tc.Alloc)
		if err != nil {
			return nil, errs.Internalf("concatenate column %q: %v", f.Name, err)
		}
		cols[c] = col
	}
	return array.NewRecordBatch(schema, cols, rows), nil
}

// takeColumns gathers the rows idx of every column into new arrays (nil for no columns): with a
// typed loop where the column's layout has one, else through compute.Take.
func takeColumns(ctx context.Context, tc *TaskContext, cols []arrow.Array, idx []int32) ([]arrow.Array, error) {
	if len(cols) == 0 {
		return nil, nil
	}
	var indices arrow.Array // built on first use by a column without a typed gather
	defer func() {
		if indices != nil {
			indices.Release()
		}
	}()
	out := make([]arrow.Array, 0, len(cols))
	for _, c := range cols {
		if t := takeTyped(tc.Alloc, c, idx); t != nil {
			out = append(out, t)
			continue
		}
		if indices == nil {
			indices = newIndexArray(tc, idx)
		}
		t, err := takeWith(ctx, tc, c, indices)
		if err != nil {
			releaseAll(out)
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// rowsWhere returns the indexes i < n for which keep(i) is true.
func rowsWhere(n int, keep func(int) bool) []int32 {
	var idx []int32
	for i := range n {
		if keep(i) {
			idx = append(idx, int32(i))
		}
	}
	return idx
}
