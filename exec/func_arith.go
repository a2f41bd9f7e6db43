package exec

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/internal/errs"
)

// Arithmetic operators "+", "-", "*" with MySQL result types: integers stay BIGINT (overflow is
// an InvalidInput error), decimals widen (sum: widest integer part + 1 and widest scale; product:
// summed precision and scale), anything mixed with a float or a string is a double.

func init() {
	for _, op := range []string{"+", "-", "*"} {
		RegisterScalar(op, resolveAddSubMul(op))
	}
}

// maxDecimalScale is the largest scale MySQL gives an arithmetic result.
const maxDecimalScale = 30

func resolveAddSubMul(op string) ScalarResolver {
	return func(types []arrow.DataType) (Kernel, arrow.DataType, error) {
		if err := checkArity(op, types, 2, 2); err != nil {
			return nil, nil, err
		}
		d, err := arithmeticDomain(op, types)
		if err != nil {
			return nil, nil, err
		}
		operands := operandTypes(d, types)
		switch d {
		case domainFloat:
			return binaryKernel(operands, floatArith(op)), arrow.PrimitiveTypes.Float64, nil
		case domainDecimal:
			t := decimalArithType(op, operands[0], operands[1])
			return binaryKernel(operands, decimalArith(op, t)), t, nil
		}
		return binaryKernel(operands, intArith(op)), arrow.PrimitiveTypes.Int64, nil
	}
}

// decimalArithType is MySQL's result type of a + b, a - b or a * b on decimals.
func decimalArithType(op string, a, b arrow.DataType) *arrow.Decimal128Type {
	p1, s1 := decimalOf(a)
	p2, s2 := decimalOf(b)
	if op == "*" {
		return newDecimalType(p1+p2, min(s1+s2, maxDecimalScale))
	}
	s := max(s1, s2)
	return newDecimalType(max(p1-s1, p2-s2)+s+1, s)
}

func bigintOutOfRange(x int64, op string, y int64) error {
	return errs.Invalidf("BIGINT value is out of range in '(%d %s %d)'", x, op, y)
}

func intArith(op string) func(tc *TaskContext, a, b arrow.Array) (arrow.Array, error) {
	var f func(x, y int64) (int64, bool, error)
	switch op {
	case "+":
		f = func(x, y int64) (int64, bool, error) {
			s := x + y
			if (x^s)&(y^s) < 0 {
				return 0, false, bigintOutOfRange(x, op, y)
			}
			return s, true, nil
		}
	case "-":
		f = func(x, y int64) (int64, bool, error) {
			s := x - y
			if (x^y)&(x^s) < 0 {
				return 0, false, bigintOutOfRange(x, op, y)
			}
			return s, true, nil
		}
	default:
		f = func(x, y int64) (int64, bool, error) {
			p, ok := mulInt64(x, y)
			if !ok {
				return 0, false, bigintOutOfRange(x, op, y)
			}
			return p, true, nil
		}
	}
	return func(tc *TaskContext, a, b arrow.Array) (arrow.Array, error) {
		return binaryRows(newInt64Builder(tc.Alloc), a, b, int64Values(a), int64Values(b), f)
	}
}

// mulInt64 multiplies with overflow detection.
func mulInt64(x, y int64) (int64, bool) {
	if x == 0 || y == 0 {
		return 0, true
	}
	p := x * y
	if (x == -1 && y == math.MinInt64) || (y == -1 && x == math.MinInt64) || p/y != x {
		return 0, false
	}
	return p, true
}

func floatArith(op string) func(tc *TaskContext, a, b arrow.Array) (arrow.Array, error) {
	var g func(x, y float64) float64
	switch op {
	case "+":
		g = func(x, y float64) float64 { return x + y }
	case "-":
		g = func(x, y float64) float64 { return x - y }
	default:
		g = func(x, y float64) float64 { return x * y }
	}
	f := func(x, y float64) (float64, bool, error) {
		r := g(x, y)
		if math.IsInf(r, 0) && !math.IsInf(x, 0) && !math.IsInf(y, 0) {
			return 0, false, errs.Invalidf("DOUBLE value is out of range in '(%s %s %s)'", formatFloat(x), op, formatFloat(y))
		}
		return r, true, nil
	}
	return func(tc *TaskContext, a, b arrow.Array) (arrow.Array, error) {
		return binaryRows(newFloat64Builder(tc.Alloc), a, b, float64Values(a), float64Values(b), f)
	}
}
