package exec

import (
	"cmp"
	"context"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
)

// Comparison operators. Operands are first brought to one comparison type the way MySQL does
// (comparisonType), then compared with a typed loop; the result is BOOLEAN, NULL when an operand
// is NULL (except for the NULL-safe "<=>").

func init() {
	for _, op := range []string{"=", "<>", "!=", "<", "<=", ">", ">=", "<=>"} {
		RegisterScalar(op, resolveComparison(op))
	}
}

// comparisonType is the type MySQL compares values of the given types in: strings with strings
// as strings (binary); exact numbers with exact numbers as int64 or, when a decimal is involved,
// as a decimal wide enough for all; temporal values with temporal values or strings as the
// temporal type, and with numbers as float64; booleans with booleans as bool; every other
// numeric mix (floats, numbers with strings) as float64. Exact values too wide for one
// decimal128 (DECIMAL(38,2) with DECIMAL(10,6): 36 integer digits and 6 decimals) compare
// exactly as a decimal256 of the widest scale, never through a lossy type. NULL types are
// ignored; all NULL gives arrow.Null.
func comparisonType(name string, types []arrow.DataType) (arrow.DataType, error) {
	var nonNull []arrow.DataType
	allString, allExact, allBool, anyTemporal, allTemporalOrString := true, true, true, false, true
	for _, t := range types {
		if isNullType(t) {
			continue
		}
		nonNull = append(nonNull, t)
		if !isNumericType(t) && !isStringType(t) && !isTemporalType(t) {
			return nil, errs.Invalidf("%s cannot compare values of type %s", name, t)
		}
		allString = allString && isStringType(t)
		allExact = allExact && isExactType(t)
		allBool = allBool && isBoolType(t)
		anyTemporal = anyTemporal || isTemporalType(t)
		allTemporalOrString = allTemporalOrString && (isTemporalType(t) || isStringType(t))
	}
	switch {
	case len(nonNull) == 0:
		return arrow.Null, nil
	case allString:
		return arrow.BinaryTypes.String, nil
	case anyTemporal && allTemporalOrString:
		var temporal []arrow.DataType
		for _, t := range nonNull {
			if isTemporalType(t) {
				temporal = append(temporal, t)
			}
		}
		// MySQL compares a DATE with text as DATETIMEs: '2020-01-02 10:00' is after
		// DATE '2020-01-02', not equal to it.
		if len(temporal) < len(nonNull) {
			if t, err := CommonType(temporal...); err != nil || t.ID() != arrow.DATE32 {
				return t, err
			}
			return dateTimeType, nil
		}
		return CommonType(temporal...)
	case anyTemporal:
		// MySQL compares a date or time with a number as numbers (DATE '2020-01-02' is
		// 20200102, castTemporal).
		return arrow.PrimitiveTypes.Float64, nil
	case allBool:
		return arrow.FixedWidthTypes.Boolean, nil
	case allExact && decimalWidth(nonNull) <= maxDecimalPrecision:
		return CommonType(nonNull...)
	case allExact:
		var scale int32
		for _, t := range nonNull {
			_, s := decimalOf(t)
			scale = max(scale, s)
		}
		return &arrow.Decimal256Type{Precision: 76, Scale: scale}, nil
	}
	return arrow.PrimitiveTypes.Float64, nil
}

// decimalWidth is the number of digits a DECIMAL holding every one of types exactly needs (the
// widest integer part plus the widest scale): at most 38 + 38, which a decimal256 holds.
func decimalWidth(types []arrow.DataType) int32 {
	var intDigits, scale int32
	for _, t := range types {
		p, s := decimalOf(t)
		intDigits, scale = max(intDigits, p-s), max(scale, s)
	}
	return intDigits + scale
}

// makeComparer returns a three-way comparison of a[i] with b[j]; a and b have the same
// canonical type (int64, float64, decimal128 or decimal256 with one scale, utf8, bool, date32, timestamp,
// time64).
func makeComparer(a, b arrow.Array) (func(i, j int) int, error) {
	switch x := a.(type) {
	case *array.Int64:
		av, bv := x.Int64Values(), int64Values(b)
		return func(i, j int) int { return cmp.Compare(av[i], bv[j]) }, nil
	case *array.Float64:
		av, bv := x.Float64Values(), float64Values(b)
		return func(i, j int) int { return cmp.Compare(av[i], bv[j]) }, nil
	case *array.Decimal128:
		av, bv := x.Values(), decimalValues(b)
		return func(i, j int) int { return av[i].Cmp(bv[j]) }, nil
	case *array.Decimal256:
		av, bv := x.Values(), b.(*array.Decimal256).Values()
		return func(i, j int) int { return av[i].Cmp(bv[j]) }, nil
	case *array.String:
		bv := b.(*array.String)
		return func(i, j int) int { return strings.Compare(x.Value(i), bv.Value(j)) }, nil
	case *array.Boolean:
		bv := b.(*array.Boolean)
		return func(i, j int) int { return cmp.Compare(boolToInt(x.Value(i)), boolToInt(bv.Value(j))) }, nil
	case *array.Date32:
		av, bv := x.Date32Values(), b.(*array.Date32).Date32Values()
		return func(i, j int) int { return cmp.Compare(av[i], bv[j]) }, nil
	case *array.Timestamp:
		av, bv := x.TimestampValues(), b.(*array.Timestamp).TimestampValues()
		return func(i, j int) int { return cmp.Compare(av[i], bv[j]) }, nil
	case *array.Time64:
		av, bv := x.Time64Values(), b.(*array.Time64).Time64Values()
		return func(i, j int) int { return cmp.Compare(av[i], bv[j]) }, nil
	}
	return nil, errs.Internalf("values of type %s cannot be compared", a.DataType())
}

// comparisonOutcome maps a three-way comparison result (-1, 0, 1) to the operator's truth value.
func comparisonOutcome(op string) [3]bool {
	switch op {
	case "=", "<=>":
		return [3]bool{false, true, false}
	case "<>", "!=":
		return [3]bool{true, false, true}
	case "<":
		return [3]bool{true, false, false}
	case "<=":
		return [3]bool{true, true, false}
	case ">":
		return [3]bool{false, false, true}
	}
	return [3]bool{false, true, true} // >=
}

func resolveComparison(op string) ScalarResolver {
	return func(types []arrow.DataType) (Kernel, arrow.DataType, error) {
		if err := checkArity(op, types, 2, 2); err != nil {
			return nil, nil, err
		}
		t, err := comparisonType(op, types)
		if err != nil {
			return nil, nil, err
		}
		want := comparisonOutcome(op)
		nullSafe := op == "<=>"
		k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
			cast, err := castAllTo(ctx, tc, args, t)
			if err != nil {
				return nil, err
			}
			defer releaseArrays(cast)
			zeroA, zeroB := zeroDates(args[0], cast[0]), zeroDates(args[1], cast[1])
			return compareArrays(tc, cast[0], cast[1], zeroA, zeroB, want, nullSafe)
		}
		return k, arrow.FixedWidthTypes.Boolean, nil
	}
}

// compareArrays compares a and b (same type) row by row; zeroA and zeroB (nil: none) mark the
// rows of a and b that hold the zero date (zeroDates), NULL in a and b. With nullSafe, NULL
// equals NULL and differs from any value (the result has no NULLs); otherwise a NULL operand
// gives NULL.
func compareArrays(tc *TaskContext, a, b arrow.Array, zeroA, zeroB []bool, want [3]bool, nullSafe bool) (arrow.Array, error) {
	n := a.Len()
	if isNullType(a.DataType()) {
		if !nullSafe {
			return array.MakeArrayOfNull(tc.Alloc, arrow.FixedWidthTypes.Boolean, n), nil
		}
		return buildRows(newBoolBuilder(tc.Alloc), n, func(i int) (bool, bool, error) { return want[1], true, nil })
	}
	if !nullSafe && zeroA == nil && zeroB == nil {
		if out := compareColumnsFast(tc.Alloc, a, b, want); out != nil {
			return out, nil
		}
	}
	c, err := makeComparer(a, b)
	if err != nil {
		return nil, err
	}
	c = zeroAware(c, zeroA, zeroB)
	noNulls := a.NullN() == 0 && b.NullN() == 0
	return buildRows(newBoolBuilder(tc.Alloc), n, func(i int) (bool, bool, error) {
		if !noNulls {
			an, bn := nullNotZero(a, zeroA, i), nullNotZero(b, zeroB, i)
			if an || bn {
				if nullSafe {
					return an == bn, true, nil
				}
				return false, false, nil
			}
		}
		return want[c(i, i)+1], true, nil
	})
}

// zeroDates marks the rows where arg, a string compared as a date or date-time, holds text that
// is no valid one (cast is NULL where arg is not): MySQL compares such text as the zero date
// 0000-00-00 (with a warning), before every valid date and equal to other such text, where a
// CAST would give NULL. So `d <> 'A'` is true and `d < ”` false for every date d. nil when
// there is no such row.
func zeroDates(arg, cast arrow.Array) []bool {
	if !isStringType(arg.DataType()) || cast.NullN() == arg.NullN() {
		return nil
	}
	switch cast.DataType().ID() {
	case arrow.DATE32, arrow.TIMESTAMP:
	default:
		return nil
	}
	var zero []bool
	for i := range arg.Len() {
		if cast.IsNull(i) && !arg.IsNull(i) {
			if zero == nil {
				zero = make([]bool, arg.Len())
			}
			zero[i] = true
		}
	}
	return zero
}

// zeroAware wraps c, a comparer of a's rows with b's, so that a zero date (zeroDates; za and
// zb mark a's and b's, nil for none) compares before every date and equal to another.
func zeroAware(c func(i, j int) int, za, zb []bool) func(i, j int) int {
	if za == nil && zb == nil {
		return c
	}
	return func(i, j int) int {
		a, b := marked(za, i), marked(zb, j)
		switch {
		case a && b:
			return 0
		case a:
			return -1
		case b:
			return 1
		}
		return c(i, j)
	}
}

// marked reports whether row i is marked in m (nil marks none).
func marked(m []bool, i int) bool { return m != nil && m[i] }

// nullNotZero reports whether row i of a (cast from text) is NULL, a zero date (marked in
// zero) being a value.
func nullNotZero(a arrow.Array, zero []bool, i int) bool { return a.IsNull(i) && !marked(zero, i) }
