package exec

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// aggTestSource is a test-only operator over fixed batches, one slice of JSON rows per partition.
type aggTestSource struct {
	schema *arrow.Schema
	parts  [][]string // per partition: batches as JSON arrays of row objects
}

func (s *aggTestSource) Schema() *arrow.Schema { return s.schema }
func (s *aggTestSource) Children() []Operator  { return nil }
func (s *aggTestSource) Partitions() int       { return len(s.parts) }
func (s *aggTestSource) String() string        { return "TestSource" }
func (s *aggTestSource) Execute(ctx context.Context, p int, tc *TaskContext) (array.RecordReader, error) {
	var batches []arrow.RecordBatch
	for _, js := range s.parts[p] {
		b, _, err := array.RecordFromJSON(tc.Alloc, s.schema, strings.NewReader(js))
		if err != nil {
			return nil, err
		}
		batches = append(batches, b)
	}
	rdr, err := array.NewRecordReader(s.schema, batches)
	for _, b := range batches {
		b.Release()
	}
	return rdr, err
}

// aggTestCol is a test-only expression reading input column i.
type aggTestCol struct {
	i    int
	name string
	t    arrow.DataType
}

func aggCol(schema *arrow.Schema, name string) *aggTestCol {
	idx := schema.FieldIndices(name)
	if len(idx) == 0 {
		panic("no column " + name)
	}
	return &aggTestCol{i: idx[0], name: name, t: schema.Field(idx[0]).Type}
}

func (c *aggTestCol) DataType() arrow.DataType { return c.t }
func (c *aggTestCol) String() string           { return c.name }
func (c *aggTestCol) Eval(_ context.Context, _ *TaskContext, b arrow.RecordBatch) (arrow.Array, error) {
	col := b.Column(c.i)
	col.Retain()
	return col, nil
}

// aggTestRows executes every partition of op and renders its rows as "v1|v2|…", checking the
// schema and batch-size contracts along the way.
func aggTestRows(t *testing.T, op Operator, tc *TaskContext) []string {
	t.Helper()
	var rows []string
	for p := 0; p < op.Partitions(); p++ {
		rdr, err := op.Execute(context.Background(), p, tc)
		if err != nil {
			t.Fatalf("Execute: %v", err)
		}
		for rdr.Next() {
			b := rdr.RecordBatch()
			if !b.Schema().Equal(op.Schema()) {
				t.Fatalf("batch schema %s, want %s", b.Schema(), op.Schema())
			}
			if b.NumRows() > int64(tc.RowsPerBatch()) {
				t.Fatalf("batch of %d rows exceeds %d", b.NumRows(), tc.RowsPerBatch())
			}
			for r := 0; r < int(b.NumRows()); r++ {
				vals := make([]string, b.NumCols())
				for c := range vals {
					vals[c] = b.Column(c).ValueStr(r)
				}
				rows = append(rows, strings.Join(vals, "|"))
			}
		}
		if err := rdr.Err(); err != nil {
			rdr.Release()
			t.Fatalf("reader: %v", err)
		}
		rdr.Release()
	}
	return rows
}

func aggSorted(rows []string) []string {
	out := append([]string(nil), rows...)
	sort.Strings(out)
	return out
}

func aggTestContext(t *testing.T, batch int) (*TaskContext, *memory.CheckedAllocator) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	return &TaskContext{Alloc: mem, BatchSize: batch}, mem
}

func aggEqual(t *testing.T, got, want []string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("rows:\n got %q\nwant %q", got, want)
	}
}
