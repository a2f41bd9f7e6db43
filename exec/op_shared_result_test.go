package exec

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// TestSharedResultRunsInputOnce reads one SharedResult through two SharedReads under one
// query cache: the input's partitions run once and both reads see all its rows, each under
// its own column names; without a cache every read of a partition runs the input again.
func TestSharedResultRunsInputOnce(t *testing.T) {
	tc := newTestContext(t, 0)
	schema := schemaOf("k", opInt64, "v", opInt64)
	src := newSource(t, schema,
		[]arrow.RecordBatch{batchOf(t, tc.Alloc, schema, []any{1, 10}, []any{nil, 20})},
		[]arrow.RecordBatch{batchOf(t, tc.Alloc, schema, []any{2, nil})})
	res := NewSharedResult(src, "s")
	x, err := NewSharedRead(res, schemaOf("a", opInt64, "b", opInt64))
	if err != nil {
		t.Fatal(err)
	}
	y, err := NewSharedRead(res, schemaOf("c", opInt64, "d", opInt64))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1|10", "2|NULL", "NULL|20"}

	tc.Cache = NewQueryCache()
	for _, read := range []Operator{x, y, x} {
		if got := collectRows(t, read, tc); !slices.Equal(got, want) {
			t.Fatalf("%s: got %v, want %v", read, got, want)
		}
	}
	if n := src.executions.Load(); n != 2 {
		t.Errorf("with a cache the input's 2 partitions ran %d times in all, want 2", n)
	}
	tc.Cache.Release()

	tc.Cache = nil
	src.executions.Store(0)
	for _, read := range []Operator{x, y} {
		if got := collectRows(t, read, tc); !slices.Equal(got, want) {
			t.Fatalf("%s without a cache: got %v, want %v", read, got, want)
		}
	}
	// Each of a read's 2 partitions runs the whole input for itself.
	if n := src.executions.Load(); n != 8 {
		t.Errorf("without a cache the input's 2 partitions ran %d times in all, want 8", n)
	}

	if _, err := NewSharedRead(res, schemaOf("a", opInt64, "b", opString)); err == nil {
		t.Error("a read whose column types differ from the result's was accepted")
	}
}

// TestSharedResultCanceledReaderNotKept checks that a first read whose context ends before the
// input is computed does not leave its cancellation for the query's other reads.
func TestSharedResultCanceledReaderNotKept(t *testing.T) {
	tc := newTestContext(t, 0)
	tc.Cache = NewQueryCache()
	defer tc.Cache.Release()
	schema := schemaOf("k", opInt64)
	src := newSource(t, schema, []arrow.RecordBatch{batchOf(t, tc.Alloc, schema, []any{1})})
	res := NewSharedResult(src, "s")
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	rdr, err := res.Execute(canceled, 0, tc)
	if err == nil {
		for rdr.Next() {
		}
		err = rdr.Err()
		rdr.Release()
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("read under a canceled context: err %v, want context.Canceled", err)
	}
	if got := collectRows(t, res, tc); !slices.Equal(got, []string{"1"}) {
		t.Errorf("a later read got %v, want [1]", got)
	}
}
