package exec

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/cachedb/cachedb/internal/stream"
)

// Shared helpers of the operator tests.

// newTestContext returns a TaskContext whose allocator is checked for leaks when the test ends
// (after every cleanup registered later, which runs first).
func newTestContext(t *testing.T, batchSize int) *TaskContext {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return &TaskContext{Alloc: mem, BatchSize: batchSize}
}

// Types used by the operator tests.
var (
	opInt64  = arrow.PrimitiveTypes.Int64
	opString = arrow.BinaryTypes.String
	opBool   = arrow.FixedWidthTypes.Boolean
	opDec101 = &arrow.Decimal128Type{Precision: 10, Scale: 1}
)

// schemaOf builds a schema of nullable fields from name, type pairs.
func schemaOf(pairs ...any) *arrow.Schema {
	var fields []arrow.Field
	for i := 0; i < len(pairs); i += 2 {
		fields = append(fields, arrow.Field{Name: pairs[i].(string), Type: pairs[i+1].(arrow.DataType), Nullable: true})
	}
	return arrow.NewSchema(fields, nil)
}

// batchOf builds a batch of schema from rows; nil is NULL, an int64 in a decimal column is the
// unscaled value.
func batchOf(t *testing.T, mem memory.Allocator, schema *arrow.Schema, rows ...[]any) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, row := range rows {
		for c, v := range row {
			fb := b.Field(c)
			if v == nil {
				fb.AppendNull()
				continue
			}
			switch fb := fb.(type) {
			case *array.Int64Builder:
				fb.Append(int64(v.(int)))
			case *array.Int32Builder:
				fb.Append(int32(v.(int)))
			case *array.Int8Builder:
				fb.Append(int8(v.(int)))
			case *array.Float64Builder:
				fb.Append(v.(float64))
			case *array.Float32Builder:
				fb.Append(float32(v.(float64)))
			case *array.StringBuilder:
				fb.Append(v.(string))
			case *array.BooleanBuilder:
				fb.Append(v.(bool))
			case *array.Decimal128Builder:
				fb.Append(decimal128.FromI64(int64(v.(int))))
			default:
				t.Fatalf("batchOf: unsupported builder %T", fb)
			}
		}
	}
	return b.NewRecordBatch()
}

// sourceOp is a test operator over fixed batches, one slice per partition. It counts its
// executions and releases its batches when the test ends.
type sourceOp struct {
	schema     *arrow.Schema
	parts      [][]arrow.RecordBatch
	executions atomic.Int64
}

func newSource(t *testing.T, schema *arrow.Schema, parts ...[]arrow.RecordBatch) *sourceOp {
	s := &sourceOp{schema: schema, parts: parts}
	t.Cleanup(func() {
		for _, p := range parts {
			releaseBatches(p)
		}
	})
	return s
}

// rowsSource is a one-partition source holding rows as one batch.
func rowsSource(t *testing.T, tc *TaskContext, schema *arrow.Schema, rows ...[]any) *sourceOp {
	return newSource(t, schema, []arrow.RecordBatch{batchOf(t, tc.Alloc, schema, rows...)})
}

func (s *sourceOp) Schema() *arrow.Schema { return s.schema }
func (s *sourceOp) Children() []Operator  { return nil }
func (s *sourceOp) Partitions() int       { return len(s.parts) }
func (s *sourceOp) String() string        { return fmt.Sprintf("Source: %d partitions", len(s.parts)) }

func (s *sourceOp) Execute(ctx context.Context, p int, _ *TaskContext) (array.RecordReader, error) {
	s.executions.Add(1)
	rdr, err := array.NewRecordReader(s.schema, s.parts[p])
	if err != nil {
		return nil, err
	}
	next := 0
	return stream.Pull(ctx, s.schema, func() (arrow.RecordBatch, error) {
		if next >= len(s.parts[p]) {
			return nil, nil
		}
		b := s.parts[p][next]
		next++
		b.Retain()
		return b, nil
	}, rdr.Release), nil
}

// collectRows executes every partition of op and returns its rows formatted "v1|v2|…" (NULL
// for nulls), sorted, checking that every batch has op's schema.
func collectRows(t *testing.T, op Operator, tc *TaskContext) []string {
	t.Helper()
	rows, err := tryCollectRows(op, tc)
	if err != nil {
		t.Fatalf("execute %s: %v", op, err)
	}
	return rows
}

func tryCollectRows(op Operator, tc *TaskContext) ([]string, error) {
	rdr, err := executeMerged(context.Background(), op, tc)
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	var rows []string
	for rdr.Next() {
		b := rdr.RecordBatch()
		if !b.Schema().Equal(op.Schema()) {
			return nil, fmt.Errorf("batch schema %s differs from operator schema %s", b.Schema(), op.Schema())
		}
		rows = append(rows, formatRows(b)...)
	}
	slices.Sort(rows)
	return rows, rdr.Err()
}

// formatRows renders each row of b as "v1|v2|…".
func formatRows(b arrow.RecordBatch) []string {
	rows := make([]string, b.NumRows())
	for r := range rows {
		cells := make([]string, b.NumCols())
		for c, col := range b.Columns() {
			if col.IsNull(r) {
				cells[c] = "NULL"
			} else {
				cells[c] = col.ValueStr(r)
			}
		}
		rows[r] = strings.Join(cells, "|")
	}
	return rows
}

// sorted returns rows sorted, for comparing multisets.
func sorted(rows ...string) []string {
	out := slices.Clone(rows)
	slices.Sort(out)
	return out
}

// cmpTestExpr compares two int64 expressions ("=", "<", ">") with SQL NULL propagation. It keeps
// the operator tests independent of the scalar function registry.
type cmpTestExpr struct {
	op   string
	l, r Expr
}

func cmpTest(op string, l, r Expr) Expr { return &cmpTestExpr{op: op, l: l, r: r} }

func (e *cmpTestExpr) DataType() arrow.DataType { return opBool }
func (e *cmpTestExpr) String() string           { return fmt.Sprintf("(%s %s %s)", e.l, e.op, e.r) }

func (e *cmpTestExpr) Eval(ctx context.Context, tc *TaskContext, batch arrow.RecordBatch) (arrow.Array, error) {
	l, err := e.l.Eval(ctx, tc, batch)
	if err != nil {
		return nil, err
	}
	defer l.Release()
	r, err := e.r.Eval(ctx, tc, batch)
	if err != nil {
		return nil, err
	}
	defer r.Release()
	li, ri := l.(*array.Int64), r.(*array.Int64)
	b := array.NewBooleanBuilder(tc.Alloc)
	defer b.Release()
	for i := range li.Len() {
		if li.IsNull(i) || ri.IsNull(i) {
			b.AppendNull()
			continue
		}
		x, y := li.Value(i), ri.Value(i)
		b.Append((e.op == "=" && x == y) || (e.op == "<" && x < y) || (e.op == ">" && x > y))
	}
	return b.NewArray(), nil
}

// intCol is a shorthand for an int64 column reference.
func intCol(i int, name string) Expr { return NewColumn(i, name, opInt64) }

// waitForGoroutines fails the test unless the goroutine count drops to at most n soon.
func waitForGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines leaked: %d > %d\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// scalarInt is an int64 scalar.
func scalarInt(v int64) scalar.Scalar { return scalar.NewInt64Scalar(v) }

// scalarNull is an untyped NULL.
func scalarNull() scalar.Scalar { return scalar.MakeNullScalar(arrow.Null) }

// batchOfNoT builds a one-row batch of schema with every column NULL.
func batchOfNoT(schema *arrow.Schema) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	defer b.Release()
	for _, f := range b.Fields() {
		f.AppendNull()
	}
	return b.NewRecordBatch()
}

// checkSpecialized evaluates an expression specialized from a call and the call itself (general)
// over batch: both give the same rows (or both an error), and the specialized result counts its
// NULLs as it holds them.
func checkSpecialized(t *testing.T, mem memory.Allocator, name string, spec, general Expr, batch arrow.RecordBatch) {
	t.Helper()
	checkNullCount(t, mem, spec, batch)
	got, errGot := evalRender(t, mem, spec, batch)
	want, errWant := evalRender(t, mem, general, batch)
	if (errGot != nil) != (errWant != nil) || got != want {
		t.Errorf("%s %s: got %s (%v), general kernel gives %s (%v)", name, spec, got, errGot, want, errWant)
	}
}

// checkNullCount evaluates e over batch and checks that the result counts its NULLs as it
// holds them (what a filter asks of a mask first).
func checkNullCount(t *testing.T, mem memory.Allocator, e Expr, batch arrow.RecordBatch) {
	t.Helper()
	tc := &TaskContext{Alloc: mem, BatchSize: 1024, Cache: NewQueryCache()}
	defer tc.Cache.Release()
	a, err := e.Eval(context.Background(), tc, batch)
	if err != nil {
		return
	}
	defer a.Release()
	nulls := 0
	for i := range a.Len() {
		if a.IsNull(i) {
			nulls++
		}
	}
	if got := a.NullN(); got != nulls {
		t.Errorf("%s: NullN() = %d, holds %d NULLs", e, got, nulls)
	}
}

// floatsWithNaN returns a batch of one FLOAT64 column "v": NaNs, infinities, zero and a few
// numbers.
func floatsWithNaN(mem memory.Allocator) arrow.RecordBatch {
	b := array.NewFloat64Builder(mem)
	defer b.Release()
	b.AppendValues([]float64{math.NaN(), 1, -1, math.Inf(1), math.Inf(-1), 0, math.NaN(), 2, 3}, nil)
	col := b.NewArray()
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: f64, Nullable: true}}, nil)
	return array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
}
