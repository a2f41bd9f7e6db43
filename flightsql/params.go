package flightsql

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/cachedb/cachedb/internal/errs"
)

// parameterSchema describes a statement's ? placeholders with the types the engine inferred
// for them (engine.Prepared.ParamTypes), so that clients that build their bind vectors from it
// (the JDBC driver) can bind values. Values of other types are converted (coerceParameterRows).
func parameterSchema(types []arrow.DataType) *arrow.Schema {
	fields := make([]arrow.Field, len(types))
	for i, t := range types {
		fields[i] = arrow.Field{Name: "parameter_" + strconv.Itoa(i+1), Type: t, Nullable: true}
	}
	return arrow.NewSchema(fields, nil)
}

// coerceParameterRows converts every bound value to its placeholder's type, so that a run
// produces the result schema the statement declared. A value that does not convert (text that
// is no number, a number out of range) is an InvalidInput error naming the parameter.
func coerceParameterRows(rows [][]scalar.Scalar, types []arrow.DataType) error {
	for r, row := range rows {
		for c, v := range row {
			if c >= len(types) || arrow.TypeEqual(v.DataType(), types[c]) {
				continue
			}
			if !v.IsValid() {
				row[c] = scalar.MakeNullScalar(types[c])
				continue
			}
			conv, err := castScalar(v, types[c])
			if err != nil {
				return errs.Invalidf("parameter %d of row %d: %s value %s cannot be converted to %s, the parameter's type", c+1, r+1, v.DataType(), v, types[c])
			}
			row[c] = conv
		}
	}
	return nil
}

// castScalar casts one value with the engine's Arrow cast kernels (safe: no overflow or
// truncation).
func castScalar(v scalar.Scalar, to arrow.DataType) (scalar.Scalar, error) {
	arr, err := scalar.MakeArrayFromScalar(v, 1, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	defer arr.Release()
	out, err := compute.CastArray(context.Background(), arr, compute.SafeCastOptions(to))
	if err != nil {
		return nil, err
	}
	defer out.Release()
	return scalar.GetScalar(out, 0)
}

// readParameterRows reads every parameter batch a client sent and returns one row of scalars
// per parameter row, in order. Each row must have exactly want values. The scalars own copies
// of (or references to) their data, so they outlive the batches.
func readParameterRows(rdr flight.MessageReader, want int) ([][]scalar.Scalar, error) {
	var rows [][]scalar.Scalar
	for rdr.Next() {
		rec := rdr.RecordBatch()
		if got := int(rec.NumCols()); got != want {
			return nil, errs.Invalidf("statement has %d parameters but %d were bound", want, got)
		}
		for r := 0; r < int(rec.NumRows()); r++ {
			row := make([]scalar.Scalar, want)
			for c := 0; c < want; c++ {
				v, err := parameterValue(rec.Column(c), r)
				if err != nil {
					return nil, errs.Invalidf("parameter %d of row %d (%s) cannot be read: %v", c+1, r+1, rec.Column(c).DataType(), err)
				}
				if err := checkTextParameter(v, fmt.Sprintf("parameter %d of row %d", c+1, r+1)); err != nil {
					return nil, err
				}
				row[c] = v
			}
			rows = append(rows, row)
		}
	}
	if err := rdr.Err(); err != nil {
		return nil, errs.Invalidf("reading bound parameters: %v", err)
	}
	return rows, nil
}

// checkTextParameter refuses a string parameter that is not valid UTF-8: it would be stored and
// later fail every client's UTF-8 validation of the results that hold it.
func checkTextParameter(v scalar.Scalar, where string) error {
	switch v.DataType().ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
	default:
		return nil
	}
	b, ok := v.(scalar.BinaryScalar)
	if !ok || !v.IsValid() {
		return nil
	}
	return errs.CheckUTF8(string(b.Data()), where)
}

// parameterValue reads row r of a bound parameter column. arrow-go's IPC reader does not check
// that a batch's buffers are as long as its lengths claim, and reading a value past a short
// buffer panics: such a batch from a client is refused as invalid input instead.
func parameterValue(col arrow.Array, r int) (v scalar.Scalar, err error) {
	defer func() {
		if p := recover(); p != nil {
			slog.Debug("malformed parameter batch", "panic", p)
			v, err = nil, errs.Invalidf("its Arrow buffers are malformed (offsets or lengths out of bounds)")
		}
	}()
	return scalar.GetScalar(col, r)
}
