package exec

import (
	"context"
	"fmt"
	"testing"
)

// spillPlan says which aggregation a spilling test runs.
type spillPlan int

const (
	// spillSingle is one Single stage with fixed-size and text (GROUP_CONCAT) states: it spills
	// by flushing states.
	spillSingle spillPlan = iota
	// spillTwoStage is a Partial and a Final stage (no GROUP_CONCAT: the Coalesce between them
	// makes its order vary): both flush states.
	spillTwoStage
	// spillDistinct is one Single stage with a DISTINCT aggregate, which spills new groups'
	// rows. The DISTINCT argument is the first key, so a held group's state stops growing.
	spillDistinct
)

func (p spillPlan) String() string { return [...]string{"single", "two-stage", "distinct"}[p] }

// spillAggs are the aggregates of plan p.
func spillAggs(p spillPlan, keys []string) []AggregateSpec {
	col := func(n string) Expr { return aggCol(spillTestSchema, n) }
	if p == spillDistinct {
		return []AggregateSpec{
			{Name: "n", Func: "count"},
			{Name: "sum_id", Func: "sum", Args: []Expr{col("id")}},
			{Name: "nd", Func: "count", Args: []Expr{col(keys[0])}, Distinct: true},
		}
	}
	aggs := []AggregateSpec{
		{Name: "n", Func: "count"},
		{Name: "sum_id", Func: "sum", Args: []Expr{col("id")}},
		{Name: "avg_k", Func: "avg", Args: []Expr{col("k")}},
		{Name: "min_pad", Func: "min", Args: []Expr{col("pad")}},
		{Name: "max_s", Func: "max", Args: []Expr{col("s")}},
	}
	if p == spillSingle {
		aggs = append(aggs, AggregateSpec{Name: "ids", Func: "group_concat", Args: []Expr{col("id")}})
	}
	return aggs
}

// spillAggPlan returns plan p over src grouped by keys.
func spillAggPlan(t *testing.T, src Operator, keys []string, p spillPlan) Operator {
	t.Helper()
	groupBy := make([]Expr, len(keys))
	for i, k := range keys {
		groupBy[i] = aggCol(spillTestSchema, k)
	}
	if p != spillTwoStage {
		op, err := NewHashAggregate(src, groupBy, keys, spillAggs(p, keys), AggregateSingle)
		if err != nil {
			t.Fatal(err)
		}
		return op
	}
	partial, err := NewHashAggregate(src, groupBy, keys, spillAggs(p, keys), AggregatePartial)
	if err != nil {
		t.Fatal(err)
	}
	finalKeys := make([]Expr, len(keys))
	for i, k := range keys {
		finalKeys[i] = aggCol(partial.Schema(), k)
	}
	op, err := NewHashAggregate(NewCoalesce(partial), finalKeys, keys, spillAggs(p, keys), AggregateFinal)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// TestHashAggregateSpills aggregates under limits that force groups to disk (and spilled
// partitions to spill again) and checks the groups equal the unlimited aggregation's.
func TestHashAggregateSpills(t *testing.T) {
	seed := int64(0)
	for _, plan := range []spillPlan{spillSingle, spillTwoStage, spillDistinct} {
		for _, keys := range [][]string{{"k"}, {"s"}, {"s", "k"}} {
			for _, limit := range []int64{10 << 10, 20 << 10} {
				if plan == spillDistinct {
					limit /= 2 // one partition holds half the groups of two
				}
				seed++ // a different input for every case
				name := fmt.Sprintf("%s/%v/limit=%d", plan, keys, limit)
				t.Run(name, func(t *testing.T) {
					// Partitions aggregate concurrently; a DISTINCT stream keeps its held groups
					// while it spills, so whether one partition leaves the other enough memory
					// would depend on timing: run those over one partition.
					parts := 2
					if plan == spillDistinct {
						parts = 1
					}
					src := spillTestSource(t, 1000, parts, 10, seed)
					op := spillAggPlan(t, src, keys, plan)
					wantSameRowsUnderLimit(t, op, 16, limit, "the groups fit")
				})
			}
		}
	}
}

// TestHashAggregateMemoryTooSmall: a limit under which even the deepest spilled partitions do
// not fit, and a global aggregate (nothing to partition) whose DISTINCT state outgrows the
// limit, fail with ResourceExhausted and leave nothing behind.
func TestHashAggregateMemoryTooSmall(t *testing.T) {
	src := spillTestSource(t, 2000, 1, 10, 4)
	grouped := spillAggPlan(t, src, []string{"s", "k"}, spillSingle)
	distinct := spillAggPlan(t, src, []string{"s", "k"}, spillDistinct)
	global, err := NewHashAggregate(src, nil, nil, []AggregateSpec{
		{Name: "nd", Func: "count", Args: []Expr{aggCol(spillTestSchema, "pad")}, Distinct: true},
	}, AggregateSingle)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []Operator{grouped, distinct, global} {
		t.Run(op.String(), func(t *testing.T) {
			tc, _ := limitedContext(t, 16, 256)
			_, err := runRows(context.Background(), op, tc)
			wantExhausted(t, err)
		})
	}
}

// TestHashAggregateCanceledWhileSpilling cancels an aggregate after it started spilling.
func TestHashAggregateCanceledWhileSpilling(t *testing.T) {
	src := spillTestSource(t, 2000, 1, 10, 5)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := int64(150)
	op := spillAggPlan(t, cancelAfter{Operator: src, n: &n, cancel: cancel}, []string{"s", "k"}, spillSingle)
	tc, pool := limitedContext(t, 16, 12<<10)
	_, err := runRows(ctx, op, tc)
	wantCanceled(t, err)
	if pool.Stats().Refusals == 0 {
		t.Fatal("the aggregate was canceled before it spilled")
	}
}
