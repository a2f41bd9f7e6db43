package exec

import (
	"context"
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/cachedb/cachedb/internal/errs"
)

// CastArray converts a to type `to` with MySQL CAST semantics and returns a new array the caller
// releases (a itself, retained, when it already has that type). NULLs stay NULL.
//
//   - to int64: floats and decimals round half away from zero and clamp to the BIGINT range;
//     strings read their leading integer (0 when there is none); booleans are 0/1.
//   - to float64: strings read their leading number (0 when there is none).
//   - to decimal(p,s): rounds half away from zero to scale s; values too wide for p digits clamp
//     to the largest DECIMAL(p,s), as MySQL's CAST does.
//   - to utf8: MySQL's text forms (decimals keep their scale, doubles print shortest, booleans
//     1/0).
//   - to bool: MySQL truthiness (non-zero is true; strings by their leading number).
//   - to null: all NULL.
//
// Other conversions (temporal types, other integer widths) go through arrow's cast; those it
// cannot do are an InvalidInput error naming both types.
func CastArray(ctx context.Context, tc *TaskContext, a arrow.Array, to arrow.DataType) (arrow.Array, error) {
	from := a.DataType()
	if arrow.TypeEqual(from, to) {
		a.Retain()
		return a, nil
	}
	mem := tc.Alloc
	if isNullType(from) || isNullType(to) {
		return array.MakeArrayOfNull(mem, to, a.Len()), nil
	}
	if !canCast(from, to) {
		return nil, errs.Invalidf("cannot cast %s to %s", from, to)
	}
	// Bring non-canonical sources (int32, float32, large strings …) to a canonical type first.
	if canon := canonicalSource(from); canon != nil && !arrow.TypeEqual(canon, to) {
		c, err := arrowCast(ctx, tc, a, canon)
		if err != nil {
			return nil, err
		}
		defer c.Release()
		return CastArray(ctx, tc, c, to)
	}
	if out, ok, err := castTemporal(ctx, tc, a, to); ok {
		return out, err
	}
	switch to.ID() {
	case arrow.INT64:
		if out := castToInt64(tc, a); out != nil {
			return out, nil
		}
	case arrow.FLOAT64:
		if out := castToFloat64(tc, a); out != nil {
			return out, nil
		}
	case arrow.DECIMAL128:
		if out := castToDecimal(tc, a, to.(*arrow.Decimal128Type)); out != nil {
			return out, nil
		}
	case arrow.STRING:
		if out := castToString(tc, a); out != nil {
			return out, nil
		}
	case arrow.BOOL:
		if out := castToBool(tc, a); out != nil {
			return out, nil
		}
	case arrow.DATE32, arrow.TIMESTAMP, arrow.TIME64:
		if s, ok := a.(*array.String); ok {
			return castTextToTemporal(tc, s, to), nil
		}
	}
	return arrowCast(ctx, tc, a, to)
}

// canCast reports whether CAST from → to is possible at all.
func canCast(from, to arrow.DataType) bool {
	scalarish := func(t arrow.DataType) bool {
		return isNullType(t) || isNumericType(t) || isStringType(t) || isTemporalType(t)
	}
	if !scalarish(from) || !scalarish(to) {
		return false
	}
	// Temporal values convert to and from strings, numbers (castTemporal) and each other.
	return true
}

// canonicalSource returns the canonical type a source type is first widened to, or nil when it
// is already canonical.
func canonicalSource(t arrow.DataType) arrow.DataType {
	switch {
	case isIntegerType(t) && t.ID() != arrow.INT64:
		return arrow.PrimitiveTypes.Int64
	case isFloatType(t) && t.ID() != arrow.FLOAT64:
		return arrow.PrimitiveTypes.Float64
	case isStringType(t) && t.ID() != arrow.STRING:
		return arrow.BinaryTypes.String
	case t.ID() == arrow.DECIMAL256:
		return newDecimalType(maxDecimalPrecision, t.(arrow.DecimalType).GetScale())
	}
	return nil
}

// arrowCast runs arrow's own cast, reporting failures as InvalidInput.
func arrowCast(ctx context.Context, tc *TaskContext, a arrow.Array, to arrow.DataType) (arrow.Array, error) {
	out, err := compute.CastArray(computeCtx(ctx, tc), a, compute.UnsafeCastOptions(to))
	if err != nil {
		return nil, errs.Invalidf("cannot cast %s to %s: %v", a.DataType(), to, err)
	}
	return out, nil
}

func castToInt64(tc *TaskContext, a arrow.Array) arrow.Array {
	b := newInt64Builder(tc.Alloc)
	switch src := a.(type) {
	case *array.Boolean:
		return mapValid(b, a, func(i int) int64 { return boolToInt(src.Value(i)) })
	case *array.Float64:
		v := src.Float64Values()
		return mapValid(b, a, func(i int) int64 { return roundToEvenInt64(v[i]) })
	case *array.Decimal128:
		v, scale := src.Values(), decimalScale(a.DataType())
		return mapValid(b, a, func(i int) int64 { return decimalToInt64(v[i], scale) })
	case *array.String:
		return mapValid(b, a, func(i int) int64 { return parseIntPrefix(src.Value(i)) })
	}
	b.Release()
	return nil
}

func castToFloat64(tc *TaskContext, a arrow.Array) arrow.Array {
	b := newFloat64Builder(tc.Alloc)
	switch src := a.(type) {
	case *array.Boolean:
		return mapValid(b, a, func(i int) float64 { return float64(boolToInt(src.Value(i))) })
	case *array.Int64:
		v := src.Int64Values()
		return mapValid(b, a, func(i int) float64 { return float64(v[i]) })
	case *array.Decimal128:
		v, scale := src.Values(), decimalScale(a.DataType())
		return mapValid(b, a, func(i int) float64 { return decimalToFloat64(v[i], scale) })
	case *array.String:
		return mapValid(b, a, func(i int) float64 { return parseFloatPrefix(src.Value(i)) })
	}
	b.Release()
	return nil
}

func castToDecimal(tc *TaskContext, a arrow.Array, to *arrow.Decimal128Type) arrow.Array {
	if out, ok := castToDecimalInt64(tc, a, to); ok {
		return out
	}
	p, s := to.Precision, to.Scale
	b := newDecimalBuilder(tc.Alloc, to)
	// fit clamps a converted value; ok=false means it overflowed in the sign of neg.
	fit := func(n decimal128.Num, ok bool, negative bool) decimal128.Num {
		if !ok {
			m := maxDecimalOf(p)
			if negative {
				return m.Negate()
			}
			return m
		}
		return clampDecimal(n, p)
	}
	switch src := a.(type) {
	case *array.Boolean:
		return mapValid(b, a, func(i int) decimal128.Num {
			n, ok := int64ToDecimal(boolToInt(src.Value(i)), s)
			return fit(n, ok, false)
		})
	case *array.Int64:
		v := src.Int64Values()
		return mapValid(b, a, func(i int) decimal128.Num {
			n, ok := int64ToDecimal(v[i], s)
			return fit(n, ok, v[i] < 0)
		})
	case *array.Float64:
		v := src.Float64Values()
		return mapValid(b, a, func(i int) decimal128.Num {
			n, ok := floatToDecimal(v[i], p, s)
			return fit(n, ok, v[i] < 0)
		})
	case *array.Decimal128:
		v, from := src.Values(), decimalScale(a.DataType())
		return mapValid(b, a, func(i int) decimal128.Num {
			n, ok := rescaleDecimal(v[i], from, s)
			return fit(n, ok, v[i].Sign() < 0)
		})
	case *array.String:
		return mapValid(b, a, func(i int) decimal128.Num {
			str := src.Value(i)
			n, ok := parseDecimalText(str, p, s)
			return fit(n, ok, parseFloatPrefix(str) < 0)
		})
	}
	b.Release()
	return nil
}

func castToString(tc *TaskContext, a arrow.Array) arrow.Array {
	b := newStringBuilder(tc.Alloc)
	switch src := a.(type) {
	case *array.Boolean:
		return mapValid(b, a, func(i int) string { return strconv.FormatInt(boolToInt(src.Value(i)), 10) })
	case *array.Int64:
		v := src.Int64Values()
		return mapValid(b, a, func(i int) string { return strconv.FormatInt(v[i], 10) })
	case *array.Float64:
		v := src.Float64Values()
		return mapValid(b, a, func(i int) string { return formatFloat(v[i]) })
	case *array.Decimal128:
		v, scale := src.Values(), decimalScale(a.DataType())
		return mapValid(b, a, func(i int) string { return v[i].ToString(scale) })
	}
	if format, ok := temporalFormatter(a); ok {
		return mapValid(b, a, format)
	}
	b.Release()
	return nil
}

func castToBool(tc *TaskContext, a arrow.Array) arrow.Array {
	b := newBoolBuilder(tc.Alloc)
	switch src := a.(type) {
	case *array.Int64:
		v := src.Int64Values()
		return mapValid(b, a, func(i int) bool { return v[i] != 0 })
	case *array.Float64:
		v := src.Float64Values()
		return mapValid(b, a, func(i int) bool { return v[i] != 0 && !math.IsNaN(v[i]) })
	case *array.Decimal128:
		v := src.Values()
		return mapValid(b, a, func(i int) bool { return v[i].Sign() != 0 })
	case *array.String:
		return mapValid(b, a, func(i int) bool { return parseFloatPrefix(src.Value(i)) != 0 })
	}
	b.Release()
	return nil
}

func boolToInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// decimalScale returns the scale of a decimal type.
func decimalScale(t arrow.DataType) int32 { return t.(arrow.DecimalType).GetScale() }
