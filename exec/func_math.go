package exec

import (
	"context"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
)

// Floating-point math functions: the argument is converted to DOUBLE, the result is DOUBLE, and
// values outside a function's domain (SQRT(-1), LN(0), …) are NULL as in MySQL.

func init() {
	floatFuncs := map[string]func(float64) (float64, bool){
		"sqrt":  func(x float64) (float64, bool) { return math.Sqrt(x), x >= 0 },
		"exp":   func(x float64) (float64, bool) { return math.Exp(x), true },
		"ln":    func(x float64) (float64, bool) { return math.Log(x), x > 0 },
		"log10": func(x float64) (float64, bool) { return math.Log10(x), x > 0 },
		"log2":  func(x float64) (float64, bool) { return math.Log2(x), x > 0 },
		"sin":   func(x float64) (float64, bool) { return math.Sin(x), true },
		"cos":   func(x float64) (float64, bool) { return math.Cos(x), true },
		"tan":   func(x float64) (float64, bool) { return math.Tan(x), true },
	}
	for name, f := range floatFuncs {
		RegisterScalar(name, resolveFloatFunc(name, 1, func(x []float64) (float64, bool) { return f(x[0]) }))
	}
	RegisterScalar("log", resolveLog)
	power := func(x []float64) (float64, bool) { return math.Pow(x[0], x[1]), true }
	RegisterScalar("power", resolveFloatFunc("power", 2, power))
	RegisterScalar("pow", resolveFloatFunc("pow", 2, power))
	RegisterScalar("pi", resolvePi)
}

// resolveFloatFunc registers a DOUBLE function of arity args; f returns ok=false for NULL. An
// infinite result from finite arguments is the InvalidInput error MySQL raises.
func resolveFloatFunc(name string, arity int, f func(x []float64) (float64, bool)) ScalarResolver {
	return func(types []arrow.DataType) (Kernel, arrow.DataType, error) {
		if err := checkArity(name, types, arity, arity); err != nil {
			return nil, nil, err
		}
		if _, err := arithmeticDomain(name, types); err != nil {
			return nil, nil, err
		}
		k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
			cast, err := castAllTo(ctx, tc, args, arrow.PrimitiveTypes.Float64)
			if err != nil {
				return nil, err
			}
			defer releaseArrays(cast)
			vals := make([][]float64, len(cast))
			for j, c := range cast {
				vals[j] = float64Values(c)
			}
			x := make([]float64, len(cast))
			return buildRows(newFloat64Builder(tc.Alloc), n, func(i int) (float64, bool, error) {
				if !allValid(cast, i) {
					return 0, false, nil
				}
				for j := range vals {
					x[j] = vals[j][i]
				}
				r, ok := f(x)
				if !ok || math.IsNaN(r) {
					return 0, false, nil
				}
				if math.IsInf(r, 0) {
					return 0, false, errs.Invalidf("DOUBLE value is out of range in '%s(%v)'", name, x)
				}
				return r, true, nil
			})
		}
		return k, arrow.PrimitiveTypes.Float64, nil
	}
}

// resolveLog: LOG(x) is the natural logarithm, LOG(b, x) the logarithm of x in base b.
func resolveLog(types []arrow.DataType) (Kernel, arrow.DataType, error) {
	if len(types) == 1 {
		return resolveFloatFunc("log", 1, func(x []float64) (float64, bool) { return math.Log(x[0]), x[0] > 0 })(types)
	}
	return resolveFloatFunc("log", 2, func(x []float64) (float64, bool) {
		b, v := x[0], x[1]
		return math.Log(v) / math.Log(b), b > 0 && b != 1 && v > 0
	})(types)
}

func resolvePi(types []arrow.DataType) (Kernel, arrow.DataType, error) {
	if err := checkArity("pi", types, 0, 0); err != nil {
		return nil, nil, err
	}
	k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
		b := newFloat64Builder(tc.Alloc)
		defer b.Release()
		b.Reserve(n)
		for i := 0; i < n; i++ {
			b.UnsafeAppend(math.Pi)
		}
		return b.NewArray(), nil
	}
	return k, arrow.PrimitiveTypes.Float64, nil
}

// int64Arg returns the values of an argument cast to BIGINT, or nil when it is absent.
func int64Arg(ctx context.Context, tc *TaskContext, args []arrow.Array, i int) (*array.Int64, error) {
	if i >= len(args) {
		return nil, nil
	}
	c, err := CastArray(ctx, tc, args[i], arrow.PrimitiveTypes.Int64)
	if err != nil {
		return nil, err
	}
	return c.(*array.Int64), nil
}
