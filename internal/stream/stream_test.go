package stream

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/internal/errs"
)

var schema = arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)

// source hands out n batches built on mem; the batches it never handed out are released by
// close, as an operator's close callback releases its upstream.
type source struct {
	t       *testing.T
	mem     memory.Allocator
	left    int
	failAt  int // 1-based index of the call that fails (0: never)
	calls   int
	closes  atomic.Int32
	errSent error
}

func (s *source) batch() arrow.RecordBatch {
	b := array.NewInt64Builder(s.mem)
	defer b.Release()
	b.AppendValues([]int64{1, 2, 3}, nil)
	col := b.NewArray()
	defer col.Release()
	return array.NewRecordBatch(schema, []arrow.Array{col}, 3)
}

func (s *source) next() (arrow.RecordBatch, error) {
	s.calls++
	if s.failAt > 0 && s.calls == s.failAt {
		s.errSent = errs.Invalidf("bad row %d", s.calls)
		return s.batch(), s.errSent // the reader must release a batch that comes with an error
	}
	if s.left == 0 {
		return nil, nil
	}
	s.left--
	return s.batch(), nil
}

func (s *source) close() { s.closes.Add(1) }

func checked(t *testing.T) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

func TestPullReadsToTheEnd(t *testing.T) {
	src := &source{t: t, mem: checked(t), left: 3}
	r := Pull(context.Background(), schema, src.next, src.close)
	n := 0
	for r.Next() {
		if r.RecordBatch().NumRows() != 3 || r.Record() != r.RecordBatch() {
			t.Fatalf("batch %d: %d rows", n, r.RecordBatch().NumRows())
		}
		n++
	}
	if n != 3 || r.Err() != nil {
		t.Fatalf("read %d batches, err %v; want 3, nil", n, r.Err())
	}
	if got := src.closes.Load(); got != 1 {
		t.Fatalf("onClose ran %d times at the end of the stream, want 1 (before the final Release)", got)
	}
	if r.Next() || src.calls != 4 {
		t.Fatalf("Next after the end pulled again (calls %d)", src.calls)
	}
	r.Release()
	if got := src.closes.Load(); got != 1 {
		t.Fatalf("onClose ran %d times, want 1", got)
	}
}

func TestReleaseWithoutNextClosesOnce(t *testing.T) {
	src := &source{t: t, mem: checked(t), left: 3}
	r := Pull(context.Background(), schema, src.next, src.close)
	r.Release()
	if got := src.closes.Load(); got != 1 || src.calls != 0 {
		t.Fatalf("onClose ran %d times, next called %d times; want 1, 0", got, src.calls)
	}
	if r.Next() {
		t.Fatal("Next after the final Release returned true")
	}
}

func TestReleaseMidStreamFreesTheCurrentBatch(t *testing.T) {
	src := &source{t: t, mem: checked(t), left: 3}
	r := Pull(context.Background(), schema, src.next, src.close)
	if !r.Next() {
		t.Fatal(r.Err())
	}
	r.Release() // the checked allocator fails the test if the current batch leaks
	if got := src.closes.Load(); got != 1 {
		t.Fatalf("onClose ran %d times, want 1", got)
	}
}

func TestDoubleReleaseIsHarmless(t *testing.T) {
	src := &source{t: t, mem: checked(t), left: 2}
	r := Pull(context.Background(), schema, src.next, src.close)
	r.Next()
	r.Release()
	r.Release()
	r.Retain() // a stray reference after the end must not reopen the stream either
	r.Release()
	if got := src.closes.Load(); got != 1 {
		t.Fatalf("onClose ran %d times, want 1", got)
	}
	if r.Next() {
		t.Fatal("Next after the final Release returned true")
	}
}

func TestRetainDefersTheClose(t *testing.T) {
	src := &source{t: t, mem: checked(t), left: 2}
	r := Pull(context.Background(), schema, src.next, src.close)
	r.Retain()
	r.Next()
	r.Release()
	if src.closes.Load() != 0 || r.RecordBatch() == nil {
		t.Fatal("a Release that left a reference closed the stream or dropped its batch")
	}
	r.Release()
	if src.closes.Load() != 1 {
		t.Fatal("the final Release did not close the stream")
	}
}

func TestErrorMidStream(t *testing.T) {
	src := &source{t: t, mem: checked(t), left: 5, failAt: 2}
	r := Pull(context.Background(), schema, src.next, src.close)
	if !r.Next() {
		t.Fatal(r.Err())
	}
	if r.Next() {
		t.Fatal("Next returned true on an error")
	}
	if !errors.Is(r.Err(), src.errSent) || errs.CategoryOf(r.Err()) != errs.InvalidInput {
		t.Fatalf("Err = %v, want the source's error", r.Err())
	}
	if r.Next() || src.calls != 2 {
		t.Fatalf("Next after an error pulled again (calls %d)", src.calls)
	}
	if got := src.closes.Load(); got != 1 {
		t.Fatalf("onClose ran %d times after the error, want 1", got)
	}
	r.Release()
	if got := src.closes.Load(); got != 1 {
		t.Fatalf("onClose ran %d times, want 1", got)
	}
}

func TestContextEndStopsTheStream(t *testing.T) {
	cases := []struct {
		name   string
		cancel func() context.Context
		want   error
		cat    errs.Category
	}{
		{"canceled", func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, context.Canceled, errs.Canceled},
		{"deadline", func() context.Context {
			ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0)) // already past
			t.Cleanup(cancel)
			return ctx
		}, context.DeadlineExceeded, errs.Canceled},
		{"categorized cause", func() context.Context {
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(errs.Unavailablef("node lost"))
			return ctx
		}, nil, errs.Unavailable},
		{"other cause", func() context.Context {
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(errPlain)
			return ctx
		}, errPlain, errs.Internal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := &source{t: t, mem: checked(t), left: 2}
			r := Pull(c.cancel(), schema, src.next, src.close)
			defer r.Release()
			if r.Next() {
				t.Fatal("Next returned true after the context ended")
			}
			if src.calls != 0 || src.closes.Load() != 1 {
				t.Fatalf("next called %d times, onClose %d times; want 0, 1", src.calls, src.closes.Load())
			}
			if c.want != nil && !errors.Is(r.Err(), c.want) {
				t.Fatalf("Err = %v, want it to wrap %v", r.Err(), c.want)
			}
			if got := errs.CategoryOf(r.Err()); got != c.cat {
				t.Fatalf("category %v, want %v (%v)", got, c.cat, r.Err())
			}
		})
	}
}

var errPlain = errors.New("a producer failed")

// TestErrorCausedByTheContextEndReportsTheEnd: a source that fails because its context ended
// while it ran (as an Arrow kernel does, under whatever wrapping) makes the stream report the
// context's end, not the failure.
func TestErrorCausedByTheContextEndReportsTheEnd(t *testing.T) {
	for _, tt := range []struct {
		name string
		end  func(context.CancelCauseFunc)
		is   error
	}{
		{"canceled", func(cancel context.CancelCauseFunc) { cancel(nil) }, context.Canceled},
		{"deadline", func(cancel context.CancelCauseFunc) { cancel(context.DeadlineExceeded) }, context.DeadlineExceeded},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			src := &source{t: t, mem: checked(t), left: 2}
			r := Pull(ctx, schema, func() (arrow.RecordBatch, error) {
				tt.end(cancel)
				return nil, errs.Internalf("selecting rows: %v", ctx.Err())
			}, src.close)
			defer r.Release()
			if r.Next() {
				t.Fatal("Next returned true on an error")
			}
			if !errors.Is(r.Err(), tt.is) || errs.CategoryOf(r.Err()) != errs.Canceled {
				t.Fatalf("Err = %v (%v), want a canceled error wrapping %v", r.Err(), errs.CategoryOf(r.Err()), tt.is)
			}
		})
	}
}

func TestConcurrentRetainRelease(t *testing.T) {
	src := &source{t: t, mem: checked(t), left: 1}
	r := Pull(context.Background(), schema, src.next, src.close)
	if !r.Next() {
		t.Fatal(r.Err())
	}
	var wg sync.WaitGroup
	for range 16 {
		r.Retain()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				r.Retain()
				r.Release()
			}
			r.Release()
		}()
	}
	wg.Wait()
	if src.closes.Load() != 0 {
		t.Fatal("the stream closed while a reference was held")
	}
	r.Release()
	if got := src.closes.Load(); got != 1 {
		t.Fatalf("onClose ran %d times, want 1", got)
	}
}

func TestEmpty(t *testing.T) {
	r := Empty(schema)
	if r.Next() || r.Err() != nil || !r.Schema().Equal(schema) {
		t.Fatal("Empty is not an empty stream of its schema")
	}
	r.Release()
}
