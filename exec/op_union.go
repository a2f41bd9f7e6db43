package exec

import (
	"context"
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/stream"
)

// Union is UNION ALL: its partitions are the inputs' partitions one after the other, and it
// yields their batches unchanged except for the field names, which are the first input's. A
// field is nullable when it is in any input.
type Union struct {
	inputs []Operator
	schema *arrow.Schema
	// ends[i] is the number of partitions of inputs[:i+1] (inputs' partitions are fixed when
	// they are built), so a partition finds its input by binary search.
	ends []int
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
	ends := make([]int, len(inputs))
	n := 0
	for i, in := range inputs {
		n += in.Partitions()
		ends[i] = n
	}
	return &Union{inputs: inputs, schema: arrow.NewSchema(fields, nil), ends: ends}, nil
}

func (u *Union) Schema() *arrow.Schema { return u.schema }
func (u *Union) Children() []Operator  { return u.inputs }
func (u *Union) String() string        { return fmt.Sprintf("Union: %d inputs", len(u.inputs)) }

func (u *Union) Partitions() int { return u.ends[len(u.ends)-1] }

func (u *Union) Execute(ctx context.Context, partition int, tc *TaskContext) (array.RecordReader, error) {
	i := sort.SearchInts(u.ends, partition+1)
	if partition < 0 || i == len(u.inputs) {
		return nil, errs.Internalf("union has %d partitions, asked for %d", u.Partitions(), partition)
	}
	start := 0
	if i > 0 {
		start = u.ends[i-1]
	}
	return relabel(ctx, u.inputs[i], partition-start, tc, u.schema)
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
	return stream.Pull(ctx, schema, pull, rdr.Release), nil
}
