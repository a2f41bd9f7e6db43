package exec

import (
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestUnionConcatenatesPartitions(t *testing.T) {
	tc := newTestContext(t, 0)
	a := rowsSource(t, tc, schemaOf("x", opInt64), []any{1}, []any{nil})
	bSchema := schemaOf("y", opInt64)
	b := newSource(t, bSchema,
		[]arrow.RecordBatch{batchOf(t, tc.Alloc, bSchema, []any{1})},
		[]arrow.RecordBatch{batchOf(t, tc.Alloc, bSchema, []any{3})})
	op, err := NewUnion([]Operator{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if op.Partitions() != 3 {
		t.Errorf("partitions = %d, want 3", op.Partitions())
	}
	if name := op.Schema().Field(0).Name; name != "x" {
		t.Errorf("column name = %q, want the first input's x", name)
	}
	if got, want := collectRows(t, op, tc), sorted("1", "NULL", "1", "3"); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestUnionRejectsMismatchedInputs(t *testing.T) {
	tc := newTestContext(t, 0)
	a := rowsSource(t, tc, schemaOf("x", opInt64))
	cases := []Operator{
		rowsSource(t, tc, schemaOf("x", opString)),
		rowsSource(t, tc, schemaOf("x", opInt64, "y", opInt64)),
	}
	for _, b := range cases {
		if _, err := NewUnion([]Operator{a, b}); err == nil {
			t.Errorf("union of %s and %s succeeded", a.Schema(), b.Schema())
		}
	}
}
