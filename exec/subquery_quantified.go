package exec

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/util"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/mempool"
)

// QuantifiedSubquery is x op ANY (SELECT …) or x op ALL (SELECT …) for op one of =, <>, <, <=,
// >, >=, with MySQL's NULL semantics:
//
//   - ANY is TRUE when x op v is TRUE for some value v of the set; otherwise NULL when some
//     comparison is NULL (x is NULL, or the set holds a NULL); otherwise FALSE. An empty set
//     gives FALSE, even for a NULL x.
//   - ALL is FALSE when x op v is FALSE for some v; otherwise NULL when some comparison is NULL;
//     otherwise TRUE. An empty set gives TRUE, even for a NULL x.
//
// Only the set's row count, whether it holds a NULL, and its least and greatest values matter
// (x > ANY is x > MIN, x > ALL is x > MAX, x = ALL is x = MIN = MAX, x <> ANY is x <> MIN or
// x <> MAX), so an uncorrelated set is reduced to those once per query and each row costs two
// comparisons. Values compare in the type the comparison operator would use.
type QuantifiedSubquery struct {
	needle          Expr
	op              string
	all, correlated bool
	plan            Operator
}

// NewQuantifiedSubquery returns needle op ANY|ALL (plan); plan must have exactly one column.
func NewQuantifiedSubquery(needle Expr, op string, all bool, plan Operator, correlated bool) (Expr, error) {
	switch op {
	case "=", "<>", "<", "<=", ">", ">=":
	default:
		return nil, errs.Internalf("quantified comparison with operator %q", op)
	}
	return &QuantifiedSubquery{needle: needle, op: op, all: all, plan: plan, correlated: correlated}, nil
}

func (e *QuantifiedSubquery) DataType() arrow.DataType { return arrow.FixedWidthTypes.Boolean }
func (e *QuantifiedSubquery) Plan() Operator           { return e.plan }

func (e *QuantifiedSubquery) String() string {
	q := "ANY"
	if e.all {
		q = "ALL"
	}
	return fmt.Sprintf("%s %s %s (%s)", e.needle, e.op, q, subqueryLabel(e.correlated))
}

// quantifiedSet is what a quantified comparison needs of its set: the row count, whether a
// NULL was among them, and the least and greatest non-NULL values (rows lo and hi of vals,
// which is nil when every value was NULL).
type quantifiedSet struct {
	rows    int
	hasNull bool
	vals    arrow.Array
	lo, hi  int
	res     *mempool.Reservation
}

// Release frees the values and their reservation (the query cache calls it for an
// uncorrelated set).
func (s *quantifiedSet) Release() {
	if s.vals != nil {
		s.vals.Release()
	}
	s.res.Free()
}

func (e *QuantifiedSubquery) Eval(ctx context.Context, tc *TaskContext, batch arrow.RecordBatch) (arrow.Array, error) {
	if err := checkOneColumn(e.plan); err != nil {
		return nil, err
	}
	t, err := comparisonType(e.op, []arrow.DataType{e.needle.DataType(), subqueryColumnType(e.plan)})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e, err)
	}
	raw, err := e.needle.Eval(ctx, tc, batch)
	if err != nil {
		return nil, err
	}
	needles, err := CastArray(ctx, tc, raw, t)
	raw.Release()
	if err != nil {
		return nil, err
	}
	defer needles.Release()
	n := int(batch.NumRows())
	out := array.NewBooleanBuilder(tc.Alloc)
	defer out.Release()
	out.Reserve(n)
	var set *quantifiedSet
	var c func(i, j int) int
	for row := range n {
		if e.correlated || set == nil {
			if e.correlated {
				if set != nil {
					set.Release()
				}
				set, err = e.buildSet(ctx, tc.WithOuter(batch, row), t)
			} else {
				var cached any
				cached, err = tc.Cache.Do(e, func() (any, error) { return e.buildSet(ctx, tc, t) })
				set, _ = cached.(*quantifiedSet)
				if tc.Cache == nil && set != nil {
					defer set.Release()
				}
			}
			if err != nil {
				return nil, err
			}
			c = nil
			if set.vals != nil {
				if c, err = makeComparer(needles, set.vals); err != nil {
					return nil, err
				}
			}
		}
		if v, ok := e.decide(set, c, needles, row); ok {
			out.UnsafeAppend(v)
		} else {
			out.UnsafeAppendBoolToBitmap(false)
		}
	}
	if e.correlated && set != nil {
		set.Release()
	}
	return out.NewArray(), nil
}

// decide returns the outcome for needles[row] (ok=false for NULL); c compares needles with
// set.vals.
func (e *QuantifiedSubquery) decide(set *quantifiedSet, c func(i, j int) int, needles arrow.Array, row int) (bool, bool) {
	if set.rows == 0 {
		return e.all, true
	}
	if !validAt(needles, row) || set.vals == nil {
		return false, false
	}
	want := comparisonOutcome(e.op)
	holds := func(j int) bool { return want[c(row, j)+1] }
	// decisive: for ANY, a value the comparison holds for; for ALL, one it fails for.
	var decisive bool
	switch {
	case e.op == "=" && e.all, e.op == "<>" && !e.all:
		// Some value differs from x exactly when the least or the greatest does.
		differs := c(row, set.lo) != 0 || c(row, set.hi) != 0
		decisive = differs
	case e.op == "<" || e.op == "<=":
		if e.all {
			decisive = !holds(set.lo)
		} else {
			decisive = holds(set.hi)
		}
	case e.op == ">" || e.op == ">=":
		if e.all {
			decisive = !holds(set.hi)
		} else {
			decisive = holds(set.lo)
		}
	default: // = ANY, <> ALL: some value equals x; the binder makes these [NOT] IN, but be exact.
		eq := false
		for j := range set.vals.Len() {
			if validAt(set.vals, j) && c(row, j) == 0 {
				eq = true
				break
			}
		}
		decisive = eq
	}
	switch {
	case decisive:
		return !e.all, true
	case set.hasNull:
		return false, false
	}
	return e.all, true
}

// buildSet runs the plan and reduces its column, cast to t, to a quantifiedSet.
// The values are reserved from the query's memory: while the plan's batches are read, twice
// their size (their cast copy and its concatenation follow), then the concatenated values.
func (e *QuantifiedSubquery) buildSet(ctx context.Context, tc *TaskContext, t arrow.DataType) (*quantifiedSet, error) {
	res := tc.Reserve(subqueryConsumer)
	set, err := e.fillSet(ctx, tc, t, res)
	if err != nil {
		res.Free()
		return nil, err
	}
	if set.vals != nil {
		res.Resize(util.TotalArraySize(set.vals))
	} else {
		res.Shrink(res.Size())
	}
	return set, nil
}

func (e *QuantifiedSubquery) fillSet(ctx context.Context, tc *TaskContext, t arrow.DataType, res *mempool.Reservation) (*quantifiedSet, error) {
	batches, err := collectReserved(ctx, e.plan, tc, res, 3)
	if err != nil {
		return nil, err
	}
	defer releaseBatches(batches)
	set := &quantifiedSet{res: res}
	var cols []arrow.Array
	defer func() { releaseAll(cols) }()
	for _, b := range batches {
		if b.NumRows() == 0 {
			continue
		}
		c, err := CastArray(ctx, tc, b.Column(0), t)
		if err != nil {
			return nil, err
		}
		cols = append(cols, c)
		set.rows += c.Len()
	}
	if set.rows == 0 {
		return set, nil
	}
	all, err := array.Concatenate(cols, tc.Alloc)
	if err != nil {
		return nil, errs.Internalf("quantified subquery values: %v", err)
	}
	lo, hi := -1, -1
	var c func(i, j int) int
	if !isNullType(t) {
		if c, err = makeComparer(all, all); err != nil {
			all.Release()
			return nil, err
		}
	}
	for i := range all.Len() {
		if !validAt(all, i) {
			set.hasNull = true
			continue
		}
		if lo < 0 || c(i, lo) < 0 {
			lo = i
		}
		if hi < 0 || c(i, hi) > 0 {
			hi = i
		}
	}
	if lo < 0 {
		all.Release()
		return set, nil
	}
	set.vals, set.lo, set.hi = all, lo, hi
	return set, nil
}
