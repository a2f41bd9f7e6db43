package exec

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/internal/errs"
)

// Type predicates and MySQL type aggregation over the engine's canonical Arrow types
// (docs/architecture.md): int64, float64, decimal128(p,s), utf8, bool, null, date32,
// timestamp[us]. Other integer and float widths are treated like their canonical type.

// maxDecimalPrecision is the widest DECIMAL the engine computes with (decimal128).
const maxDecimalPrecision = 38

// int64DecimalDigits is the number of decimal digits a BIGINT needs, used when an int64 takes
// part in DECIMAL arithmetic or aggregation.
const int64DecimalDigits = 19

func isNullType(t arrow.DataType) bool { return t == nil || t.ID() == arrow.NULL }

func isBoolType(t arrow.DataType) bool { return t != nil && t.ID() == arrow.BOOL }

func isIntegerType(t arrow.DataType) bool {
	if t == nil {
		return false
	}
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

func isFloatType(t arrow.DataType) bool {
	if t == nil {
		return false
	}
	switch t.ID() {
	case arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64:
		return true
	}
	return false
}

func isDecimalType(t arrow.DataType) bool {
	return t != nil && (t.ID() == arrow.DECIMAL128 || t.ID() == arrow.DECIMAL256)
}

func isStringType(t arrow.DataType) bool {
	if t == nil {
		return false
	}
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		return true
	}
	return false
}

func isTemporalType(t arrow.DataType) bool {
	if t == nil {
		return false
	}
	switch t.ID() {
	case arrow.DATE32, arrow.DATE64, arrow.TIMESTAMP, arrow.TIME64:
		return true
	}
	return false
}

// isNumericType reports whether t is a number to MySQL: integers, floats, decimals and booleans.
func isNumericType(t arrow.DataType) bool {
	return isIntegerType(t) || isFloatType(t) || isDecimalType(t) || isBoolType(t)
}

// isExactType reports whether t is an exact number (integer, boolean or decimal).
func isExactType(t arrow.DataType) bool {
	return isIntegerType(t) || isDecimalType(t) || isBoolType(t)
}

// decimalOf returns the precision and scale t has when it takes part in DECIMAL arithmetic: a
// decimal's own, (19,0) for integers and (1,0) for booleans.
func decimalOf(t arrow.DataType) (precision, scale int32) {
	switch {
	case isDecimalType(t):
		d := t.(arrow.DecimalType)
		return d.GetPrecision(), d.GetScale()
	case isBoolType(t):
		return 1, 0
	default:
		return int64DecimalDigits, 0
	}
}

// newDecimalType builds decimal128(precision, scale), capping the precision at 38 and keeping it
// at least scale (and at least 1).
func newDecimalType(precision, scale int32) *arrow.Decimal128Type {
	if scale > maxDecimalPrecision {
		scale = maxDecimalPrecision
	}
	if scale < 0 {
		scale = 0
	}
	if precision > maxDecimalPrecision {
		precision = maxDecimalPrecision
	}
	if precision < scale {
		precision = scale
	}
	if precision < 1 {
		precision = 1
	}
	return &arrow.Decimal128Type{Precision: precision, Scale: scale}
}

// CommonType aggregates the types of the branches of CASE, COALESCE, IF, IFNULL, UNION,
// GREATEST, … the way MySQL does: NULL is absorbed; any string makes a string; otherwise any
// float makes float64; otherwise any decimal makes a decimal wide enough for the widest integer
// part and the widest scale of all branches; otherwise integers (and booleans mixed with them)
// make int64. All booleans stay bool, all NULLs stay null. Temporal types agree with themselves
// (date mixed with timestamp is timestamp) and with strings (string); temporal mixed with a number
// is a string, as MySQL does. It returns an InvalidInput error for types the engine cannot
// aggregate (lists, structs, …).
func CommonType(types ...arrow.DataType) (arrow.DataType, error) {
	var (
		anyString, anyFloat, anyDecimal, anyInt, anyBool, anyTemporal bool
		intDigits, scale                                              int32
		temporal                                                      arrow.DataType
	)
	for _, t := range types {
		switch {
		case isNullType(t):
		case isStringType(t):
			anyString = true
		case isFloatType(t):
			anyFloat = true
		case isDecimalType(t):
			anyDecimal = true
			p, s := decimalOf(t)
			intDigits = max(intDigits, p-s)
			scale = max(scale, s)
		case isIntegerType(t):
			anyInt = true
			intDigits = max(intDigits, int64DecimalDigits)
		case isBoolType(t):
			anyBool = true
			intDigits = max(intDigits, 1)
		case isTemporalType(t):
			anyTemporal = true
			if temporal == nil || t.ID() == arrow.TIMESTAMP {
				temporal = t
			}
		default:
			return nil, errs.Invalidf("cannot combine values of type %s with other values", t)
		}
	}
	numeric := anyFloat || anyDecimal || anyInt || anyBool
	switch {
	case anyString || (anyTemporal && numeric):
		return arrow.BinaryTypes.String, nil
	case anyTemporal:
		return temporal, nil
	case anyFloat:
		return arrow.PrimitiveTypes.Float64, nil
	case anyDecimal:
		return newDecimalType(intDigits+scale, scale), nil
	case anyInt:
		return arrow.PrimitiveTypes.Int64, nil
	case anyBool:
		return arrow.FixedWidthTypes.Boolean, nil
	}
	return arrow.Null, nil
}
