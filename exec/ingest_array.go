package exec

import (
	"context"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/internal/errs"
)

// Columns that clients send to be stored (Flight SQL bulk ingest: ADBC, pandas, polars) arrive
// in whatever Arrow types the client chose. IngestType and IngestArray bring them to the
// canonical types the engine computes with (docs/architecture.md), exactly: a value either
// converts without loss or fails the column, so that what a table holds is what was sent.

// IngestType is the canonical type a client column of type t is stored as:
//
//	int8 … int64, uint8 … uint64                 → int64
//	float16, float32, float64                    → float64
//	decimal32/64/128/256 (precision ≤ 38)        → decimal128 of the same precision and scale
//	utf8, large_utf8, utf8_view                  → utf8
//	date32, date64                               → date32
//	timestamp[any unit]                          → timestamp[us]; with any zone, timestamp[us, UTC] (same instants)
//	time32, time64, duration                     → time64[us] (MySQL TIME, a signed duration)
//	bool, null                                   → themselves
//	dictionary<…, V>, extension over V           → the type of V
//
// Any other type (binary, lists, structs, maps, intervals, …) is an errs.Unsupported error that
// names the column.
func IngestType(column string, t arrow.DataType) (arrow.DataType, error) {
	switch t.ID() {
	case arrow.NULL, arrow.BOOL, arrow.INT64, arrow.FLOAT64, arrow.STRING, arrow.DATE32:
		return t, nil
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return arrow.PrimitiveTypes.Int64, nil
	case arrow.FLOAT16, arrow.FLOAT32:
		return arrow.PrimitiveTypes.Float64, nil
	case arrow.DECIMAL32, arrow.DECIMAL64, arrow.DECIMAL128, arrow.DECIMAL256:
		d := t.(arrow.DecimalType)
		if d.GetPrecision() > maxDecimalPrecision || d.GetScale() < 0 {
			return nil, errs.Unsupportedf("column '%s' is %s: decimals are stored with at most %d digits and a scale of 0 or more", column, t, maxDecimalPrecision)
		}
		return &arrow.Decimal128Type{Precision: d.GetPrecision(), Scale: d.GetScale()}, nil
	case arrow.LARGE_STRING, arrow.STRING_VIEW:
		return arrow.BinaryTypes.String, nil
	case arrow.DATE64:
		return arrow.FixedWidthTypes.Date32, nil
	case arrow.TIMESTAMP:
		if t.(*arrow.TimestampType).TimeZone == "" {
			return dateTimeType, nil
		}
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, nil
	case arrow.TIME32, arrow.TIME64, arrow.DURATION:
		return timeType, nil
	case arrow.DICTIONARY:
		return IngestType(column, t.(*arrow.DictionaryType).ValueType)
	case arrow.EXTENSION:
		return IngestType(column, t.(arrow.ExtensionType).StorageType())
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW, arrow.FIXED_SIZE_BINARY:
		return nil, errs.Unsupportedf("column '%s' is %s: cachedb stores text as UTF-8 strings, not bytes; send it as a string column", column, t)
	}
	return nil, errs.Unsupportedf("column '%s' is %s, which cachedb cannot store (it stores integers, floats, decimals, strings, booleans, dates, timestamps and times)", column, t)
}

// IngestArray validates column a as it came from a client and converts it to IngestType(a's
// type), returning an array the caller releases (a itself, retained, when it is canonical
// already). firstRow is the 1-based number of a's first row in the whole ingest, for messages.
//
// Malformed Arrow data (offsets or lengths out of bounds, dictionary indices past the
// dictionary) and strings that are not UTF-8 are errs.InvalidInput errors: what is stored is
// read by every later query. A value the canonical type cannot hold — a uint64 above the BIGINT
// range, a timestamp beyond int64 microseconds, a duration or time outside
// ±838:59:59.999999 — fails with MySQL's "Out of range value for column 'c' at row N".
// Nanoseconds round to the nearest microsecond, halves up, as MySQL rounds fractional seconds.
func IngestArray(ctx context.Context, tc *TaskContext, a arrow.Array, column string, firstRow int64) (arrow.Array, error) {
	to, err := IngestType(column, a.DataType())
	if err != nil {
		return nil, err
	}
	if err := validateIngested(a, column, firstRow); err != nil {
		return nil, err
	}
	return ingestConvert(ctx, tc, a, to, column, firstRow)
}

// ValidateIngested makes IngestArray's checks of column a without converting it: for a column a
// dataset holds in the type it was sent in (narrow integers and float32, which scans widen).
func ValidateIngested(a arrow.Array, column string, firstRow int64) error {
	return validateIngested(a, column, firstRow)
}

// validateIngested checks a's buffers and strings before anything reads its values: arrow-go's
// IPC reader does not check that a batch's buffers are as long as its lengths claim.
func validateIngested(a arrow.Array, column string, firstRow int64) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = errs.Invalidf("column '%s': its Arrow data is malformed (%v)", column, p)
		}
	}()
	if err := array.ValidateFull(a); err != nil {
		if row, bad, found := firstInvalidUTF8(a); found {
			return errs.CheckUTF8(bad, fmt.Sprintf("column '%s' at row %d", column, firstRow+int64(row)))
		}
		return errs.Invalidf("column '%s': its Arrow data is malformed (%v)", column, err)
	}
	return nil
}

// firstInvalidUTF8 finds the first string of a that is not UTF-8, for the message MySQL gives.
// found is false when a holds no strings, all are UTF-8, or its buffers are out of bounds.
func firstInvalidUTF8(a arrow.Array) (row int, bad string, found bool) {
	defer func() {
		if recover() != nil {
			row, bad, found = 0, "", false
		}
	}()
	s, ok := a.(interface{ Value(int) string })
	if !ok {
		return 0, "", false
	}
	for i := 0; i < a.Len(); i++ {
		if a.IsValid(i) && !utf8.ValidString(s.Value(i)) {
			return i, s.Value(i), true
		}
	}
	return 0, "", false
}

// ingestConvert converts a (validated) to its canonical type to.
func ingestConvert(ctx context.Context, tc *TaskContext, a arrow.Array, to arrow.DataType, column string, firstRow int64) (arrow.Array, error) {
	if arrow.TypeEqual(a.DataType(), to) {
		a.Retain()
		return a, nil
	}
	mem := tc.Alloc
	switch src := a.(type) {
	case *array.Dictionary:
		decoded, err := compute.TakeArray(computeCtx(ctx, tc), src.Dictionary(), src.Indices())
		if err != nil {
			return nil, errs.Invalidf("column '%s': decoding its dictionary: %v", column, err)
		}
		defer decoded.Release()
		return ingestConvert(ctx, tc, decoded, to, column, firstRow)
	case array.ExtensionArray:
		return ingestConvert(ctx, tc, src.Storage(), to, column, firstRow)
	case *array.Uint64:
		v := src.Uint64Values()
		return buildRows(newInt64Builder(mem), a.Len(), func(i int) (int64, bool, error) {
			if src.IsNull(i) {
				return 0, false, nil
			}
			if v[i] > math.MaxInt64 {
				return 0, false, outOfRange(column, firstRow+int64(i))
			}
			return int64(v[i]), true, nil
		})
	case *array.Decimal32: // arrow's cast has no kernel for the narrow decimals
		v := src.Values()
		return buildRows(newDecimalBuilder(mem, to), a.Len(), func(i int) (decimal128.Num, bool, error) {
			return decimal128.FromI64(int64(v[i])), src.IsValid(i), nil
		})
	case *array.Decimal64:
		v := src.Values()
		return buildRows(newDecimalBuilder(mem, to), a.Len(), func(i int) (decimal128.Num, bool, error) {
			return decimal128.FromI64(int64(v[i])), src.IsValid(i), nil
		})
	case *array.Date64:
		v := src.Date64Values()
		return buildRows(array.NewDate32Builder(mem), a.Len(), func(i int) (arrow.Date32, bool, error) {
			if src.IsNull(i) {
				return 0, false, nil
			}
			days := floorDiv(int64(v[i]), usPerDay/1000)
			if days < math.MinInt32 || days > math.MaxInt32 {
				return 0, false, outOfRange(column, firstRow+int64(i))
			}
			return arrow.Date32(days), true, nil
		})
	case *array.Timestamp:
		unit := src.DataType().(*arrow.TimestampType).Unit
		v := src.TimestampValues()
		return buildRows(array.NewTimestampBuilder(mem, to.(*arrow.TimestampType)), a.Len(), func(i int) (arrow.Timestamp, bool, error) {
			if src.IsNull(i) {
				return 0, false, nil
			}
			us, ok := toMicros(int64(v[i]), unit)
			if !ok {
				return 0, false, outOfRange(column, firstRow+int64(i))
			}
			return arrow.Timestamp(us), true, nil
		})
	case *array.Time32:
		unit := src.DataType().(*arrow.Time32Type).Unit
		v := src.Time32Values()
		return ingestTime(mem, src, func(i int) int64 { return int64(v[i]) }, unit, column, firstRow)
	case *array.Time64:
		unit := src.DataType().(*arrow.Time64Type).Unit
		v := src.Time64Values()
		return ingestTime(mem, src, func(i int) int64 { return int64(v[i]) }, unit, column, firstRow)
	case *array.Duration:
		unit := src.DataType().(*arrow.DurationType).Unit
		v := src.DurationValues()
		return ingestTime(mem, src, func(i int) int64 { return int64(v[i]) }, unit, column, firstRow)
	}
	// What is left widens without loss: integers and floats, decimals to decimal128 of the same
	// precision, large and view strings.
	out, err := compute.CastArray(computeCtx(ctx, tc), a, compute.SafeCastOptions(to))
	if err != nil {
		return nil, errs.Invalidf("column '%s': converting %s to %s: %v", column, a.DataType(), to, err)
	}
	return out, nil
}

// ingestTime converts times of day and durations to the engine's TIME (microseconds), which
// MySQL bounds to ±838:59:59.999999.
func ingestTime(mem memory.Allocator, a arrow.Array, value func(int) int64, unit arrow.TimeUnit, column string, firstRow int64) (arrow.Array, error) {
	return buildRows(array.NewTime64Builder(mem, timeType), a.Len(), func(i int) (arrow.Time64, bool, error) {
		if a.IsNull(i) {
			return 0, false, nil
		}
		us, ok := toMicros(value(i), unit)
		if !ok || us > maxTimeUs || us < -maxTimeUs {
			return 0, false, outOfRange(column, firstRow+int64(i))
		}
		return arrow.Time64(us), true, nil
	})
}

// toMicros converts v in unit to microseconds, rounding nanoseconds half up (toward the later
// instant); ok is false when the result does not fit in int64.
func toMicros(v int64, unit arrow.TimeUnit) (int64, bool) {
	switch unit {
	case arrow.Second:
		if v > math.MaxInt64/1_000_000 || v < math.MinInt64/1_000_000 {
			return 0, false
		}
		return v * 1_000_000, true
	case arrow.Millisecond:
		if v > math.MaxInt64/1_000 || v < math.MinInt64/1_000 {
			return 0, false
		}
		return v * 1_000, true
	case arrow.Nanosecond:
		q := floorDiv(v, 1_000)
		if v-q*1_000 >= 500 {
			q++
		}
		return q, true
	}
	return v, true
}
