package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A scan's filters (the conjuncts pushed into it) are evaluated one after the other. Copying
// the kept rows after each one would copy every column once per filter (TPC-H Q12's five
// conditions on lineitem, Q6's four); instead the filters' masks are ANDed, and the rows are
// copied when the mask has dropped at least half of them and a later filter is costly (it then
// evaluates fewer rows), and once at the end, into the scan's output columns only. A filter
// may so be evaluated over rows an earlier one dropped, as the conditions of one AND are.
//
// A filter that compares fixed-width columns with each other or with constants (a date range's
// two bounds, BETWEEN, IN of numbers) costs one pass over its columns, less than copying the
// kept rows of every column read (wide decimals among them) so that it reads fewer: after
// `l_shipdate >= d` keeps 46 % of lineitem, `l_shipdate < d + 1 month` runs on all the rows
// and only the 1 % both keep are copied.

// andMasks returns the rows both a and b keep (neither has NULLs; PredicateToFilter's form).
func andMasks(mem memory.Allocator, a, b *array.Boolean) *array.Boolean {
	n := a.Len()
	ab, aoff := maskBitmap(a)
	bb, boff := maskBitmap(b)
	if ab == nil || bb == nil {
		return constantBoolArray(mem, n, false).(*array.Boolean)
	}
	values := bitutil.BitmapAndAlloc(mem, ab, bb, int64(aoff), int64(boff), int64(n), 0)
	defer values.Release()
	data := array.NewData(arrow.FixedWidthTypes.Boolean, n, []*memory.Buffer{nil, values}, nil, 0, 0)
	defer data.Release()
	return array.NewBooleanData(data)
}

// keptRows counts the rows mask keeps (no NULLs).
func keptRows(mask *array.Boolean) int {
	bitmap, offset := maskBitmap(mask)
	if bitmap == nil {
		return 0
	}
	return bitutil.CountSetBits(bitmap, offset, mask.Len())
}

// applyFilters returns the rows of b (the columns read) that every filter keeps, with the
// scan's output columns, or nil when none is kept. It releases nothing of b.
func (s *Scan) applyFilters(ctx context.Context, tc *TaskContext, b arrow.RecordBatch) (arrow.RecordBatch, error) {
	cur := b
	cur.Retain()
	defer func() { cur.Release() }()
	var mask *array.Boolean
	defer func() {
		if mask != nil {
			mask.Release()
		}
	}()
	for i, cond := range s.filters {
		res, err := cond.Eval(ctx, tc, cur)
		if err != nil {
			return nil, err
		}
		m, err := PredicateToFilter(ctx, tc, res)
		res.Release()
		if err != nil {
			return nil, err
		}
		if mask != nil {
			both := andMasks(tc.Alloc, mask, m)
			m.Release()
			mask.Release()
			m = both
		}
		mask = m
		kept := keptRows(mask)
		if kept == 0 {
			return nil, nil
		}
		if kept == int(cur.NumRows()) {
			mask.Release()
			mask = nil
			continue
		}
		if 2*kept <= int(cur.NumRows()) && !allCheapFilters(s.filters[i+1:]) {
			next, err := filterByMask(ctx, tc, cur, mask)
			if err != nil {
				return nil, err
			}
			cur.Release()
			cur = next
			mask.Release()
			mask = nil
		}
	}
	narrow := cur
	if s.schema != s.read {
		narrow = array.NewRecordBatch(s.schema, cur.Columns()[:s.schema.NumFields()], cur.NumRows())
		defer narrow.Release()
	}
	if mask == nil {
		narrow.Retain()
		return narrow, nil
	}
	return filterByMask(ctx, tc, narrow, mask)
}

// allCheapFilters reports whether every filter is a comparison of fixed-width columns and
// constants (cheapFilter): evaluated over every row, they cost less than a copy of the rows.
func allCheapFilters(filters []Expr) bool {
	for _, f := range filters {
		if !cheapFilter(f) {
			return false
		}
	}
	return true
}

// cheapFilter reports whether f compares fixed-width columns with each other or with
// constants as they are stored: a comparison, IN or BETWEEN with constants specialized to bit
// kernels, or a comparison or BETWEEN of columns and literals all of one integer,
// floating-point, date or time type. Decimals are not: their comparisons cost a cast or a 16-byte compare
// per row, more than a copy of the rows they would no longer see.
func cheapFilter(f Expr) bool {
	switch e := f.(type) {
	case *compareConstExpr:
		return cheapOperand(e.operand, e.cmpType)
	case *inConstExpr:
		return cheapOperand(e.operand, e.cmpType)
	case *betweenConstExpr:
		return cheapOperand(e.lo.operand, e.lo.cmpType)
	case *callExpr:
		switch e.name {
		case "=", "<>", "!=", "<", "<=", ">", ">=", "between":
		default:
			return false
		}
		// Columns and literals all of one type: nothing is cast.
		columns := 0
		for _, a := range e.args {
			switch {
			case !arrow.TypeEqual(a.DataType(), e.args[0].DataType()):
				return false
			case cheapOperand(a, a.DataType()):
				columns++
			case isLiteral(a):
			default:
				return false
			}
		}
		return columns > 0
	}
	return false
}

// cheapOperand reports whether e is a fixed-width column, not decimal, of type cmp (compared
// without a cast).
func cheapOperand(e Expr, cmp arrow.DataType) bool {
	return fixedWidthColumn(e) && !isDecimalType(e.DataType()) && arrow.TypeEqual(e.DataType(), cmp)
}

// fixedWidthColumn reports whether e is a column of a fixed-width type.
func fixedWidthColumn(e Expr) bool {
	c, ok := e.(*columnExpr)
	return ok && FixedRowWidth(c.t) > 0
}

func isLiteral(e Expr) bool {
	_, ok := e.(*literalExpr)
	return ok
}
