package flightsql

import (
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/cachedb/cachedb/internal/errs"
)

// parameterSchema describes n ? placeholders. Their types are not known before binding, so
// each is a nullable null-typed field: clients may bind any Arrow type.
func parameterSchema(n int) *arrow.Schema {
	fields := make([]arrow.Field, n)
	for i := range fields {
		fields[i] = arrow.Field{Name: "parameter_" + strconv.Itoa(i+1), Type: arrow.Null, Nullable: true}
	}
	return arrow.NewSchema(fields, nil)
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
				v, err := scalar.GetScalar(rec.Column(c), r)
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
