package exec

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/mempool"
)

// InSubquery is x [NOT] IN (SELECT …) with SQL NULL semantics: TRUE when some value of the set
// equals x; otherwise NULL when x is NULL or the set holds a NULL; otherwise FALSE. An empty
// set gives FALSE even for a NULL x. NOT IN negates TRUE and FALSE and keeps NULL. Values are
// compared in the common type of x and the subquery column (as join keys are).
type InSubquery struct {
	needle              Expr
	plan                Operator
	negated, correlated bool
}

// NewInSubquery returns needle [NOT] IN (plan); plan must have exactly one column.
func NewInSubquery(needle Expr, plan Operator, negated, correlated bool) Expr {
	return &InSubquery{needle: needle, plan: plan, negated: negated, correlated: correlated}
}

func (e *InSubquery) DataType() arrow.DataType { return arrow.FixedWidthTypes.Boolean }
func (e *InSubquery) Plan() Operator           { return e.plan }

func (e *InSubquery) String() string {
	op := "IN"
	if e.negated {
		op = "NOT IN"
	}
	return fmt.Sprintf("%s %s (%s)", e.needle, op, subqueryLabel(e.correlated))
}

func (e *InSubquery) Eval(ctx context.Context, tc *TaskContext, batch arrow.RecordBatch) (arrow.Array, error) {
	if err := checkOneColumn(e.plan); err != nil {
		return nil, err
	}
	keyType, err := joinKeyType(e.needle.DataType(), subqueryColumnType(e.plan))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e, err)
	}
	needles, err := evalKeys(ctx, tc, batch, []Expr{e.needle}, []arrow.DataType{keyType})
	if err != nil {
		return nil, err
	}
	defer releaseAll(needles)
	enc, err := NewRowKeyEncoder(needles)
	if err != nil {
		return nil, err
	}
	n := int(batch.NumRows())
	out := array.NewBooleanBuilder(tc.Alloc)
	defer out.Release()
	out.Reserve(n)
	var set *valueSet
	var buf []byte
	for row := range n {
		if set == nil || e.correlated {
			rowTC := tc
			if e.correlated {
				rowTC = tc.WithOuter(batch, row)
			}
			if e.correlated {
				if set != nil {
					set.Release()
				}
				set, err = e.buildSet(ctx, rowTC, keyType)
			} else {
				var cached any
				cached, err = tc.Cache.Do(e, func() (any, error) { return e.buildSet(ctx, tc, keyType) })
				set, _ = cached.(*valueSet)
				if tc.Cache == nil && set != nil {
					defer set.Release()
				}
			}
			if err != nil {
				return nil, err
			}
		}
		switch {
		case set.rows == 0:
			out.UnsafeAppend(e.negated)
		case enc.HasNull(row):
			out.UnsafeAppendBoolToBitmap(false)
		default:
			buf = enc.Append(buf[:0], row)
			_, hit := set.keys[string(buf)]
			switch {
			case hit:
				out.UnsafeAppend(!e.negated)
			case set.hasNull:
				out.UnsafeAppendBoolToBitmap(false)
			default:
				out.UnsafeAppend(e.negated)
			}
		}
	}
	if e.correlated && set != nil {
		set.Release()
	}
	return out.NewArray(), nil
}

// valueSet is the encoded non-NULL values of a subquery's column, whether it had a NULL, and
// how many rows it had. res holds the keys' bytes in the query's memory until Release (which
// the query cache calls for an uncorrelated set).
type valueSet struct {
	keys    map[string]struct{}
	hasNull bool
	rows    int
	res     *mempool.Reservation
}

// Release gives the set's memory back.
func (s *valueSet) Release() { s.res.Free() }

func (e *InSubquery) buildSet(ctx context.Context, tc *TaskContext, keyType arrow.DataType) (*valueSet, error) {
	res := tc.Reserve(subqueryConsumer)
	set, err := e.fillSet(ctx, tc, keyType, res)
	if err != nil {
		res.Free()
		return nil, err
	}
	return set, nil
}

// fillSet reads the subquery's rows (reserved from res while they are held) into a set whose
// keys res then holds.
func (e *InSubquery) fillSet(ctx context.Context, tc *TaskContext, keyType arrow.DataType, res *mempool.Reservation) (*valueSet, error) {
	batches, err := collectReserved(ctx, e.plan, tc, res, 1)
	if err != nil {
		return nil, err
	}
	defer releaseBatches(batches)
	set := &valueSet{keys: map[string]struct{}{}, res: res}
	held := int64(0)
	col := []Expr{NewColumn(0, e.plan.Schema().Field(0).Name, subqueryColumnType(e.plan))}
	types := []arrow.DataType{keyType}
	var buf []byte
	for _, b := range batches {
		vals, err := evalKeys(ctx, tc, b, col, types)
		if err != nil {
			return nil, err
		}
		enc, err := NewRowKeyEncoder(vals)
		if err != nil {
			releaseAll(vals)
			return nil, err
		}
		for row := range int(b.NumRows()) {
			if enc.HasNull(row) {
				set.hasNull = true
				continue
			}
			buf = enc.Append(buf[:0], row)
			if _, dup := set.keys[string(buf)]; !dup {
				set.keys[string(buf)] = struct{}{}
				held += int64(len(buf)) + aggMapEntryBytes
			}
		}
		set.rows += int(b.NumRows())
		releaseAll(vals)
		if err := res.TryGrow(held); err != nil {
			return nil, err
		}
		held = 0
	}
	res.Shrink(batchesBytes(batches))
	return set, nil
}
