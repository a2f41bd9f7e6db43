package exec

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// x IN (constants) through the hash set must give exactly what the general kernel gives: with
// NULLs on either side, mixed constant types, constants that convert to the same value, strings
// that differ only in case or a trailing space, and sliced input.
func TestInConstMatchesGeneral(t *testing.T) {
	date32 := arrow.FixedWidthTypes.Date32
	ts := &arrow.TimestampType{Unit: arrow.Microsecond}
	null := NewLiteral(scalar.MakeNullScalar(arrow.Null))
	cases := []struct {
		name    string
		colType arrow.DataType
		js      string
		lists   [][]Expr
	}{
		{"int64", i64, `[5, -3, null, 7, 0, 12, 7, null, 100, -100, 6, 7, 8, 9, 10, 11, 12, 13, 7]`, [][]Expr{
			{lit(int64(7))},
			{lit(int64(7)), lit(int64(-3)), lit(int64(100)), lit(int64(1000))},
			{lit(int64(7)), null},
			{null},
			{lit(int64(5)), lit(int64(5)), lit(int64(12))},
		}},
		{"date32", date32, `["2020-01-02", null, "2019-12-31", "2020-01-02", "2021-06-30", "1970-01-01"]`, [][]Expr{
			{lit("2020-01-02"), lit("1970-01-01")},
			{lit("2021-06-30"), null},
		}},
		{"string", str, `["MAIL", null, "SHIP", "AIR", "", "mail", "MAIL ", "SHIP", "REG AIR", null, "TRUCK"]`, [][]Expr{
			{lit("MAIL"), lit("SHIP")},
			{lit("MAIL"), null},
			{null},
			{lit(""), lit("TRUCK"), lit("TRUCK")},
			{lit("RAIL")},
		}},
		{"string (other lists)", str, `["MAIL", "SHIP", null, "", "AIR", "AIR REG", "mail", "SHIP ", "MAIL"]`, [][]Expr{
			{lit("MAIL"), lit("SHIP")},
			{lit("AIR"), lit("AIR REG"), lit("")},
			{lit("mail"), null},
		}},
		// Rows compared as words (every constant at most 8 bytes), by length (a longer one),
		// hashed (more than smallStringSet constants); a NUL byte is part of the value.
		{"string (words, lengths, hashes)", str, `["DELIVER IN PERSON", "A", "A\u0000", "12345678", "123456789", "", null, "NONE", "COLLECT COD", "A"]`, [][]Expr{
			{lit("A"), lit("12345678")},
			{lit("A\x00"), lit("")},
			{lit("DELIVER IN PERSON"), lit("A")},
			{lit("123456789"), lit("NONE"), lit("A\x00")},
			{lit("a"), lit("b"), lit("c"), lit("d"), lit("e"), lit("f"), lit("g"), lit("A"), lit("COLLECT COD")},
		}},
		{"timestamp", ts, `["2020-01-02 00:00:00", null, "2020-01-02 00:00:01", "2019-01-01 10:00:00"]`, [][]Expr{
			{lit("2020-01-02 00:00:01"), lit("2019-01-01 10:00:00")},
			{lit("2030-01-01 00:00:00"), null},
		}},
	}
	for _, c := range cases {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		full := arr(t, mem, c.colType, c.js)
		sliced := array.NewSlice(full, 1, int64(full.Len()))
		for _, col := range []arrow.Array{full, sliced} {
			schema := arrow.NewSchema([]arrow.Field{{Name: "c", Type: c.colType, Nullable: true}}, nil)
			batch := array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
			for _, list := range c.lists {
				e, err := NewCall("in", append([]Expr{NewColumn(0, "c", c.colType)}, list...))
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				spec, ok := e.(*inConstExpr)
				if !ok {
					t.Fatalf("%s: NewCall(%s) is %T, want the hash set IN", c.name, e, e)
				}
				checkSpecialized(t, mem, c.name, spec, spec.general, batch)
			}
			batch.Release()
		}
		sliced.Release()
		full.Release()
		mem.AssertSize(t, 0)
	}
	// Floats and lists with a non-constant keep the general kernel.
	for _, args := range [][]Expr{
		{NewColumn(0, "f", f64), lit(1.5)},
		{NewColumn(0, "x", i64), lit(int64(1)), NewColumn(1, "y", i64)},
	} {
		if e, err := NewCall("in", args); err != nil {
			t.Fatal(err)
		} else if _, ok := e.(*inConstExpr); ok {
			t.Errorf("%s uses the hash set", e)
		}
	}
}
