package exec

import (
	"context"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// arithConstExpr is decimal "+", "-" or "*" of an expression with a constant, the shape of
// most arithmetic in queries (1 - l_discount, price * 1.1).
//
// It yields exactly what the general kernel yields for the same call (it falls back to that
// kernel whenever it cannot): the constant is converted to its operand type once per batch
// instead of being broadcast to a whole array and cast row by row, and the result is computed
// in one loop of int64 operations when every value fits in int64 (decimal_int64.go), with the
// same rounding. The result's validity is the operand's.
type arithConstExpr struct {
	general   *callExpr // the same operation as a plain call: its text, type and fallback path
	operand   Expr      // the side that is not the constant
	constant  Expr      // the literal side
	constLeft bool      // the constant is the left operand
	// operandType and constType are the types the general kernel casts the two sides to.
	operandType, constType arrow.DataType
	result                 *arrow.Decimal128Type
}

// newArithConst returns the specialized form of call when call is decimal "+", "-" or "*" of a
// non-constant expression and a non-NULL literal, and nil otherwise.
func newArithConst(call *callExpr) Expr {
	if call.name != "+" && call.name != "-" && call.name != "*" {
		return nil
	}
	result, ok := call.t.(*arrow.Decimal128Type)
	if !ok {
		return nil
	}
	_, _, isLit0, ok := constantOperand(call)
	if !ok {
		return nil
	}
	types := []arrow.DataType{call.args[0].DataType(), call.args[1].DataType()}
	d, err := arithmeticDomain(call.name, types)
	if err != nil || d != domainDecimal {
		return nil
	}
	ops := operandTypes(d, types)
	e := &arithConstExpr{general: call, operand: call.args[0], constant: call.args[1], operandType: ops[0], constType: ops[1], result: result}
	if isLit0 {
		e.operand, e.constant, e.constLeft = call.args[1], call.args[0], true
		e.operandType, e.constType = ops[1], ops[0]
	}
	return e
}

func (e *arithConstExpr) DataType() arrow.DataType { return e.general.DataType() }
func (e *arithConstExpr) String() string           { return e.general.String() }

func (e *arithConstExpr) Eval(ctx context.Context, tc *TaskContext, batch arrow.RecordBatch) (arrow.Array, error) {
	if batch.NumRows() == 0 || !int64DecimalPaths {
		return e.general.Eval(ctx, tc, batch)
	}
	// The constant as a one-row array of its operand type: the same cast the general kernel
	// applies to every row of the broadcast constant.
	one := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1)
	defer one.Release()
	raw, err := e.constant.Eval(ctx, tc, one)
	if err != nil {
		return nil, err
	}
	c, err := CastArray(ctx, tc, raw, e.constType)
	raw.Release()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.general.name, err)
	}
	defer c.Release()
	k, ok := int64Decimals(c)
	if !ok || c.IsNull(0) {
		return e.general.Eval(ctx, tc, batch)
	}
	v, err := e.operand.Eval(ctx, tc, batch)
	if err != nil {
		return nil, err
	}
	cv, err := CastArray(ctx, tc, v, e.operandType)
	v.Release()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.general.name, err)
	}
	defer cv.Release()
	x, ok := decimal128Values(cv)
	if !ok {
		return e.general.Eval(ctx, tc, batch)
	}
	r := newDecimalResult(tc.Alloc, len(x))
	s, sx, sc := e.result.Scale, decimalScale(e.operandType), decimalScale(e.constType)
	kc := int64(k[0].LowBits())
	switch e.general.name {
	case "*":
		ok = mulInt64ScaledConst(r.out, x, kc, sx+sc-s)
	case "-":
		ok = addInt64ScaledConst(r.out, x, kc, s-sx, s-sc, !e.constLeft, e.constLeft)
	default:
		ok = addInt64ScaledConst(r.out, x, kc, s-sx, s-sc, false, false)
	}
	if !ok {
		r.release()
		return e.general.Eval(ctx, tc, batch)
	}
	return r.finish(tc.Alloc, e.result, cv), nil
}

// addInt64ScaledConst sets out[i] to ±x[i]*10^kx ± c*10^kc (subC negates the constant, subX the
// values), false when a value leaves int64: addInt64Scaled with one side constant.
func addInt64ScaledConst(out, x []decimal128.Num, c int64, kx, kc int32, subC, subX bool) bool {
	mx, ok1 := pow10Int64(kx)
	mc, ok2 := pow10Int64(kc)
	if !ok1 || !ok2 {
		return false
	}
	limC := int64(math.MaxInt64) / mc
	if c > limC || c < -limC {
		return false
	}
	cs, ms := c*mc, mx
	if subC {
		cs = -cs
	}
	if subX {
		ms = -mx
	}
	var bx, wide uint64
	var xi int64
	for i := range out {
		xi, bx, wide = foldInt64(x[i], bx, wide)
		out[i] = decimal128.FromI64(xi*ms + cs)
	}
	if wide != 0 {
		return false
	}
	if scaledSumFits(bx, uint64(mx), magnitude(c), uint64(mc)) {
		return true
	}
	limX := int64(math.MaxInt64) / mx
	for i := range out {
		xi := int64(x[i].LowBits())
		if xi > limX || xi < -limX {
			return false
		}
		v, ok := addInt64(xi*ms, cs)
		if !ok {
			return false
		}
		out[i] = decimal128.FromI64(v)
	}
	return true
}

// mulInt64ScaledConst sets out[i] to x[i]*c / 10^drop (rounded), false when a product leaves
// int64: mulInt64Scaled with one side constant.
func mulInt64ScaledConst(out, x []decimal128.Num, c int64, drop int32) bool {
	d, ok := pow10Int64(drop)
	if !ok {
		return false
	}
	var bx, wide uint64
	var xi int64
	for i := range out {
		xi, bx, wide = foldInt64(x[i], bx, wide)
		p := xi * c
		if d > 1 {
			p = divPow10Int64(p, d)
		}
		out[i] = decimal128.FromI64(p)
	}
	if wide != 0 {
		return false
	}
	if productFits(bx, magnitude(c)) {
		return true
	}
	for i := range out {
		p, ok := mulInt64(int64(x[i].LowBits()), c)
		if !ok {
			return false
		}
		if d > 1 {
			p = divPow10Int64(p, d)
		}
		out[i] = decimal128.FromI64(p)
	}
	return true
}
