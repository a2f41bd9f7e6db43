package exec

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/stream"
)

// Values is a literal relation: rows of expressions evaluated at execution time (so ?
// parameters bind per execution). It has one partition. A row of zero expressions is allowed:
// SELECT without FROM reads one row of zero columns.
type Values struct {
	schema *arrow.Schema
	rows   [][]Expr
}

// NewValues returns an operator yielding rows under schema. Every row must have one expression
// per field; an expression whose type differs from its field's is cast to it.
func NewValues(schema *arrow.Schema, rows [][]Expr) (Operator, error) {
	for i, r := range rows {
		if len(r) != schema.NumFields() {
			return nil, errs.Invalidf("VALUES row %d has %d values, expected %d", i+1, len(r), schema.NumFields())
		}
	}
	return &Values{schema: schema, rows: rows}, nil
}

func (v *Values) Schema() *arrow.Schema { return v.schema }
func (v *Values) Children() []Operator  { return nil }
func (v *Values) Partitions() int       { return 1 }
func (v *Values) String() string {
	return fmt.Sprintf("Values: %d rows, %d columns", len(v.rows), v.schema.NumFields())
}

func (v *Values) Execute(ctx context.Context, partition int, tc *TaskContext) (array.RecordReader, error) {
	if partition != 0 {
		return nil, errs.Internalf("values has 1 partition, asked for %d", partition)
	}
	next := 0
	pull := func() (arrow.RecordBatch, error) {
		if next >= len(v.rows) {
			return nil, nil
		}
		end := min(next+tc.RowsPerBatch(), len(v.rows))
		b, err := v.batch(ctx, tc, v.rows[next:end])
		next = end
		return b, err
	}
	return stream.Pull(ctx, v.schema, pull, nil), nil
}

// batch evaluates rows into one batch. Each expression sees a 1-row batch with no columns.
func (v *Values) batch(ctx context.Context, tc *TaskContext, rows [][]Expr) (arrow.RecordBatch, error) {
	unit := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1)
	defer unit.Release()
	cols := make([]arrow.Array, v.schema.NumFields())
	defer releaseAll(cols)
	for c := range cols {
		field := v.schema.Field(c)
		cells := make([]arrow.Array, 0, len(rows))
		err := func() error {
			defer func() { releaseAll(cells) }()
			for _, r := range rows {
				cell, err := r[c].Eval(ctx, tc, unit)
				if err != nil {
					return err
				}
				cells = append(cells, cell)
				if !arrow.TypeEqual(cell.DataType(), field.Type) {
					cast, err := castValue(ctx, tc, cell, field.Type)
					if err != nil {
						return fmt.Errorf("VALUES column %q: %w", field.Name, err)
					}
					cells[len(cells)-1] = cast
					cell.Release()
				}
			}
			col, err := array.Concatenate(cells, tc.Alloc)
			if err != nil {
				return errs.Internalf("VALUES column %q: %v", field.Name, err)
			}
			cols[c] = col
			return nil
		}()
		if err != nil {
			return nil, err
		}
	}
	return array.NewRecordBatch(v.schema, cols, int64(len(rows))), nil
}

// castValue converts arr to type to; a NULL-typed array becomes all NULLs of type to.
func castValue(ctx context.Context, tc *TaskContext, arr arrow.Array, to arrow.DataType) (arrow.Array, error) {
	if arr.DataType().ID() == arrow.NULL {
		return array.MakeArrayOfNull(tc.Alloc, to, arr.Len()), nil
	}
	return CastArray(ctx, tc, arr, to)
}

// releaseAll releases every non-nil array.
func releaseAll(arrs []arrow.Array) {
	for _, a := range arrs {
		if a != nil {
			a.Release()
		}
	}
}
