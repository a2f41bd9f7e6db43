package sql

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/planner"
)

// MySQL types a DECIMAL quotient with the dividend's scale + 4 (div_precision_increment), but
// that is only the scale it is shown with: the value itself keeps more digits (whole 9-digit
// words: the operands' scales rounded up to multiples of 9, plus 4, rounded up to a multiple of
// 9), and arithmetic that uses it again computes with all of them. 1 / (0.01 / 100000) is
// therefore 10000000.0000, not a division by a quotient rounded to 0.000000.
//
// The binder reproduces this inside arithmetic (+ - * / DIV % and SUM / AVG arguments): a
// quotient used as an operand is computed at that wider scale (its dividend is first cast to a
// scale that wide, which is exact), the operation runs on the wide value, and the result is
// cast back to the type MySQL declares for it, so what the query shows keeps MySQL's scale.
// A quotient that leaves arithmetic (compared, passed to a function, returned) has its
// declared scale.

// quotientWordDigits is the digits of one word of MySQL's decimal arithmetic.
const quotientWordDigits = 9

// maxQuotientScale is MySQL's DECIMAL_MAX_SCALE.
const maxQuotientScale = 30

// arithmeticOps are the operators whose decimal operands are computed at full precision.
var arithmeticOps = map[string]bool{"+": true, "-": true, "*": true, "/": true, "div": true, "%": true, "mod": true, "neg": true}

// widenQuotients returns the call name(args) of declared type t computed on wide quotients:
// call itself when no operand is a decimal quotient.
func (b *binder) widenQuotients(call *planner.Call) (planner.Expr, error) {
	if !arithmeticOps[call.Func] {
		return call, nil
	}
	wide := make([]planner.Expr, len(call.Args))
	changed := false
	for i, a := range call.Args {
		w, err := b.wideOperand(a)
		if err != nil {
			return nil, err
		}
		wide[i] = w
		changed = changed || w != a
	}
	if !changed {
		return call, nil
	}
	types := make([]arrow.DataType, len(wide))
	for i, a := range wide {
		types[i] = a.Type()
	}
	wt, err := resolveScalarType(call.Func, types)
	if err != nil {
		// Out of range at the wide scale: keep MySQL's declared types.
		return call, nil
	}
	wideCall := &planner.Call{Func: call.Func, Args: wide, T: wt}
	declared, ok := call.T.(*arrow.Decimal128Type)
	if !ok || arrow.TypeEqual(wt, declared) {
		return wideCall, nil
	}
	narrow := &planner.Cast{Expr: wideCall, To: declared}
	if b.wide == nil {
		b.wide = map[*planner.Cast]planner.Expr{}
	}
	b.wide[narrow] = wideCall
	return narrow, nil
}

// wideOperand returns the full-precision form of an arithmetic operand: the wide value behind a
// result widenQuotients narrowed, a decimal quotient recomputed at its wide scale, or a itself.
func (b *binder) wideOperand(a planner.Expr) (planner.Expr, error) {
	if c, ok := a.(*planner.Cast); ok {
		if w, ok := b.wide[c]; ok {
			return w, nil
		}
	}
	div, ok := a.(*planner.Call)
	if !ok || div.Func != "/" || len(div.Args) != 2 {
		return a, nil
	}
	declared, ok := div.T.(*arrow.Decimal128Type)
	if !ok {
		return a, nil
	}
	dividend, divisor := div.Args[0], div.Args[1]
	p1, s1, ok1 := exactDigits(dividend.Type())
	_, s2, ok2 := exactDigits(divisor.Type())
	if !ok1 || !ok2 {
		return a, nil
	}
	scale := roundUpWords(roundUpWords(s1) + roundUpWords(s2) + declared.Scale - s1)
	scale = min(scale, maxQuotientScale, maxDecimalDigits-(declared.Precision-declared.Scale))
	extra := scale - declared.Scale
	if extra <= 0 || p1+extra > maxDecimalDigits {
		return a, nil
	}
	widened := &planner.Cast{Expr: dividend, To: &arrow.Decimal128Type{Precision: p1 + extra, Scale: s1 + extra}}
	t, err := resolveScalarType("/", []arrow.DataType{widened.To, divisor.Type()})
	if err != nil {
		return a, nil
	}
	return &planner.Call{Func: "/", Args: []planner.Expr{widened, divisor}, T: t}, nil
}

// exactDigits returns the precision and scale of an exact type (integers as DECIMAL(19,0)).
func exactDigits(t arrow.DataType) (precision, scale int32, ok bool) {
	switch t := t.(type) {
	case *arrow.Decimal128Type:
		return t.Precision, t.Scale, true
	case *arrow.Int64Type, *arrow.Int32Type, *arrow.Int16Type, *arrow.Int8Type:
		return 19, 0, true
	}
	return 0, 0, false
}

// roundUpWords rounds a number of digits up to whole 9-digit words.
func roundUpWords(digits int32) int32 {
	return (digits + quotientWordDigits - 1) / quotientWordDigits * quotientWordDigits
}
