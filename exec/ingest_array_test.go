package exec

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestIngestArrayConvertsExactly(t *testing.T) {
	ts := func(unit arrow.TimeUnit, zone string) arrow.DataType {
		return &arrow.TimestampType{Unit: unit, TimeZone: zone}
	}
	utc := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	for _, c := range []struct {
		from     arrow.DataType
		js       string
		to       arrow.DataType
		want     string // the stored values, or the error's text
		wantErr  bool
		whatFrom string
	}{
		{from: arrow.PrimitiveTypes.Int8, js: `[-128, 127, null]`, to: i64, want: "-128,127,NULL"},
		{from: arrow.PrimitiveTypes.Int32, js: `[-2147483648]`, to: i64, want: "-2147483648"},
		{from: arrow.PrimitiveTypes.Uint32, js: `[4294967295]`, to: i64, want: "4294967295"},
		{from: arrow.PrimitiveTypes.Uint64, js: `[9223372036854775807, null]`, to: i64, want: "9223372036854775807,NULL"},
		{from: arrow.PrimitiveTypes.Uint64, js: `[1, 9223372036854775808]`, to: i64, want: "Out of range value for column 'c' at row 11", wantErr: true},
		{from: arrow.PrimitiveTypes.Float32, js: `[0.5, -1.25, null]`, to: f64, want: "0.5,-1.25,NULL"},
		{from: arrow.FixedWidthTypes.Float16, js: `[1.5]`, to: f64, want: "1.5"},
		{from: arrow.BinaryTypes.LargeString, js: `["a", null, "ü"]`, to: str, want: "a,NULL,ü"},
		{from: arrow.BinaryTypes.StringView, js: `["a long string beyond twelve bytes", "b"]`, to: str, want: "a long string beyond twelve bytes,b"},
		{from: &arrow.Decimal256Type{Precision: 20, Scale: 3}, js: `["-12.345"]`, to: dec(20, 3), want: "-12.345"},
		{from: &arrow.Decimal64Type{Precision: 9, Scale: 2}, js: `["1.50"]`, to: dec(9, 2), want: "1.50"},
		{from: &arrow.Decimal256Type{Precision: 40, Scale: 2}, js: `["1"]`, want: "column 'c' is decimal256(40, 2): decimals are stored with at most 38 digits and a scale of 0 or more", wantErr: true},
		{from: arrow.FixedWidthTypes.Date64, js: `[86400000, -1, null]`, to: arrow.FixedWidthTypes.Date32, want: "1970-01-02,1969-12-31,NULL"},
		// Nanoseconds round to microseconds, halves toward the later instant, before 1970 too.
		{from: ts(arrow.Nanosecond, ""), js: `[1499, 1500, -500, -501]`, to: dateTimeType, want: "1970-01-01 00:00:00.000001,1970-01-01 00:00:00.000002,1970-01-01 00:00:00,1969-12-31 23:59:59.999999"},
		{from: ts(arrow.Second, "Europe/Paris"), js: `[0]`, to: utc, want: "1970-01-01 00:00:00"},
		{from: ts(arrow.Second, ""), js: `[9223372036854775807]`, want: "Out of range value for column 'c' at row 10", wantErr: true},
		{from: arrow.FixedWidthTypes.Time32ms, js: `[3723500]`, to: timeType, want: "01:02:03.500000"},
		{from: arrow.FixedWidthTypes.Time64ns, js: `[1000000499]`, to: timeType, want: "00:00:01"},
		{from: arrow.FixedWidthTypes.Duration_s, js: `[-3019999, 3020399]`, to: timeType, want: "-838:53:19,838:59:59"},
		{from: arrow.FixedWidthTypes.Duration_s, js: `[3020400]`, want: "Out of range value for column 'c' at row 10", wantErr: true},
		{from: arrow.FixedWidthTypes.Boolean, js: `[true, null]`, to: bln, want: "1,NULL"},
		{from: arrow.ListOf(i64), js: `[[1]]`, want: "column 'c' is list<item: int64, nullable>, which cachedb cannot store", wantErr: true},
		{from: arrow.BinaryTypes.Binary, js: `["AA=="]`, want: "column 'c' is binary: cachedb stores text as UTF-8 strings", wantErr: true},
	} {
		mem := newMem(t)
		a := arr(t, mem, c.from, c.js)
		out, err := IngestArray(context.Background(), &TaskContext{Alloc: mem}, a, "c", 10)
		switch {
		case c.wantErr && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%s %s: error %v, want %q", c.from, c.js, err, c.want)
		case !c.wantErr && err != nil:
			t.Errorf("%s %s: %v", c.from, c.js, err)
		case !c.wantErr:
			if !arrow.TypeEqual(out.DataType(), c.to) {
				t.Errorf("%s %s: type %s, want %s", c.from, c.js, out.DataType(), c.to)
			}
			if got := renderArray(out); got != c.want {
				t.Errorf("%s %s = %s, want %s", c.from, c.js, got, c.want)
			}
			out.Release()
		}
		a.Release()
		mem.AssertSize(t, 0)
	}
}

func TestIngestArrayDecodesDictionaries(t *testing.T) {
	mem := newMem(t)
	defer mem.AssertSize(t, 0)
	dict := arr(t, mem, arrow.BinaryTypes.LargeString, `["a", "b"]`)
	defer dict.Release()
	indices := arr(t, mem, arrow.PrimitiveTypes.Int8, `[1, 0, null, 1]`)
	defer indices.Release()
	a := array.NewDictionaryArray(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.LargeString}, indices, dict)
	defer a.Release()
	out, err := IngestArray(context.Background(), &TaskContext{Alloc: mem}, a, "c", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if !arrow.TypeEqual(out.DataType(), str) || renderArray(out) != "b,a,NULL,b" {
		t.Errorf("decoded %s %s, want utf8 b,a,NULL,b", out.DataType(), renderArray(out))
	}
}

func TestIngestArrayRefusesMalformedData(t *testing.T) {
	mem := memory.NewGoAllocator()
	tc := &TaskContext{Alloc: mem}
	// Row 3 (1-based within the ingest: 12) is not UTF-8.
	notUTF8 := array.NewStringData(array.NewData(str, 3, []*memory.Buffer{nil,
		memory.NewBufferBytes(arrow.Int32Traits.CastToBytes([]int32{0, 1, 2, 4})),
		memory.NewBufferBytes([]byte("ab\xffz"))}, nil, 0, 0))
	defer notUTF8.Release()
	_, err := IngestArray(context.Background(), tc, notUTF8, "s", 10)
	if err == nil || err.Error() != "Invalid utf8mb4 character string: 'FF7A' in column 's' at row 12" {
		t.Errorf("a string that is not UTF-8: %v", err)
	}
	// Offsets that go backwards: reading the value between them would panic.
	outOfBounds := array.NewStringData(array.NewData(str, 2, []*memory.Buffer{nil,
		memory.NewBufferBytes(arrow.Int32Traits.CastToBytes([]int32{0, 2, 1})),
		memory.NewBufferBytes([]byte("ab"))}, nil, 0, 0))
	defer outOfBounds.Release()
	_, err = IngestArray(context.Background(), tc, outOfBounds, "s", 1)
	if err == nil || !strings.Contains(err.Error(), "column 's': its Arrow data is malformed") {
		t.Errorf("offsets going backwards: %v", err)
	}
}
