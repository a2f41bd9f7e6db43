package exec

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/internal/errs"
)

// aggMaxScale caps the scale of AVG over decimals (MySQL's own cap is 30).
const aggMaxScale = 30

// aggregateDef is a resolved aggregate function: its result type, the types of its intermediate
// state columns (what Partial mode outputs and Final mode reads), and a constructor of fresh
// accumulators.
type aggregateDef struct {
	result arrow.DataType
	states []arrow.DataType
	newAcc func() aggAccumulator
}

// ResolveAggregate returns the result type of the aggregate function name (case-insensitive) for
// the given argument types, following MySQL 8:
//
//	count            → int64 (COUNT(*) has no arguments; never NULL, 0 for no rows)
//	sum              → decimal128(38,0) over integers and booleans, decimal128(38,s) over
//	                   decimal(p,s), float64 over floats and strings
//	avg              → decimal128(23,4) over integers and booleans, decimal128(p+4,s+4) over
//	                   decimal(p,s) (precision capped at 38, scale at 30), float64 over floats
//	                   and strings
//	min, max         → the argument type
//	any_value        → the argument type (the first non-NULL value the group saw)
//	group_concat     → string (the arguments of a row concatenated, rows joined by ",")
//	bit_and/or/xor   → int64 (integers and booleans only)
//
// Every aggregate but count and the bit functions is NULL for a group with no non-NULL input;
// bit_and then gives -1 (all bits set) and bit_or/bit_xor 0, as MySQL does. It returns an
// errs.InvalidInput error for a wrong arity, an errs.NotFound error for an unknown function and
// errs.Unsupported for argument types it cannot aggregate.
func ResolveAggregate(name string, argTypes []arrow.DataType, distinct bool) (arrow.DataType, error) {
	def, err := resolveAggregateDef(name, argTypes, distinct)
	if err != nil {
		return nil, err
	}
	return def.result, nil
}

// IsAggregateFunction reports whether name (case-insensitive) is an aggregate function.
func IsAggregateFunction(name string) bool {
	switch strings.ToLower(name) {
	case "count", "sum", "avg", "min", "max", "any_value", "group_concat", "bit_and", "bit_or", "bit_xor":
		return true
	}
	return false
}

// resolveAggregateDef resolves an aggregate call to its definition.
func resolveAggregateDef(name string, argTypes []arrow.DataType, distinct bool) (*aggregateDef, error) {
	fn := strings.ToLower(name)
	if !IsAggregateFunction(fn) {
		return nil, errs.NotFoundf("aggregate function %s does not exist", name)
	}
	switch fn {
	case "count":
		if len(argTypes) == 0 && distinct {
			return nil, errs.Invalidf("COUNT(DISTINCT *) is not valid")
		}
		if len(argTypes) > 1 && !distinct {
			return nil, errs.Invalidf("COUNT with %d arguments needs DISTINCT", len(argTypes))
		}
		return withDistinct(aggCountDef(len(argTypes) == 0), distinct), nil
	case "group_concat":
		if len(argTypes) == 0 {
			return nil, errs.Invalidf("GROUP_CONCAT needs at least one argument")
		}
		for _, t := range argTypes {
			if !aggCanFormat(t) {
				return nil, errs.Unsupportedf("GROUP_CONCAT over %s is not supported", t)
			}
		}
		return withDistinct(aggGroupConcatDef(argTypes), distinct), nil
	}
	if len(argTypes) != 1 {
		return nil, errs.Invalidf("%s takes exactly one argument, got %d", strings.ToUpper(fn), len(argTypes))
	}
	var def *aggregateDef
	var err error
	switch fn {
	case "sum":
		def, err = aggSumDef(argTypes[0])
	case "avg":
		def, err = aggAvgDef(argTypes[0])
	case "min", "max", "any_value":
		def, err = aggPickDef(fn, argTypes[0])
	default: // bit_and, bit_or, bit_xor
		def, err = aggBitDef(fn, argTypes[0])
	}
	if err != nil {
		return nil, err
	}
	return withDistinct(def, distinct), nil
}

// withDistinct wraps def so that its accumulators see each distinct argument tuple of a group
// once. The wrapped definition has no usable state layout: DISTINCT runs in a single stage.
func withDistinct(def *aggregateDef, distinct bool) *aggregateDef {
	if !distinct {
		return def
	}
	inner := def.newAcc
	return &aggregateDef{
		result: def.result,
		states: nil,
		newAcc: func() aggAccumulator { return newAggDistinct(inner()) },
	}
}

// aggArgKind classifies an argument type for SUM / AVG.
type aggArgKind int

const (
	aggArgInt aggArgKind = iota // int64, bool, NULL: exact integers
	aggArgDecimal
	aggArgFloat // float64, and strings converted to float64
)

// aggNumericKind classifies t for SUM / AVG, or reports that it cannot be summed.
func aggNumericKind(fn string, t arrow.DataType) (aggArgKind, error) {
	switch t.ID() {
	case arrow.INT64, arrow.BOOL, arrow.NULL:
		return aggArgInt, nil
	case arrow.DECIMAL128:
		return aggArgDecimal, nil
	case arrow.FLOAT64, arrow.STRING:
		return aggArgFloat, nil
	}
	return 0, errs.Unsupportedf("%s over %s is not supported", strings.ToUpper(fn), t)
}
