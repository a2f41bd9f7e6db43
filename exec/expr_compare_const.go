package exec

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// compareConstExpr is a comparison ("=", "<>", "<", "<=", ">", ">=", "<=>") of an expression
// with a constant, the shape of most WHERE conditions (x > 900000, name = 'abc').
//
// It yields exactly what the general comparison kernel yields for the same call (it falls back
// to that kernel whenever it cannot): the constant is converted to the comparison type once per
// batch instead of being broadcast to a whole array, and the outcomes of a typed loop go straight
// into the result's bitmap, eight rows per byte. The result's validity is the operand's (a NULL
// operand gives NULL; with "<=>" it gives FALSE and the result has no NULLs).
type compareConstExpr struct {
	general  *callExpr // the same comparison as a plain call: its text, type and fallback path
	operand  Expr      // the side that is not the constant
	constant Expr      // the literal side
	op       constCmp  // the operator with operand on the left
	nullSafe bool
	cmpType  arrow.DataType
}

// newCompareConst returns the specialized form of call when call compares a non-constant
// expression with a non-NULL literal in a type the bit kernels handle, and nil otherwise.
func newCompareConst(call *callExpr) Expr {
	operand, constant, isLit0, ok := constantOperand(call)
	if !ok {
		return nil
	}
	op, ok := constCmpOf(call.name, isLit0)
	if !ok {
		return nil
	}
	t, err := comparisonType(call.name, []arrow.DataType{call.args[0].DataType(), call.args[1].DataType()})
	if err != nil || !constCompareType(t) {
		return nil
	}
	return &compareConstExpr{
		general: call, operand: operand, constant: constant, op: op,
		nullSafe: call.name == "<=>", cmpType: t,
	}
}

// constantOperand splits a call of two arguments, exactly one of which is a non-NULL literal,
// into the other argument and the literal; constLeft reports whether the literal comes first.
// ok is false for any other call.
func constantOperand(call *callExpr) (operand, constant Expr, constLeft, ok bool) {
	if len(call.args) != 2 {
		return nil, nil, false, false
	}
	lit0, isLit0 := call.args[0].(*literalExpr)
	lit1, isLit1 := call.args[1].(*literalExpr)
	if isLit0 == isLit1 {
		return nil, nil, false, false
	}
	operand, constant, lit := call.args[0], call.args[1], lit1
	if isLit0 {
		operand, constant, lit = call.args[1], call.args[0], lit0
	}
	if !lit.v.IsValid() || isNullType(lit.v.DataType()) {
		return nil, nil, false, false
	}
	return operand, constant, isLit0, true
}

// constCompareType reports whether the bit kernels compare values of type t.
func constCompareType(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT64, arrow.FLOAT64, arrow.DATE32, arrow.TIMESTAMP, arrow.DECIMAL128, arrow.STRING:
		return true
	}
	return false
}

func (e *compareConstExpr) DataType() arrow.DataType { return e.general.DataType() }
func (e *compareConstExpr) String() string           { return e.general.String() }

func (e *compareConstExpr) Eval(ctx context.Context, tc *TaskContext, batch arrow.RecordBatch) (arrow.Array, error) {
	if batch.NumRows() == 0 {
		return e.general.Eval(ctx, tc, batch)
	}
	// The constant as a one-row array of the comparison type: the same cast the general kernel
	// applies to every row of the broadcast constant.
	one := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1)
	defer one.Release()
	raw, err := e.constant.Eval(ctx, tc, one)
	if err != nil {
		return nil, err
	}
	c, err := CastArray(ctx, tc, raw, e.cmpType)
	raw.Release()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.general.name, err)
	}
	defer c.Release()
	if c.IsNull(0) {
		return e.general.Eval(ctx, tc, batch)
	}
	v, err := e.operand.Eval(ctx, tc, batch)
	if err != nil {
		return nil, err
	}
	cv, err := CastArray(ctx, tc, v, e.cmpType)
	zero := err == nil && zeroDates(v, cv) != nil
	v.Release()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.general.name, err)
	}
	defer cv.Release()
	if zero {
		// Text that is no valid date compares as the zero date, which the bit kernels lack.
		return e.general.Eval(ctx, tc, batch)
	}
	out := compareWithConstant(tc.Alloc, cv, c, e.op, e.nullSafe)
	if out == nil {
		return e.general.Eval(ctx, tc, batch)
	}
	return out, nil
}

// compareWithConstant compares every row of col with row 0 of c (same type, non-NULL) and
// returns the BOOLEAN result, or nil when the type has no bit kernel (or the constant is NaN).
func compareWithConstant(mem memory.Allocator, col, c arrow.Array, op constCmp, nullSafe bool) arrow.Array {
	n := col.Len()
	nulls := col.NullN()
	if nulls == n {
		if nullSafe {
			return constantBoolArray(mem, n, false)
		}
		return array.MakeArrayOfNull(mem, arrow.FixedWidthTypes.Boolean, n)
	}
	values := memory.NewResizableBuffer(mem)
	defer values.Release()
	values.Resize(int(bitutil.BytesForBits(int64(n))))
	bits := values.Bytes()
	switch x := col.(type) {
	case *array.Int64:
		compareOrderedBits(x.Int64Values(), c.(*array.Int64).Value(0), op, bits)
	case *array.Float64:
		k := c.(*array.Float64).Value(0)
		if math.IsNaN(k) {
			return nil
		}
		compareOrderedBits(x.Float64Values(), k, op, bits)
	case *array.Date32:
		compareOrderedBits(x.Date32Values(), c.(*array.Date32).Value(0), op, bits)
	case *array.Timestamp:
		compareOrderedBits(x.TimestampValues(), c.(*array.Timestamp).Value(0), op, bits)
	case *array.Decimal128:
		vals, k := x.Values(), c.(*array.Decimal128).Value(0)
		compareThreeWayBits(n, func(i int) int { return vals[i].Cmp(k) }, op, bits)
	case *array.String:
		k := c.(*array.String).Value(0)
		if op == constEQ || op == constNE {
			equalStringBits(x, k, op == constNE, bits)
			break
		}
		compareThreeWayBits(n, func(i int) int { return strings.Compare(x.Value(i), k) }, op, bits)
	default:
		return nil
	}
	var validity *memory.Buffer
	if nulls > 0 {
		srcValid := col.NullBitmapBytes()
		if nullSafe {
			// NULL <=> constant is FALSE: clear the bits of the NULL rows.
			and := bitutil.BitmapAndAlloc(mem, bits, srcValid, 0, int64(col.Data().Offset()), int64(n), 0)
			defer and.Release()
			values = and
			nulls = 0
		} else {
			validity = memory.NewResizableBuffer(mem)
			defer validity.Release()
			validity.Resize(int(bitutil.BytesForBits(int64(n))))
			bitutil.CopyBitmap(srcValid, col.Data().Offset(), n, validity.Bytes(), 0)
		}
	}
	data := array.NewData(arrow.FixedWidthTypes.Boolean, n, []*memory.Buffer{validity, values}, nil, nulls, 0)
	defer data.Release()
	return array.MakeFromData(data)
}

// equalStringBits sets bit i of out to whether row i of x equals k, byte for byte as
// strings.Compare compares (differs from k, with ne): lengths first, so most rows of a column
// compared with a short constant (l_returnflag = 'R') cost a subtraction.
func equalStringBits(x *array.String, k string, ne bool, out []byte) {
	offs := x.ValueOffsets()
	data := x.ValueBytes()
	base := offs[0]
	n := x.Len()
	for i := 0; i < n; i += 8 {
		var b byte
		for j := 0; j < 8 && i+j < n; j++ {
			lo, hi := offs[i+j]-base, offs[i+j+1]-base
			eq := int(hi-lo) == len(k) && string(data[lo:hi]) == k
			b |= bit(eq != ne) << j
		}
		out[i>>3] = b
	}
}

// constantBoolArray is n non-NULL copies of v.
func constantBoolArray(mem memory.Allocator, n int, v bool) arrow.Array {
	values := memory.NewResizableBuffer(mem)
	defer values.Release()
	values.Resize(int(bitutil.BytesForBits(int64(n))))
	bitutil.SetBitsTo(values.Bytes(), 0, int64(n), v)
	data := array.NewData(arrow.FixedWidthTypes.Boolean, n, []*memory.Buffer{nil, values}, nil, 0, 0)
	defer data.Release()
	return array.MakeFromData(data)
}
