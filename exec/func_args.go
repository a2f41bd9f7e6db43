package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/internal/errs"
)

// Shared plumbing of the scalar function library: arity checks, casting arguments to the types
// a kernel computes in, and the numeric "domain" MySQL picks for arithmetic.

// checkArity returns an InvalidInput error unless min <= len(types) <= max (max < 0: no limit).
func checkArity(name string, types []arrow.DataType, min, max int) error {
	n := len(types)
	if n < min || (max >= 0 && n > max) {
		switch {
		case min == max:
			return errs.Invalidf("function %s takes %d arguments, got %d", name, min, n)
		case max < 0:
			return errs.Invalidf("function %s takes at least %d arguments, got %d", name, min, n)
		default:
			return errs.Invalidf("function %s takes %d to %d arguments, got %d", name, min, max, n)
		}
	}
	return nil
}

// castArgs casts args[i] to types[i] (CastArray semantics) and returns the new arrays, which the
// caller releases with releaseArrays.
func castArgs(ctx context.Context, tc *TaskContext, args []arrow.Array, types []arrow.DataType) ([]arrow.Array, error) {
	out := make([]arrow.Array, len(args))
	for i, a := range args {
		c, err := CastArray(ctx, tc, a, types[i])
		if err != nil {
			releaseArrays(out)
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// castAllTo casts every argument to t.
func castAllTo(ctx context.Context, tc *TaskContext, args []arrow.Array, t arrow.DataType) ([]arrow.Array, error) {
	types := make([]arrow.DataType, len(args))
	for i := range types {
		types[i] = t
	}
	return castArgs(ctx, tc, args, types)
}

// numericDomain is the kind of arithmetic MySQL performs for a set of operand types.
type numericDomain int

const (
	domainInt numericDomain = iota
	domainDecimal
	domainFloat
)

// arithmeticDomain picks the arithmetic for operand types: any float or string operand makes it
// floating point, otherwise any decimal makes it decimal, otherwise integer (booleans and NULLs
// count as integers; so do dates and times, as their numbers YYYYMMDD…). Other types are an
// InvalidInput error.
func arithmeticDomain(name string, types []arrow.DataType) (numericDomain, error) {
	d := domainInt
	for _, t := range types {
		switch {
		case isNullType(t), isIntegerType(t), isBoolType(t):
		case isTemporalType(t): // as its number, 20200102 (castTemporal)
		case isFloatType(t), isStringType(t):
			d = domainFloat
		case isDecimalType(t):
			if d != domainFloat {
				d = domainDecimal
			}
		default:
			return 0, errs.Invalidf("operator %s does not apply to values of type %s", name, t)
		}
	}
	return d, nil
}

// operandType is the type an operand is cast to before a kernel of domain d runs.
func operandType(d numericDomain, t arrow.DataType) arrow.DataType {
	switch d {
	case domainFloat:
		return arrow.PrimitiveTypes.Float64
	case domainDecimal:
		if isDecimalType(t) {
			return newDecimalType(decimalOf(t))
		}
		return newDecimalType(decimalOf(t))
	}
	return arrow.PrimitiveTypes.Int64
}

// operandTypes maps operandType over types.
func operandTypes(d numericDomain, types []arrow.DataType) []arrow.DataType {
	out := make([]arrow.DataType, len(types))
	for i, t := range types {
		out[i] = operandType(d, t)
	}
	return out
}

// binaryKernel wraps a computation on two arguments already cast to `operands`.
func binaryKernel(operands []arrow.DataType, f func(tc *TaskContext, a, b arrow.Array) (arrow.Array, error)) Kernel {
	return func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
		cast, err := castArgs(ctx, tc, args, operands)
		if err != nil {
			return nil, err
		}
		defer releaseArrays(cast)
		return f(tc, cast[0], cast[1])
	}
}

// binaryRows applies f to the values of rows where both a and b are non-NULL; other rows are
// NULL. av and bv are the operands' value slices.
func binaryRows[T, R any, B builderOf[R]](bld B, a, b arrow.Array, av, bv []T, f func(x, y T) (R, bool, error)) (arrow.Array, error) {
	noNulls := a.NullN() == 0 && b.NullN() == 0
	return buildRows(bld, a.Len(), func(i int) (R, bool, error) {
		if !noNulls && (a.IsNull(i) || b.IsNull(i)) {
			var zero R
			return zero, false, nil
		}
		return f(av[i], bv[i])
	})
}

// unaryKernel wraps a computation on one argument already cast to operand.
func unaryKernel(operand arrow.DataType, f func(tc *TaskContext, a arrow.Array) (arrow.Array, error)) Kernel {
	return func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
		c, err := CastArray(ctx, tc, args[0], operand)
		if err != nil {
			return nil, err
		}
		defer c.Release()
		return f(tc, c)
	}
}
