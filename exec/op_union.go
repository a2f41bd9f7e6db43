package exec

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
)

// Union is UNION ALL: its partitions are the inputs' partitions one after the other, and it
// yields their batches unchanged except for the field names, which are the first input's. A
// field is nullable when it is in any input.
type Union struct {
	inputs []Operator
	schema *arrow.Schema
}

// NewUnion concatenates inputs. They must have the same number of columns with the same types
// (the planner casts them first).
func NewUnion(inputs []Operator) (Operator, error) {
	if len(inputs) == 0 {
		return nil, errs.Internalf("union of no inputs")
	}
	first := inputs[0].Schema()
	fields := append([]arrow.Field(nil), first.Fields()...)
	for i, in := range inputs[1:] {
		s := in.Schema()
		if s.NumFields() != len(fields) {
			return nil, errs.Invalidf("UNION input %d has %d columns, the first has %d", i+2, s.NumFields(), len(fields))
		}
		for c, f := range s.Fields() {
			if !arrow.TypeEqual(f.Type, fields[c].Type) {
				return nil, errs.Internalf("UNION input %d column %d has type %s, the first input's is %s", i+2, c+1, f.Type, fields[c].Type)
			}
			fields[c].Nullable = fields[c].Nullable || f.Nullable
		}
	}
	return &Union{inputs: inputs, schema: arrow.NewSchema(fields, nil)}, nil
}

func (u *Union) Schema() *arrow.Schema { return u.schema }
func (u *Union) Children() []Operator  { return u.inputs }
func (u *Union) String() string        { return fmt.Sprintf("Union: %d inputs", len(u.inputs)) }

func (u *Union) Partitions() int {
	n := 0
	for _, in := range u.inputs {
		n += in.Partitions()
	}
	return n
}

func (u *Union) Execute(ctx context.Context, partition int, tc *TaskContext) (array.RecordReader, error) {
	p := partition
	for _, in := range u.inputs {
		if p < in.Partitions() {
			return relabel(ctx, in, p, tc, u.schema)
		}
		p -= in.Partitions()
	}
	return nil, errs.Internalf("union has %d partitions, asked for %d", u.Partitions(), partition)
}

// relabel executes partition p of in and yields its non-empty batches under schema, which has
// in's column types.
func relabel(ctx context.Context, in Operator, p int, tc *TaskContext, schema *arrow.Schema) (array.RecordReader, error) {
	rdr, err := in.Execute(ctx, p, tc)
	if err != nil {
		return nil, err
	}
	pull := func() (arrow.RecordBatch, error) {
		b, err := nextNonEmpty(rdr)
		if b == nil || err != nil {
			return nil, err
		}
		defer b.Release()
		return array.NewRecordBatch(schema, b.Columns(), b.NumRows()), nil
	}
	return newPullStream(ctx, schema, pull, rdr.Release), nil
}
