package exec

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// manyRowsSource returns a source of parts partitions, each of batches batches of rows rows,
// whose rows are (key, id) with key = id % 7 and ids unique.
func manyRowsSource(t *testing.T, tc *TaskContext, parts, batches, rows int) (*sourceOp, []string) {
	schema := schemaOf("key", opInt64, "id", opInt64)
	var all []string
	partitions := make([][]arrow.RecordBatch, parts)
	id := 0
	for p := range partitions {
		for range batches {
			var rs [][]any
			for range rows {
				rs = append(rs, []any{id % 7, id})
				all = append(all, fmt.Sprintf("%d|%d", id%7, id))
				id++
			}
			partitions[p] = append(partitions[p], batchOf(t, tc.Alloc, schema, rs...))
		}
	}
	slices.Sort(all)
	return newSource(t, schema, partitions...), all
}

func TestRepartitionPreservesRows(t *testing.T) {
	for _, keyed := range []bool{true, false} {
		t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) {
			tc := newTestContext(t, 0)
			src, want := manyRowsSource(t, tc, 3, 5, 40)
			var keys []Expr
			if keyed {
				keys = []Expr{intCol(0, "key")}
			}
			op := NewRepartition(src, keys, 4)
			got := collectRows(t, NewCoalesce(op), tc)
			if !slices.Equal(got, want) {
				t.Fatalf("got %d rows, want %d", len(got), len(want))
			}
			if n := src.executions.Load(); n != 3 {
				t.Errorf("input partitions executed %d times, want 3 (once each)", n)
			}
		})
	}
}

func TestRepartitionGroupsEqualKeys(t *testing.T) {
	tc := newTestContext(t, 0)
	src, want := manyRowsSource(t, tc, 2, 3, 50)
	op := NewRepartition(src, []Expr{intCol(0, "key")}, 3)
	parts := make([][]string, 3)
	var wg sync.WaitGroup
	errc := make(chan error, 3)
	for p := range 3 {
		wg.Go(func() {
			rdr, err := op.Execute(context.Background(), p, tc)
			if err != nil {
				errc <- err
				return
			}
			defer rdr.Release()
			for rdr.Next() {
				parts[p] = append(parts[p], formatRows(rdr.RecordBatch())...)
			}
			errc <- rdr.Err()
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	var all []string
	keyPart := map[string]int{}
	for p, rows := range parts {
		for _, r := range rows {
			key := r[:1]
			if q, ok := keyPart[key]; ok && q != p {
				t.Errorf("key %s in partitions %d and %d", key, q, p)
			}
			keyPart[key] = p
		}
		all = append(all, rows...)
	}
	slices.Sort(all)
	if !slices.Equal(all, want) {
		t.Errorf("got %d rows, want %d", len(all), len(want))
	}
	// All partitions were claimed: the next execution starts a new run.
	if got := collectRows(t, NewCoalesce(op), tc); !slices.Equal(got, want) {
		t.Errorf("second run: got %d rows, want %d", len(got), len(want))
	}
}

func TestRepartitionCoalesceEarlyStop(t *testing.T) {
	for _, cancel := range []bool{false, true} {
		t.Run(fmt.Sprintf("cancel=%v", cancel), func(t *testing.T) {
			base := runtime.NumGoroutine()
			tc := newTestContext(t, 0)
			src, _ := manyRowsSource(t, tc, 4, 20, 10)
			op := NewCoalesce(NewRepartition(src, []Expr{intCol(0, "key")}, 3))
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			rdr, err := op.Execute(ctx, 0, tc)
			if err != nil {
				t.Fatal(err)
			}
			if !rdr.Next() {
				t.Fatalf("no first batch: %v", rdr.Err())
			}
			if cancel {
				stop()
				for rdr.Next() {
				}
				if !errors.Is(rdr.Err(), context.Canceled) {
					t.Errorf("err = %v, want context.Canceled", rdr.Err())
				}
			}
			rdr.Release()
			waitForGoroutines(t, base)
		})
	}
}

func TestRepartitionPartitionTwiceInOneRun(t *testing.T) {
	tc := newTestContext(t, 0)
	src, _ := manyRowsSource(t, tc, 1, 1, 3)
	op := NewRepartition(src, nil, 2)
	r0, err := op.Execute(context.Background(), 0, tc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := op.Execute(context.Background(), 0, tc); err == nil {
		t.Error("executing partition 0 twice in one run succeeded")
	}
	r1, err := op.Execute(context.Background(), 1, tc)
	if err != nil {
		t.Fatal(err)
	}
	r0.Release()
	r1.Release()
}

func TestCoalesceMergesPartitions(t *testing.T) {
	tc := newTestContext(t, 0)
	src, want := manyRowsSource(t, tc, 5, 3, 4)
	op := NewCoalesce(src)
	if op.Partitions() != 1 {
		t.Errorf("partitions = %d, want 1", op.Partitions())
	}
	if got := collectRows(t, op, tc); !slices.Equal(got, want) {
		t.Errorf("got %d rows, want %d", len(got), len(want))
	}
}
