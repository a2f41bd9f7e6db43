package fixedchunk

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// layouts are the writer settings the decoder is checked under: plain and dictionary pages
// (and a dictionary that overflows into plain pages mid-chunk), both data page versions,
// pages much smaller than a batch, with and without compression.
var layouts = []struct {
	name  string
	props []parquet.WriterProperty
}{
	{"dictionary", nil},
	{"plain", []parquet.WriterProperty{parquet.WithDictionaryDefault(false)}},
	{"dictionary overflowing into plain pages", []parquet.WriterProperty{parquet.WithDictionaryPageSizeLimit(512), parquet.WithDataPageSize(1024)}},
	{"v2 pages, small, zstd", []parquet.WriterProperty{parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithDataPageSize(700), parquet.WithCompression(compress.Codecs.Zstd)}},
	{"v2 pages, plain, snappy", []parquet.WriterProperty{parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithDictionaryDefault(false), parquet.WithCompression(compress.Codecs.Snappy)}},
	{"v1 pages, small, uncompressed", []parquet.WriterProperty{parquet.WithDataPageSize(333)}},
}

// testColumns are a column of every type the decoder reads, with the values drawn by gen.
var testColumns = []struct {
	typ arrow.DataType
	gen func(r *rand.Rand, b array.Builder)
}{
	{arrow.PrimitiveTypes.Int32, func(r *rand.Rand, b array.Builder) { b.(*array.Int32Builder).Append(int32(r.Uint32())) }},
	{arrow.PrimitiveTypes.Int64, func(r *rand.Rand, b array.Builder) { b.(*array.Int64Builder).Append(int64(r.Uint64())) }},
	{arrow.PrimitiveTypes.Float32, func(r *rand.Rand, b array.Builder) {
		b.(*array.Float32Builder).Append([]float32{float32(r.NormFloat64()), float32(math.NaN()), float32(math.Inf(-1)), 0}[r.IntN(4)])
	}},
	{arrow.PrimitiveTypes.Float64, func(r *rand.Rand, b array.Builder) { b.(*array.Float64Builder).Append(r.NormFloat64()) }},
	{arrow.FixedWidthTypes.Date32, func(r *rand.Rand, b array.Builder) {
		b.(*array.Date32Builder).Append(arrow.Date32(r.IntN(3000) - 1000))
	}},
	{&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, func(r *rand.Rand, b array.Builder) {
		b.(*array.TimestampBuilder).Append(arrow.Timestamp(r.Int64N(1 << 52)))
	}},
	{arrow.FixedWidthTypes.Time64us, func(r *rand.Rand, b array.Builder) { b.(*array.Time64Builder).Append(arrow.Time64(r.Int64N(86400e6))) }},
	{&arrow.Decimal128Type{Precision: 9, Scale: 2}, func(r *rand.Rand, b array.Builder) {
		b.(*array.Decimal128Builder).Append(decimal128.FromI64(r.Int64N(2e9) - 1e9))
	}},
	{&arrow.Decimal128Type{Precision: 18, Scale: 4}, func(r *rand.Rand, b array.Builder) {
		b.(*array.Decimal128Builder).Append(decimal128.FromI64([]int64{r.Int64N(1e18) - 5e17, -999999999999999999, 999999999999999999, -1}[r.IntN(4)]))
	}},
}

// writeFile writes rows rows of every test column (optional ones with about nullShare of their
// values null, or none; a required copy of each too), values from a pool of distinct values
// (so that dictionaries hold distinct entries, or overflow), in row groups of groupRows.
func writeFile(t testing.TB, seed uint64, rows, distinct, groupRows int, nullShare float64, props []parquet.WriterProperty) []byte {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	mem := memory.NewGoAllocator()
	var fields []arrow.Field
	var cols []arrow.Array
	for i, c := range testColumns {
		pool := array.NewBuilder(mem, c.typ)
		for range distinct {
			c.gen(r, pool)
		}
		values := pool.NewArray()
		for _, nullable := range []bool{true, false} {
			b := array.NewBuilder(mem, c.typ)
			for range rows {
				if nullable && r.Float64() < nullShare {
					b.AppendNull()
					continue
				}
				if err := b.AppendValueFromString(values.ValueStr(r.IntN(distinct))); err != nil {
					t.Fatal(err)
				}
			}
			fields = append(fields, arrow.Field{Name: fmt.Sprintf("c%d_%v", i, nullable), Type: c.typ, Nullable: nullable})
			cols = append(cols, b.NewArray())
			b.Release()
		}
		values.Release()
		pool.Release()
	}
	schema := arrow.NewSchema(fields, nil)
	rec := array.NewRecordBatch(schema, cols, int64(rows))
	defer rec.Release()
	for _, c := range cols {
		c.Release()
	}
	return writeParquet(t, rec, append([]parquet.WriterProperty{parquet.WithMaxRowGroupLength(int64(groupRows)), parquet.WithStoreDecimalAsInteger(true)}, props...))
}

// writeParquet writes rec as a Parquet file with the writer properties given.
func writeParquet(t testing.TB, rec arrow.RecordBatch, props []parquet.WriterProperty) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(rec.Schema(), &buf, parquet.NewWriterProperties(props...), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// openFile opens data with a checked allocator (the test fails if anything of it is left
// allocated at the end) and arrow-go's Arrow reader over it, in batches of batch rows.
func openFile(t *testing.T, data []byte, batch int) (memory.Allocator, *file.Reader, *pqarrow.FileReader) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	pf, err := file.NewParquetReader(bytes.NewReader(data), file.WithReadProps(parquet.NewReaderProperties(mem)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pf.Close() })
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: int64(batch)}, mem)
	if err != nil {
		t.Fatal(err)
	}
	return mem, pf, fr
}

// compareWithArrowReader decodes every column of every row group of data in batches of
// batch rows and checks each batch against arrow-go's reader of the same rows.
func compareWithArrowReader(t *testing.T, data []byte, batch int) {
	t.Helper()
	mem, pf, fr := openFile(t, data, batch)
	schema, err := fr.Schema()
	if err != nil {
		t.Fatal(err)
	}
	sc := pf.MetaData().Schema
	for c := range sc.NumColumns() {
		col, typ := sc.Column(c), schema.Field(c).Type
		for g := range pf.NumRowGroups() {
			cc, err := pf.MetaData().RowGroup(g).ColumnChunk(c)
			if err != nil {
				t.Fatal(err)
			}
			if !Supports(col, cc, typ) {
				t.Fatalf("column %s (%s as %s, encodings %v) is not supported", col.Name(), col.PhysicalType(), typ, cc.Encodings())
			}
			pages, err := pf.RowGroup(g).GetColumnPageReader(c)
			if err != nil {
				t.Fatal(err)
			}
			rd, err := NewReader(pages, col, typ, mem)
			if err != nil {
				t.Fatal(err)
			}
			rr, err := fr.GetRecordReader(context.Background(), []int{c}, []int{g})
			if err != nil {
				t.Fatal(err)
			}
			for b := 0; rr.Next(); b++ {
				want := rr.RecordBatch().Column(0)
				got, err := rd.Next(want.Len())
				if err != nil {
					t.Fatalf("column %s row group %d batch %d: %v", col.Name(), g, b, err)
				}
				if !sameValues(got, want) {
					t.Fatalf("column %s row group %d batch %d: got %s (%d nulls), want %s (%d nulls)", col.Name(), g, b, got, got.NullN(), want, want.NullN())
				}
				got.Release()
			}
			if _, err := rd.Next(1); err == nil {
				t.Fatalf("column %s row group %d: a row past the chunk's end was decoded", col.Name(), g)
			}
			rr.Release()
			if err := rd.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// sameValues reports whether two arrays of a fixed-width type hold the same NULLs and the same
// bytes in every other row (so NaNs compare by their bits).
func sameValues(got, want arrow.Array) bool {
	if !arrow.TypeEqual(got.DataType(), want.DataType()) || got.Len() != want.Len() || got.NullN() != want.NullN() {
		return false
	}
	w := got.DataType().(arrow.FixedWidthDataType).BitWidth() / 8
	gb, wb := got.Data().Buffers()[1].Bytes(), want.Data().Buffers()[1].Bytes()
	for i := range got.Len() {
		if got.IsNull(i) != want.IsNull(i) {
			return false
		}
		g, o := (got.Data().Offset()+i)*w, (want.Data().Offset()+i)*w
		if got.IsValid(i) && !bytes.Equal(gb[g:g+w], wb[o:o+w]) {
			return false
		}
	}
	return true
}

// Every supported column decodes to what arrow-go's reader gives, under every writer layout,
// with and without NULLs, small and large dictionaries, and batches that cut pages anywhere.
func TestReaderMatchesArrowReader(t *testing.T) {
	for li, l := range layouts {
		for _, c := range []struct {
			distinct  int
			nullShare float64
		}{{7, 0}, {7, 0.2}, {5000, 0.05}, {3, 1}} {
			t.Run(fmt.Sprintf("%s/distinct=%d/nulls=%v", l.name, c.distinct, c.nullShare), func(t *testing.T) {
				data := writeFile(t, uint64(li*1000+c.distinct), 3000, c.distinct, 2048, c.nullShare, l.props)
				for _, batch := range []int{7, 97, 1024, 5000} {
					compareWithArrowReader(t, data, batch)
				}
			})
		}
	}
}

// Columns the decoder does not read are refused by Supports (their readers use arrow-go's).
func TestSupportsRefusesWhatItCannotDecode(t *testing.T) {
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "delta", Type: arrow.PrimitiveTypes.Int64},
		{Name: "flag", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "small", Type: arrow.PrimitiveTypes.Int16},
		{Name: "wide_decimal", Type: &arrow.Decimal128Type{Precision: 30, Scale: 2}},
		{Name: "list", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)},
		{Name: "s", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := range 100 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.BooleanBuilder).Append(i%2 == 0)
		b.Field(2).(*array.Int16Builder).Append(int16(i))
		b.Field(3).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i)))
		lb := b.Field(4).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Int32Builder).Append(int32(i))
		b.Field(5).(*array.StringBuilder).Append(strings.Repeat("x", i%3))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	data := writeParquet(t, rec, []parquet.WriterProperty{parquet.WithDictionaryDefault(false),
		parquet.WithEncodingFor("delta", parquet.Encodings.DeltaBinaryPacked), parquet.WithStoreDecimalAsInteger(true)})
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		t.Fatal(err)
	}
	manifest := fr.Manifest
	sc := pf.MetaData().Schema
	for c := range sc.NumColumns() {
		cc, err := pf.MetaData().RowGroup(0).ColumnChunk(c)
		if err != nil {
			t.Fatal(err)
		}
		f, err := manifest.GetColumnField(c)
		if err != nil {
			t.Fatal(err)
		}
		typ := f.Field.Type
		if Supports(sc.Column(c), cc, typ) {
			t.Errorf("column %s (%s, encodings %v) is taken", sc.Column(c).Path(), typ, cc.Encodings())
		}
	}
	// The right type on the wrong physical column, and a type it does not produce, are refused too.
	cc, _ := pf.MetaData().RowGroup(0).ColumnChunk(0)
	if Supports(sc.Column(2), cc, arrow.PrimitiveTypes.Int32) {
		t.Error("a chunk of another physical type than its column's is taken")
	}
}

// A chunk whose bytes are damaged gives an error or some values, never a panic, and a chunk
// read past its rows gives an error.
func TestReaderSurvivesCorruptPages(t *testing.T) {
	for li, l := range layouts {
		data := writeFile(t, uint64(li), 600, 40, 600, 0.1, l.props)
		pf, err := file.NewParquetReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		meta := pf.MetaData()
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		schema, err := fr.Schema()
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(uint64(li), 7))
		for trial := range 300 {
			c := r.IntN(meta.Schema.NumColumns())
			cc, err := meta.RowGroup(0).ColumnChunk(c)
			if err != nil {
				t.Fatal(err)
			}
			start := cc.DataPageOffset()
			if cc.HasDictionaryPage() && cc.DictionaryPageOffset() < start {
				start = cc.DictionaryPageOffset()
			}
			bad := bytes.Clone(data)
			for range 1 + r.IntN(4) {
				at := start + r.Int64N(cc.TotalCompressedSize())
				bad[at] ^= byte(1 + r.IntN(255))
			}
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("%s, trial %d, column %d: panic %v\n%s", l.name, trial, c, p, debug.Stack())
					}
				}()
				pfBad, err := file.NewParquetReader(bytes.NewReader(bad), file.WithMetadata(meta))
				if err != nil {
					return
				}
				defer pfBad.Close()
				pages, err := pfBad.RowGroup(0).GetColumnPageReader(c)
				if err != nil {
					return
				}
				rd, err := NewReader(pages, meta.Schema.Column(c), schema.Field(c).Type, memory.DefaultAllocator)
				if err != nil {
					t.Fatal(err)
				}
				defer rd.Close()
				for range 7 {
					a, err := rd.Next(100)
					if err != nil {
						return
					}
					a.Release()
				}
			}()
		}
	}
}

// writeStrings writes rows strings drawn from distinct values (about nullShare NULL) as one
// optional column, in row groups of groupRows.
func writeStrings(t *testing.T, seed uint64, rows, distinct, groupRows int, nullShare float64, props []parquet.WriterProperty) []byte {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 2))
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewStringBuilder(mem)
	defer b.Release()
	for range rows {
		if r.Float64() < nullShare {
			b.AppendNull()
			continue
		}
		v := r.IntN(distinct)
		b.Append(strings.Repeat(fmt.Sprint(v), v%4) + fmt.Sprint("#", v))
	}
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(rows))
	defer rec.Release()
	return writeParquet(t, rec, append([]parquet.WriterProperty{parquet.WithMaxRowGroupLength(int64(groupRows))}, props...))
}

// An index reader gives, batch by batch, the positions of each row's value in the chunk's
// dictionary (NULL rows NULL), under every layout whose pages are all dictionary-encoded; a
// plain page is an error.
func TestIndexReaderGivesDictionaryPositions(t *testing.T) {
	for li, l := range layouts {
		for _, c := range []struct {
			distinct  int
			nullShare float64
		}{{5, 0}, {40, 0.3}, {3000, 0}} {
			t.Run(fmt.Sprintf("%s/distinct=%d/nulls=%v", l.name, c.distinct, c.nullShare), func(t *testing.T) {
				data := writeStrings(t, uint64(li*100+c.distinct), 3000, c.distinct, 2048, c.nullShare, l.props)
				mem, pf, fr := openFile(t, data, 700)
				col := pf.MetaData().Schema.Column(0)
				for g := range pf.NumRowGroups() {
					cc, err := pf.MetaData().RowGroup(g).ColumnChunk(0)
					if err != nil {
						t.Fatal(err)
					}
					allDict := true
					for _, st := range cc.EncodingStats() {
						if (st.PageType == 0 || st.PageType == 3) && st.Encoding != parquet.Encodings.RLEDict && st.Encoding != parquet.Encodings.PlainDict {
							allDict = false
						}
					}
					pages, err := pf.RowGroup(g).GetColumnPageReader(0)
					if err != nil {
						t.Fatal(err)
					}
					rd, err := NewIndexReader(pages, col, mem)
					if err != nil {
						t.Fatal(err)
					}
					rr, err := fr.GetRecordReader(context.Background(), []int{0}, []int{g})
					if err != nil {
						t.Fatal(err)
					}
					for b := 0; rr.Next(); b++ {
						want := rr.RecordBatch().Column(0).(*array.String)
						got, err := rd.Next(want.Len())
						if !allDict && err != nil {
							if !strings.Contains(err.Error(), "plain data page") {
								t.Fatalf("row group %d: a chunk with plain pages gave %v", g, err)
							}
							allDict = true // the error came
							break
						}
						if err != nil {
							t.Fatalf("row group %d batch %d: %v", g, b, err)
						}
						if !allDict {
							got.Release()
							continue
						}
						offsets, values := rd.Dictionary()
						idx := got.(*array.Int32)
						if idx.NullN() != want.NullN() {
							t.Fatalf("row group %d batch %d: %d NULLs, want %d", g, b, idx.NullN(), want.NullN())
						}
						for i := range want.Len() {
							if want.IsNull(i) != idx.IsNull(i) {
								t.Fatalf("row group %d batch %d row %d: NULL %v, want %v", g, b, i, idx.IsNull(i), want.IsNull(i))
							}
							if want.IsValid(i) {
								j := idx.Value(i)
								if v := string(values[offsets[j]:offsets[j+1]]); v != want.Value(i) {
									t.Fatalf("row group %d batch %d row %d: %q, want %q", g, b, i, v, want.Value(i))
								}
							}
						}
						got.Release()
					}
					rr.Release()
					if err := rd.Close(); err != nil {
						t.Fatal(err)
					}
					if !allDict {
						t.Fatalf("row group %d: a chunk with plain pages was read as indices to its end", g)
					}
				}
			})
		}
	}
}
