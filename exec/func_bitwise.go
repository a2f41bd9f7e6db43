package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
)

// Bitwise operators on BIGINT: "&", "|", "^", "<<", ">>" and "~". Operands are converted to
// integers with CAST semantics; shifts by 64 or more (or by a negative count) give 0, and ">>"
// is a logical shift as MySQL's unsigned arithmetic makes it.

func init() {
	for _, op := range []string{"&", "|", "^", "<<", ">>"} {
		RegisterScalar(op, resolveBitwise(op))
	}
	RegisterScalar("~", resolveBitNot)
}

func resolveBitwise(op string) ScalarResolver {
	return func(types []arrow.DataType) (Kernel, arrow.DataType, error) {
		if err := checkArity(op, types, 2, 2); err != nil {
			return nil, nil, err
		}
		if _, err := arithmeticDomain(op, types); err != nil {
			return nil, nil, err
		}
		var g func(x, y int64) int64
		switch op {
		case "&":
			g = func(x, y int64) int64 { return x & y }
		case "|":
			g = func(x, y int64) int64 { return x | y }
		case "^":
			g = func(x, y int64) int64 { return x ^ y }
		case "<<":
			g = func(x, y int64) int64 {
				if y < 0 || y >= 64 {
					return 0
				}
				return int64(uint64(x) << uint(y))
			}
		default:
			g = func(x, y int64) int64 {
				if y < 0 || y >= 64 {
					return 0
				}
				return int64(uint64(x) >> uint(y))
			}
		}
		f := func(x, y int64) (int64, bool, error) { return g(x, y), true, nil }
		operands := []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int64}
		return binaryKernel(operands, func(tc *TaskContext, a, b arrow.Array) (arrow.Array, error) {
			return binaryRows(newInt64Builder(tc.Alloc), a, b, int64Values(a), int64Values(b), f)
		}), arrow.PrimitiveTypes.Int64, nil
	}
}

func resolveBitNot(types []arrow.DataType) (Kernel, arrow.DataType, error) {
	if err := checkArity("~", types, 1, 1); err != nil {
		return nil, nil, err
	}
	if _, err := arithmeticDomain("~", types); err != nil {
		return nil, nil, err
	}
	return unaryKernel(arrow.PrimitiveTypes.Int64, func(tc *TaskContext, a arrow.Array) (arrow.Array, error) {
		v := int64Values(a)
		return mapValid(newInt64Builder(tc.Alloc), a, func(i int) int64 { return ^v[i] }), nil
	}), arrow.PrimitiveTypes.Int64, nil
}
