package exec

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cachedb/cachedb/internal/errs"
)

// TestSortSpills runs sorts under memory limits that force their runs to disk (and, for the
// smallest, intermediate merges) and checks the output equals the unlimited sort's, row for
// row: the last key is the unique id, so the order is total.
func TestSortSpills(t *testing.T) {
	s := spillTestSchema
	col := func(n string) Expr { return aggCol(s, n) }
	keySets := map[string][]SortKey{
		"string, int desc, id":   {{Expr: col("s")}, {Expr: col("k"), Desc: true}, {Expr: col("id")}},
		"int desc, pad, id desc": {{Expr: col("k"), Desc: true}, {Expr: col("pad")}, {Expr: col("id"), Desc: true}},
	}
	for name, keys := range keySets {
		for _, fetch := range []int64{0, 150} {
			for _, limit := range []int64{8 << 10, 24 << 10, 96 << 10} {
				for seed := int64(1); seed <= 2; seed++ {
					t.Run(fmt.Sprintf("%s/fetch=%d/limit=%d/seed=%d", name, fetch, limit, seed), func(t *testing.T) {
						src := spillTestSource(t, 2000, 3, 10, seed)
						free, _ := limitedContext(t, 32, 0)
						want, err := runRows(context.Background(), NewSort(src, keys, fetch), free)
						if err != nil {
							t.Fatal(err)
						}
						tc, pool := limitedContext(t, 32, limit)
						got, err := runRows(context.Background(), NewSort(src, keys, fetch), tc)
						if err != nil {
							t.Fatal(err)
						}
						aggEqual(t, got, want)
						if fetch == 0 && pool.Stats().Refusals == 0 {
							t.Fatalf("a limit of %d bytes never refused the sort: nothing spilled", limit)
						}
						if peak := pool.Stats().Peak; peak > limit {
							t.Fatalf("peak reservation %d above the limit %d", peak, limit)
						}
					})
				}
			}
		}
	}
}

// TestSortMemoryTooSmall: a limit below one buffered batch fails with ResourceExhausted and
// leaves nothing behind (limitedContext checks memory, reservations and spill files).
func TestSortMemoryTooSmall(t *testing.T) {
	src := spillTestSource(t, 500, 2, 40, 7)
	tc, _ := limitedContext(t, 32, 512)
	_, err := runRows(context.Background(), NewSort(src, []SortKey{{Expr: aggCol(spillTestSchema, "s")}}, 0), tc)
	wantExhausted(t, err)
}

// TestSortCanceledWhileSpilling cancels a sort after it has spilled and checks that it stops
// with the cancellation and releases memory, reservations and spill files.
func TestSortCanceledWhileSpilling(t *testing.T) {
	for _, after := range []int64{10, 40} {
		t.Run(fmt.Sprint(after), func(t *testing.T) {
			src := spillTestSource(t, 3000, 3, 40, 3)
			tc, pool := limitedContext(t, 32, 16<<10)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			n := after
			op := NewSort(cancelAfter{Operator: src, n: &n, cancel: cancel}, []SortKey{{Expr: aggCol(spillTestSchema, "pad")}}, 0)
			_, err := runRows(ctx, op, tc)
			wantCanceled(t, err)
			if pool.Stats().Refusals == 0 {
				t.Fatal("the sort was canceled before it spilled")
			}
		})
	}
}

// TestSpillBytesInAnalyze: EXPLAIN ANALYZE metrics count the bytes an operator spilled, on that
// operator only.
func TestSpillBytesInAnalyze(t *testing.T) {
	src := Instrument(spillTestSource(t, 2000, 2, 10, 1))
	sort := Instrument(NewSort(src, []SortKey{{Expr: aggCol(spillTestSchema, "pad")}}, 0))
	tc, _ := limitedContext(t, 32, 16<<10)
	if _, err := runRows(context.Background(), sort, tc); err != nil {
		t.Fatal(err)
	}
	if m := sort.(*Analyzed).Metrics(); m.Spilled == 0 {
		t.Fatalf("sort metrics %+v: nothing spilled", m)
	}
	if m := src.(*Analyzed).Metrics(); m.Spilled != 0 {
		t.Fatalf("source metrics %+v: the sort's spill counted on its input", m)
	}
	if plan := FormatAnalyzedPlan(sort); !strings.Contains(strings.SplitN(plan, "\n", 2)[0], " spilled=") {
		t.Fatalf("plan does not show the sort's spill:\n%s", plan)
	}
}

// TestSpillBudgetBoundsSpillFiles: a sort whose memory runs out spills until the process's
// spill budget is spent, then fails with ResourceExhausted naming the spill limit; its files are
// removed and the budget given back. The same sort under a large budget finishes.
func TestSpillBudgetBoundsSpillFiles(t *testing.T) {
	keys := []SortKey{{Expr: aggCol(spillTestSchema, "s")}, {Expr: aggCol(spillTestSchema, "id")}}
	src := spillTestSource(t, 4000, 2, 10, 3)
	for _, tt := range []struct {
		budget int64
		fails  bool
	}{{4 << 10, true}, {64 << 20, false}} {
		tc, _ := limitedContext(t, 32, 24<<10)
		tc.Spill = NewSpillBudget(tt.budget)
		_, err := runRows(context.Background(), NewSort(src, keys, 0), tc)
		if tt.fails {
			if err == nil || !strings.Contains(err.Error(), "spill limit of 4.0 KiB") {
				t.Fatalf("budget %d: %v, want the spill limit's error", tt.budget, err)
			}
			if errs.CategoryOf(err) != errs.ResourceExhausted {
				t.Fatalf("budget %d: %v is not ResourceExhausted", tt.budget, err)
			}
		} else if err != nil {
			t.Fatalf("budget %d: %v", tt.budget, err)
		}
		if used := tc.Spill.Used(); used != 0 {
			t.Errorf("budget %d: %d bytes still counted after the sort", tt.budget, used)
		}
	}
}
