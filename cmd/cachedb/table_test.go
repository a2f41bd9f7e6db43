package main

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestResultTableAligns(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 100}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"ada", ""}, []bool{true, false})
	rec := b.NewRecordBatch()
	defer rec.Release()

	table := newResultTable(schema)
	table.add(rec)
	var out strings.Builder
	table.write(&out)
	want := `+-----+------+
| id  | name |
+-----+------+
|   1 | ada  |
| 100 | NULL |
+-----+------+
2 rows in set
`
	if out.String() != want {
		t.Errorf("table =\n%s\nwant\n%s", out.String(), want)
	}
}
