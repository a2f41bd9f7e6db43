package exec

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
)

// caseExpr is CASE [operand] WHEN … THEN … [ELSE …] END.
type caseExpr struct {
	operand Expr
	whens   [][2]Expr
	els     Expr
	t       arrow.DataType
	// equals[k] compares the operand with whens[k][0] ("=" semantics) for a simple CASE.
	equals []Kernel
}

// NewCase returns a CASE expression of type t. With a non-nil operand it is a simple CASE: arm k
// is taken where operand = whens[k][0] is true (NULL never matches); otherwise arm k is taken
// where whens[k][0] is true to MySQL. The first matching arm wins; rows no arm takes get els,
// or NULL when els is nil. Every THEN / ELSE value is cast to t.
//
// Evaluation is lazy per row: a WHEN condition is evaluated only on rows no earlier arm took,
// and a THEN or ELSE value only on the rows that take it, so an error (an overflow, say) on a row
// that takes another arm is never raised.
func NewCase(operand Expr, whens [][2]Expr, els Expr, t arrow.DataType) (Expr, error) {
	if len(whens) == 0 {
		return nil, errs.Invalidf("CASE needs at least one WHEN")
	}
	c := &caseExpr{operand: operand, whens: whens, els: els, t: t}
	for _, w := range whens {
		if w[0] == nil || w[1] == nil {
			return nil, errs.Invalidf("CASE arm without a WHEN or THEN expression")
		}
		if operand != nil {
			k, _, err := ResolveScalar("=", []arrow.DataType{operand.DataType(), w[0].DataType()})
			if err != nil {
				return nil, fmt.Errorf("CASE operand compared with WHEN %s: %w", w[0], err)
			}
			c.equals = append(c.equals, k)
		} else if err := checkTruthValues("CASE WHEN", []arrow.DataType{w[0].DataType()}); err != nil {
			return nil, err
		}
		if !canCast(w[1].DataType(), t) {
			return nil, errs.Invalidf("CASE result %s of type %s cannot be converted to %s", w[1], w[1].DataType(), t)
		}
	}
	if els != nil && !canCast(els.DataType(), t) {
		return nil, errs.Invalidf("CASE ELSE %s of type %s cannot be converted to %s", els, els.DataType(), t)
	}
	return c, nil
}

func (c *caseExpr) DataType() arrow.DataType { return c.t }

func (c *caseExpr) String() string {
	var b strings.Builder
	b.WriteString("CASE")
	if c.operand != nil {
		fmt.Fprintf(&b, " %s", c.operand)
	}
	for _, w := range c.whens {
		fmt.Fprintf(&b, " WHEN %s THEN %s", w[0], w[1])
	}
	if c.els != nil {
		fmt.Fprintf(&b, " ELSE %s", c.els)
	}
	b.WriteString(" END")
	return b.String()
}

// casePiece is the value of one arm on the batch rows that took it.
type casePiece struct {
	values arrow.Array
	rows   []int32
}

func (c *caseExpr) Eval(ctx context.Context, tc *TaskContext, batch arrow.RecordBatch) (arrow.Array, error) {
	n := int(batch.NumRows())
	remaining := make([]int32, n)
	for i := range remaining {
		remaining[i] = int32(i)
	}
	var pieces []casePiece
	defer func() {
		for _, p := range pieces {
			p.values.Release()
		}
	}()
	for k, w := range c.whens {
		if len(remaining) == 0 {
			break
		}
		taken, rest, err := c.matchArm(ctx, tc, batch, remaining, k)
		if err != nil {
			return nil, err
		}
		if len(taken) > 0 {
			v, err := c.evalOn(ctx, tc, batch, taken, w[1])
			if err != nil {
				return nil, err
			}
			pieces = append(pieces, casePiece{values: v, rows: taken})
		}
		remaining = rest
	}
	if len(remaining) > 0 && c.els != nil {
		v, err := c.evalOn(ctx, tc, batch, remaining, c.els)
		if err != nil {
			return nil, err
		}
		pieces = append(pieces, casePiece{values: v, rows: remaining})
		remaining = nil
	}
	return c.assemble(ctx, tc, n, pieces)
}

// matchArm evaluates arm k's condition on the rows still undecided and splits them into the rows
// that take the arm and the rest (both in batch row numbers, ascending).
func (c *caseExpr) matchArm(ctx context.Context, tc *TaskContext, batch arrow.RecordBatch, rows []int32, k int) (taken, rest []int32, err error) {
	sub, err := subBatch(ctx, tc, batch, rows)
	if err != nil {
		return nil, nil, err
	}
	defer sub.Release()
	cond, err := c.whens[k][0].Eval(ctx, tc, sub)
	if err != nil {
		return nil, nil, err
	}
	defer func() { cond.Release() }()
	if c.operand != nil {
		op, err := c.operand.Eval(ctx, tc, sub)
		if err != nil {
			return nil, nil, err
		}
		eq, err := c.equals[k](ctx, tc, []arrow.Array{op, cond}, len(rows))
		op.Release()
		if err != nil {
			return nil, nil, err
		}
		cond.Release()
		cond = eq
	}
	mask, err := PredicateToFilter(ctx, tc, cond)
	if err != nil {
		return nil, nil, err
	}
	defer mask.Release()
	for i, r := range rows {
		if mask.Value(i) {
			taken = append(taken, r)
		} else {
			rest = append(rest, r)
		}
	}
	return taken, rest, nil
}

// evalOn evaluates e on the given rows of batch and casts the result to the CASE type.
func (c *caseExpr) evalOn(ctx context.Context, tc *TaskContext, batch arrow.RecordBatch, rows []int32, e Expr) (arrow.Array, error) {
	sub, err := subBatch(ctx, tc, batch, rows)
	if err != nil {
		return nil, err
	}
	defer sub.Release()
	v, err := e.Eval(ctx, tc, sub)
	if err != nil {
		return nil, err
	}
	defer v.Release()
	return CastArray(ctx, tc, v, c.t)
}

// subBatch returns batch restricted to rows (batch itself, retained, when rows is all of it).
func subBatch(ctx context.Context, tc *TaskContext, batch arrow.RecordBatch, rows []int32) (arrow.RecordBatch, error) {
	if len(rows) == int(batch.NumRows()) {
		batch.Retain()
		return batch, nil
	}
	return takeBatchRows(ctx, tc, batch, rows)
}

// assemble scatters the arm values back to batch order; rows no arm took are NULL.
func (c *caseExpr) assemble(ctx context.Context, tc *TaskContext, n int, pieces []casePiece) (arrow.Array, error) {
	if len(pieces) == 1 && len(pieces[0].rows) == n {
		pieces[0].values.Retain()
		return pieces[0].values, nil
	}
	if len(pieces) == 0 || isNullType(c.t) {
		return array.MakeArrayOfNull(tc.Alloc, c.t, n), nil
	}
	parts := make([]arrow.Array, 0, len(pieces)+1)
	idx := make([]int32, n)
	nullPos := int32(0)
	for _, p := range pieces {
		for j, r := range p.rows {
			idx[r] = nullPos + int32(j) + 1
		}
		parts = append(parts, p.values)
		nullPos += int32(p.values.Len())
	}
	// Index 0 marks "no arm"; shift so that it points at the trailing NULL element.
	for i := range idx {
		if idx[i] == 0 {
			idx[i] = nullPos
		} else {
			idx[i]--
		}
	}
	nullElem := array.MakeArrayOfNull(tc.Alloc, c.t, 1)
	defer nullElem.Release()
	parts = append(parts, nullElem)
	all, err := array.Concatenate(parts, tc.Alloc)
	if err != nil {
		return nil, errs.Internalf("assembling CASE results: %v", err)
	}
	defer all.Release()
	return takeRows(ctx, tc, all, idx)
}
