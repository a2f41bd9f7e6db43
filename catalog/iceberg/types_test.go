package iceberg

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/internal/errs"
)

func zooSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		field(1, "b", iceberg.PrimitiveTypes.Bool, false),
		field(2, "i", iceberg.PrimitiveTypes.Int32, true),
		field(3, "l", iceberg.PrimitiveTypes.Int64, false),
		field(4, "f", iceberg.PrimitiveTypes.Float32, false),
		field(5, "d", iceberg.PrimitiveTypes.Float64, false),
		field(6, "dec", iceberg.DecimalTypeOf(10, 2), false),
		field(7, "day", iceberg.PrimitiveTypes.Date, false),
		field(8, "tod", iceberg.PrimitiveTypes.Time, false),
		field(9, "ts", iceberg.PrimitiveTypes.Timestamp, false),
		field(10, "tstz", iceberg.PrimitiveTypes.TimestampTz, false),
		field(11, "tsns", iceberg.PrimitiveTypes.TimestampNs, false),
		field(12, "s", iceberg.PrimitiveTypes.String, false),
		field(13, "u", iceberg.PrimitiveTypes.UUID, false),
		field(14, "fx", iceberg.FixedTypeOf(4), false),
		field(15, "bin", iceberg.PrimitiveTypes.Binary, false),
		field(16, "st", &iceberg.StructType{FieldList: []iceberg.NestedField{
			field(17, "x", iceberg.PrimitiveTypes.Int32, false),
			field(18, "u2", iceberg.PrimitiveTypes.UUID, false),
		}}, false),
		field(19, "li", &iceberg.ListType{ElementID: 20, Element: iceberg.PrimitiveTypes.String, ElementRequired: false}, false),
		field(21, "m", &iceberg.MapType{KeyID: 22, KeyType: iceberg.PrimitiveTypes.String, ValueID: 23, ValueType: iceberg.PrimitiveTypes.Int64, ValueRequired: false}, false),
	)
}

func TestTypeZoo(t *testing.T) {
	ctx := context.Background()
	l := newLake(t, "lake")
	tbl := l.create("default", "zoo", zooSchema(), icecat.WithProperties(iceberg.Properties{"format-version": "3"}))
	appendJSON(t, tbl, `[
	 {"b":true,"i":1,"l":10000000000,"f":1.5,"d":2.25,"dec":"12.34","day":"2024-01-05","tod":"12:34:56.789",
	  "ts":"2024-01-05 10:11:12.123456","tstz":"2024-01-05T10:11:12Z","tsns":"2024-01-05 10:11:12.123456789",
	  "s":"héllo","u":"00112233-4455-6677-8899-aabbccddeeff","fx":"AQIDBA==","bin":"/w==",
	  "st":{"x":7,"u2":"00112233-4455-6677-8899-aabbccddeeff"},"li":["p",null,"q"],"m":[{"key":"k","value":5}]},
	 {"i":2}
	]`)
	c := l.reader(Config{})
	got, err := c.Table(ctx, "zoo")
	if err != nil {
		t.Fatal(err)
	}
	wantTypes := []string{
		"bool", "int32", "int64", "float32", "float64", "decimal(10, 2)", "date32", "time64[us]",
		"timestamp[us]", "timestamp[us, tz=UTC]", "timestamp[ns]", "utf8", "fixed_size_binary[16]",
		"fixed_size_binary[4]", "binary", "struct<x: int32 nullable, u2: fixed_size_binary[16] nullable>",
		"list<element: utf8, nullable>", "map<utf8, int64, items_nullable>",
	}
	var gotTypes []string
	for _, f := range got.Schema().Fields() {
		gotTypes = append(gotTypes, f.Type.String())
	}
	if strings.Join(gotTypes, "; ") != strings.Join(wantTypes, "; ") {
		t.Errorf("types:\n got %s\nwant %s", strings.Join(gotTypes, "; "), strings.Join(wantTypes, "; "))
	}
	if got.Schema().Field(1).Nullable || !got.Schema().Field(0).Nullable {
		t.Errorf("nullability from required: %s", got.Schema())
	}
	res := scan(t, got, catalog.ScanRequest{})
	for _, f := range res.sch.Fields() {
		if _, ext := f.Type.(arrow.ExtensionType); ext {
			t.Errorf("column %s is read as extension type %s", f.Name, f.Type)
		}
	}
	if len(res.rows) != 2 {
		t.Fatalf("%d rows", len(res.rows))
	}
	want := strings.Join([]string{"true", "1", "10000000000", "1.5", "2.25", "12.34", "2024-01-05", "12:34:56.789000",
		"2024-01-05T10:11:12.123456", "2024-01-05T10:11:12Z", "2024-01-05T10:11:12.123456789",
		"héllo", "ABEiM0RVZneImaq7zN3u/w==", "AQIDBA==", "/w==",
		`{"u2":"ABEiM0RVZneImaq7zN3u/w==","x":7}`, `["p",null,"q"]`, `[{"key":"k","value":5}]`}, "|")
	if res.rows[1] != want {
		t.Errorf("row:\n got %s\nwant %s", res.rows[1], want)
	}
	if !strings.HasPrefix(res.rows[0], "NULL|2|NULL") {
		t.Errorf("sparse row %s", res.rows[0])
	}

	// Pushed comparisons on each type keep the matching row, although the other row is NULL in
	// every column but i (a row group with as many NULLs as values, see icebergFilter).
	ns := &arrow.TimestampType{Unit: arrow.Nanosecond}
	for _, f := range []catalog.Filter{
		eq(0, scalar.NewBooleanScalar(true)),
		eq(1, scalar.NewInt64Scalar(1)),
		{{{Column: 2, Op: catalog.OpGtEq, Values: []scalar.Scalar{scalar.NewInt32Scalar(5)}}}},
		eq(3, scalar.NewFloat64Scalar(1.5)),
		eq(4, scalar.NewFloat64Scalar(2.25)),
		{{{Column: 5, Op: catalog.OpGt, Values: []scalar.Scalar{scalar.NewInt64Scalar(12)}}}},
		eq(6, scalar.NewStringScalar("2024-01-05")),
		{{{Column: 7, Op: catalog.OpGt, Values: []scalar.Scalar{scalar.NewStringScalar("12:00:00")}}}},
		{{{Column: 8, Op: catalog.OpGtEq, Values: []scalar.Scalar{scalar.NewStringScalar("2024-01-05 10:11:12.123456")}}}},
		{{{Column: 9, Op: catalog.OpLt, Values: []scalar.Scalar{scalar.NewStringScalar("2024-01-05 10:11:12.000001")}}}},
		eq(10, scalar.NewTimestampScalar(arrow.Timestamp(1704449472123456789), ns)),
		{{{Column: 11, Op: catalog.OpIn, Values: []scalar.Scalar{scalar.NewStringScalar("héllo"), scalar.NewStringScalar("x")}}}},
		{{{Column: 11, Op: catalog.OpIsNotNull}}},
		{{{Column: 5, Op: catalog.OpIsNotNull}}},
	} {
		r := scan(t, got, catalog.ScanRequest{Columns: []int{1}, Filter: f})
		if !contains(r.rows, "1") {
			t.Errorf("filter %s lost the matching row: %q (%s)", f, r.rows, r.plan.Explain)
		}
		if _, total := ratio(t, explainValue(t, r.plan.Explain, "files")); total != 1 {
			t.Errorf("explain %q", r.plan.Explain)
		}
	}
	// And skip the file when no row can match.
	for _, f := range []catalog.Filter{
		eq(1, scalar.NewInt64Scalar(7)),
		{{{Column: 6, Op: catalog.OpGt, Values: []scalar.Scalar{scalar.NewStringScalar("2024-01-05")}}}},
		eq(11, scalar.NewStringScalar("nope")),
		{{{Column: 5, Op: catalog.OpLt, Values: []scalar.Scalar{scalar.NewInt64Scalar(12)}}}},
	} {
		r := scan(t, got, catalog.ScanRequest{Columns: []int{1}, Filter: f})
		if kept, _ := ratio(t, explainValue(t, r.plan.Explain, "files")); kept != 0 {
			t.Errorf("filter %s: explain %q, want the file skipped", f, r.plan.Explain)
		}
	}
}

func TestUnsupportedType(t *testing.T) {
	ctx := context.Background()
	l := newLake(t, "lake")
	l.create("default", "geo", iceberg.NewSchema(0,
		field(1, "id", iceberg.PrimitiveTypes.Int64, true),
		field(2, "v", iceberg.VariantType{}, false),
	), icecat.WithProperties(iceberg.Properties{"format-version": "3"}))
	appendJSON(t, l.create("default", "fine", plainSchema()), `[{"id":1}]`)
	c := l.reader(Config{})
	_, err := c.Table(ctx, "geo")
	if errs.CategoryOf(err) != errs.Unsupported || !strings.Contains(err.Error(), "column v") {
		t.Errorf("variant column: %v, want Unsupported naming the column", err)
	}
	if _, err := c.Table(ctx, "fine"); err != nil {
		t.Errorf("other table after unsupported one: %v", err)
	}
}
