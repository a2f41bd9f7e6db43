package flightsql

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/cachedb/cachedb/internal/errs"
)

// A parameter batch whose offsets run backwards (as a hand-made IPC message's can: a fuzzer found
// one) is invalid input, not a panic.
func TestParameterValueRefusesBackwardOffsets(t *testing.T) {
	offsets := arrow.Int32Traits.CastToBytes([]int32{0, 48, 0})
	data := array.NewData(arrow.BinaryTypes.Binary, 2, []*memory.Buffer{nil, memory.NewBufferBytes(offsets), memory.NewBufferBytes(make([]byte, 48))}, nil, 0, 0)
	defer data.Release()
	col := array.MakeFromData(data)
	defer col.Release()
	if v, err := parameterValue(col, 0); err != nil || v.(*scalar.Binary).Value.Len() != 48 {
		t.Fatalf("row 0 = %v, %v; want 48 bytes", v, err)
	}
	_, err := parameterValue(col, 1)
	var e *errs.Error
	if !errors.As(err, &e) || e.Category != errs.InvalidInput {
		t.Fatalf("row 1, whose offsets run backwards: %v, want an invalid-input error", err)
	}
}
