package flightsql

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cachedb/cachedb/engine"
)

// ingestBatch builds one batch of schema from JSON rows.
func ingestBatch(t *testing.T, schema *arrow.Schema, rows string) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(rows))
	if err != nil {
		t.Fatalf("batch %s: %v", rows, err)
	}
	t.Cleanup(rec.Release)
	return rec
}

// ingestOpts is the request ADBC sends for mode (create, append, replace, create_append).
func ingestOpts(table, mode string) *flightsql.ExecuteIngestOpts {
	o := &flightsql.ExecuteIngestOpts{Table: table, TableDefinitionOptions: &flightsql.TableDefinitionOptions{}}
	d := o.TableDefinitionOptions
	switch mode {
	case "create":
		d.IfNotExist, d.IfExists = flightsql.TableDefinitionOptionsTableNotExistOptionCreate, flightsql.TableDefinitionOptionsTableExistsOptionFail
	case "append":
		d.IfNotExist, d.IfExists = flightsql.TableDefinitionOptionsTableNotExistOptionFail, flightsql.TableDefinitionOptionsTableExistsOptionAppend
	case "replace":
		d.IfNotExist, d.IfExists = flightsql.TableDefinitionOptionsTableNotExistOptionCreate, flightsql.TableDefinitionOptionsTableExistsOptionReplace
	case "create_append":
		d.IfNotExist, d.IfExists = flightsql.TableDefinitionOptionsTableNotExistOptionCreate, flightsql.TableDefinitionOptionsTableExistsOptionAppend
	}
	return o
}

// ingest sends batches through arrow-go's Flight SQL client.
func ingest(ctx context.Context, cl *flightsql.Client, opts *flightsql.ExecuteIngestOpts, batches ...arrow.RecordBatch) (int64, error) {
	rdr, err := array.NewRecordReader(batches[0].Schema(), batches)
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	return cl.ExecuteIngest(ctx, rdr, opts)
}

func wantCode(t *testing.T, what string, err error, code codes.Code, text string) {
	t.Helper()
	if status.Code(err) != code || !strings.Contains(err.Error(), text) {
		t.Fatalf("%s: %v, want %s containing %q", what, err, code, text)
	}
}

func queryRows(t *testing.T, ctx context.Context, cl *flightsql.Client, sql string) []string {
	t.Helper()
	info, err := cl.Execute(ctx, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	_, rows := readInfo(t, cl, info)
	return rows
}

func TestIngestModes(t *testing.T) {
	ts := startServer(t, engine.Config{NoDemo: true}, Options{})
	ctx := testContext(t)
	cl := ts.arrowClient(t)
	ab := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	first := ingestBatch(t, ab, `[{"a": 1, "b": "x"}, {"a": 2, "b": null}]`)
	second := ingestBatch(t, ab, `[{"a": 3, "b": "z"}]`)

	n, err := ingest(ctx, cl, ingestOpts("t", "create"), first, second)
	if err != nil || n != 3 {
		t.Fatalf("create: %d rows, %v; want 3", n, err)
	}
	if got := strings.Join(queryRows(t, ctx, cl, "SELECT a, b FROM t ORDER BY a"), ";"); got != "1,x;2,NULL;3,z" {
		t.Errorf("after create: %s", got)
	}
	_, err = ingest(ctx, cl, ingestOpts("T", "create"), first)
	wantCode(t, "create over an existing table", err, codes.AlreadyExists, "already exists")

	_, err = ingest(ctx, cl, ingestOpts("missing", "append"), first)
	wantCode(t, "append to a missing table", err, codes.NotFound, "missing")

	zs := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "zzz", Type: arrow.PrimitiveTypes.Int64}}, nil)
	_, err = ingest(ctx, cl, ingestOpts("t", "append"), ingestBatch(t, zs, `[{"a": 9, "zzz": 9}]`))
	wantCode(t, "appending a column the table lacks", err, codes.InvalidArgument, "Unknown column 'zzz' in table 't'")

	// Append maps columns by name, in any order and case; columns the data lacks are NULL.
	ba := arrow.NewSchema([]arrow.Field{{Name: "B", Type: arrow.BinaryTypes.String}}, nil)
	if n, err := ingest(ctx, cl, ingestOpts("t", "append"), ingestBatch(t, ba, `[{"B": "only b"}]`)); err != nil || n != 1 {
		t.Fatalf("append: %d, %v", n, err)
	}
	if got := strings.Join(queryRows(t, ctx, cl, "SELECT a, b FROM t ORDER BY a"), ";"); got != "NULL,only b;1,x;2,NULL;3,z" {
		t.Errorf("after append: %s", got)
	}

	// Replace takes the new data's schema.
	xs := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Float64}}, nil)
	if n, err := ingest(ctx, cl, ingestOpts("t", "replace"), ingestBatch(t, xs, `[{"x": 1.5}]`)); err != nil || n != 1 {
		t.Fatalf("replace: %d, %v", n, err)
	}
	if got := strings.Join(queryRows(t, ctx, cl, "SELECT * FROM t"), ";"); got != "1.5" {
		t.Errorf("after replace: %s", got)
	}

	// create_append creates, then appends.
	for i, want := range []string{"1,x;2,NULL;3,z", "1,x;1,x;2,NULL;2,NULL;3,z;3,z"} {
		if _, err := ingest(ctx, cl, ingestOpts("ca", "create_append"), first, second); err != nil {
			t.Fatalf("create_append %d: %v", i+1, err)
		}
		if got := strings.Join(queryRows(t, ctx, cl, "SELECT a, b FROM ca ORDER BY a, b"), ";"); got != want {
			t.Errorf("after create_append %d: %s, want %s", i+1, got, want)
		}
	}
}

func TestIngestConvertsToCanonicalTypes(t *testing.T) {
	ts := startServer(t, engine.Config{NoDemo: true}, Options{})
	ctx := testContext(t)
	cl := ts.arrowClient(t)
	mem := memory.DefaultAllocator
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "ts_ns_zoned", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "America/New_York"}, Nullable: true},
		{Name: "ts_ms", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
		{Name: "d64", Type: arrow.FixedWidthTypes.Date64, Nullable: true},
		{Name: "t32", Type: arrow.FixedWidthTypes.Time32s, Nullable: true},
		{Name: "dur", Type: arrow.FixedWidthTypes.Duration_ms, Nullable: true},
		{Name: "d256", Type: &arrow.Decimal256Type{Precision: 10, Scale: 2}, Nullable: true},
		{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}, nil)
	rec := ingestBatch(t, schema, `[
		{"i32": -7, "u64": 9000000000, "f32": 0.5, "ls": "héllo", "ts_ns_zoned": 1700000000123456789,
		 "ts_ms": 1700000000123, "d64": 1700006400000, "t32": 3661, "dur": -5400000, "d256": "12.34", "flag": true},
		{"i32": null, "u64": null, "f32": null, "ls": null, "ts_ns_zoned": null, "ts_ms": null, "d64": null,
		 "t32": null, "dur": null, "d256": null, "flag": null}]`)
	// A pandas Categorical arrives dictionary-encoded.
	db := array.NewDictionaryBuilder(mem, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}).(*array.BinaryDictionaryBuilder)
	defer db.Release()
	if err := db.AppendString("red"); err != nil {
		t.Fatal(err)
	}
	db.AppendNull()
	cat := db.NewArray()
	defer cat.Release()
	cols := append(rec.Columns(), cat)
	fields := append(schema.Fields(), arrow.Field{Name: "cat", Type: cat.DataType(), Nullable: true})
	full := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, 2)
	defer full.Release()

	if _, err := ingest(ctx, cl, ingestOpts("typed", "create"), full); err != nil {
		t.Fatalf("ingest: %v", err)
	}
	tbl, err := ts.eng.Catalog().Table(ctx, "typed")
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, f := range tbl.Schema().Fields() {
		types = append(types, f.Name+":"+f.Type.String())
	}
	want := "i32:int64 u64:int64 f32:float64 ls:utf8 ts_ns_zoned:timestamp[us, tz=UTC] ts_ms:timestamp[us] d64:date32 " +
		"t32:time64[us] dur:time64[us] d256:decimal(10, 2) flag:bool cat:utf8"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("stored types\n got %s\nwant %s", got, want)
	}
	got := queryRows(t, ctx, cl, "SELECT i32, u64, f32, ls, CAST(ts_ns_zoned AS CHAR), CAST(ts_ms AS CHAR), d64, "+
		"CAST(t32 AS CHAR), CAST(dur AS CHAR), d256, flag, cat FROM typed ORDER BY i32")
	wantRows := []string{
		"NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL",
		"-7,9000000000,0.5,héllo,2023-11-14 22:13:20.123457,2023-11-14 22:13:20.123000,2023-11-15,01:01:01,-01:30:00,12.34,1,red",
	}
	if strings.Join(got, "\n") != strings.Join(wantRows, "\n") {
		t.Errorf("rows\n got %s\nwant %s", strings.Join(got, "\n"), strings.Join(wantRows, "\n"))
	}
}

func TestIngestIsAllOrNothing(t *testing.T) {
	ts := startServer(t, engine.Config{NoDemo: true}, Options{})
	ctx := testContext(t)
	cl := ts.arrowClient(t)
	if _, err := cl.ExecuteUpdate(ctx, "CREATE TABLE keyed (id BIGINT PRIMARY KEY, n INT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.ExecuteUpdate(ctx, "INSERT INTO keyed VALUES (1, 10)"); err != nil {
		t.Fatal(err)
	}
	text := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "n", Type: arrow.BinaryTypes.String}}, nil)
	good := ingestBatch(t, text, `[{"id": 2, "n": "20"}, {"id": 3, "n": " 30 "}]`)
	notANumber := ingestBatch(t, text, `[{"id": 4, "n": "40"}, {"id": 5, "n": "x"}]`)
	_, err := ingest(ctx, cl, ingestOpts("keyed", "append"), good, notANumber)
	// The strict INSERT conversion, with rows counted across the batches.
	wantCode(t, "a string that is no number", err, codes.InvalidArgument, "Incorrect integer value: 'x' for column 'n' at row 4")

	duplicate := ingestBatch(t, text, `[{"id": 1, "n": "0"}]`)
	_, err = ingest(ctx, cl, ingestOpts("keyed", "append"), good, duplicate)
	wantCode(t, "a repeated key", err, codes.AlreadyExists, "Duplicate entry '1'")

	u := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Uint64}}, nil)
	_, err = ingest(ctx, cl, ingestOpts("keyed", "replace"), ingestBatch(t, u, `[{"id": 1}]`), ingestBatch(t, u, `[{"id": 18446744073709551615}]`))
	wantCode(t, "a uint64 beyond BIGINT", err, codes.InvalidArgument, "Out of range value for column 'id' at row 2")
	_, err = ingest(ctx, cl, ingestOpts("fresh", "create"), ingestBatch(t, u, `[{"id": 1}]`), ingestBatch(t, u, `[{"id": 18446744073709551615}]`))
	wantCode(t, "creating with a bad batch", err, codes.InvalidArgument, "Out of range")

	if got := strings.Join(queryRows(t, ctx, cl, "SELECT id, n FROM keyed ORDER BY id"), ";"); got != "1,10" {
		t.Errorf("keyed after failed ingests: %s, want 1,10", got)
	}
	if _, err := ts.eng.Catalog().Table(ctx, "fresh"); err == nil {
		t.Error("a failed create left its table behind")
	}
	if n, err := ingest(ctx, cl, ingestOpts("keyed", "append"), good); err != nil || n != 2 {
		t.Fatalf("good append: %d, %v", n, err)
	}
	if got := strings.Join(queryRows(t, ctx, cl, "SELECT id, n FROM keyed ORDER BY id"), ";"); got != "1,10;2,20;3,30" {
		t.Errorf("keyed after the good append: %s", got)
	}
}

func TestIngestRefusals(t *testing.T) {
	ts := startServer(t, engine.Config{NoDemo: true}, Options{})
	ctx := testContext(t)
	cl := ts.arrowClient(t)
	a := ingestBatch(t, arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, nil), `[{"a": 1}]`)

	temp := ingestOpts("t", "create")
	temp.Temporary = true
	_, err := ingest(ctx, cl, temp, a)
	wantCode(t, "a temporary table", err, codes.Unimplemented, "temporary tables are not supported")

	withOption := ingestOpts("t", "create")
	withOption.Options = map[string]string{"compression": "zstd"}
	_, err = ingest(ctx, cl, withOption, a)
	wantCode(t, "a backend option", err, codes.InvalidArgument, `"compression"`)

	unspecified := &flightsql.ExecuteIngestOpts{Table: "t", TableDefinitionOptions: &flightsql.TableDefinitionOptions{}}
	_, err = ingest(ctx, cl, unspecified, a)
	wantCode(t, "unspecified modes", err, codes.InvalidArgument, "if_not_exist")

	inSystem := ingestOpts("nodes", "create")
	inSystem.Catalog = new(string)
	*inSystem.Catalog = "information_schema"
	_, err = ingest(ctx, cl, inSystem, a)
	wantCode(t, "a read-only catalog", err, codes.Unimplemented, "read-only")

	nested := arrow.NewSchema([]arrow.Field{{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String)}}, nil)
	_, err = ingest(ctx, cl, ingestOpts("t", "create"), ingestBatch(t, nested, `[{"tags": ["a"]}]`))
	wantCode(t, "a list column", err, codes.Unimplemented, "column 'tags' is list<item: utf8, nullable>")

	bytes := arrow.NewSchema([]arrow.Field{{Name: "raw", Type: arrow.BinaryTypes.Binary}}, nil)
	_, err = ingest(ctx, cl, ingestOpts("t", "create"), ingestBatch(t, bytes, `[{"raw": "AAE="}]`))
	wantCode(t, "a binary column", err, codes.Unimplemented, "column 'raw' is binary")

	if _, err := ts.eng.Catalog().Table(ctx, "t"); err == nil {
		t.Error("a refused ingest created its table")
	}
}

func TestIngestTakesAStatementSlotAndRespectsTheMessageLimit(t *testing.T) {
	ts := startServer(t, engine.Config{NoDemo: true}, Options{MaxConcurrentPerClient: 1, MaxBatchBytes: 64 << 10, MaxRecvBytes: 1 << 20})
	makeBigTable(t, ts.eng, "big", 20_000, 1_000)
	ctx := testContext(t)
	busy := ts.newClient(t)
	defer busy.Close()
	a := ingestBatch(t, arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, nil), `[{"a": 1}]`)

	info, err := busy.Execute(ctx, "SELECT id, text FROM big")
	if err != nil {
		t.Fatal(err)
	}
	streamCtx, stopStream := context.WithCancel(ctx)
	defer stopStream()
	rdr, err := busy.DoGet(streamCtx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	if !rdr.Next() {
		t.Fatalf("first batch: %v", rdr.Err())
	}
	_, err = ingest(ctx, busy, ingestOpts("t", "create"), a)
	wantExhausted(t, "an ingest while a statement streams", err)
	stopStream()
	rdr.Release()
	pollUntil(t, "the stream's slot is free", func() bool { return query(ctx, busy, "SELECT 1") == nil })

	// A batch is one gRPC message: one over MaxRecvBytes is refused, and nothing is stored.
	b := array.NewStringBuilder(memory.DefaultAllocator)
	for range 3 {
		b.Append(strings.Repeat("x", 1<<19))
	}
	big := b.NewArray()
	b.Release()
	defer big.Release()
	huge := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil), []arrow.Array{big}, 3)
	defer huge.Release()
	small := huge.NewSlice(0, 1)
	defer small.Release()
	_, err = ingest(ctx, busy, ingestOpts("t", "create"), small, huge)
	wantCode(t, "a batch over the message limit", err, codes.ResourceExhausted, "received message larger than max")
	if _, err := ts.eng.Catalog().Table(ctx, "t"); err == nil {
		t.Error("an ingest cut off by the message limit created its table")
	}
	if n, err := ingest(ctx, busy, ingestOpts("t", "create"), a); err != nil || n != 1 {
		t.Fatalf("ingest after the refusals: %d, %v", n, err)
	}
}

func TestADBCIngest(t *testing.T) {
	ts := startServer(t, engine.Config{NoDemo: true}, Options{})
	ctx := testContext(t)
	cnxn := ts.adbcConn(t)
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}, {Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	batches := []arrow.RecordBatch{
		ingestBatch(t, schema, `[{"id": 1, "name": "ada"}, {"id": 2, "name": null}]`),
		ingestBatch(t, schema, `[{"id": 3, "name": "cy"}]`),
	}
	run := func(mode string, bs ...arrow.RecordBatch) (int64, error) {
		stmt, err := cnxn.NewStatement()
		if err != nil {
			t.Fatal(err)
		}
		defer stmt.Close()
		if err := stmt.SetOption(adbc.OptionKeyIngestTargetTable, "people"); err != nil {
			t.Fatal(err)
		}
		if err := stmt.SetOption(adbc.OptionKeyIngestMode, mode); err != nil {
			t.Fatal(err)
		}
		rdr, err := array.NewRecordReader(schema, bs)
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		if err := stmt.BindStream(ctx, rdr); err != nil {
			t.Fatal(err)
		}
		return stmt.ExecuteUpdate(ctx)
	}
	if n, err := run(adbc.OptionValueIngestModeCreate, batches...); err != nil || n != 3 {
		t.Fatalf("create: %d, %v", n, err)
	}
	if _, err := run(adbc.OptionValueIngestModeCreate, batches...); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("create again: %v, want already exists", err)
	}
	if n, err := run(adbc.OptionValueIngestModeAppend, batches[1]); err != nil || n != 1 {
		t.Fatalf("append: %d, %v", n, err)
	}
	_, rows := adbcQuery(t, cnxn, "SELECT id, name FROM people ORDER BY id, name")
	if got := strings.Join(rows, ";"); got != "1,ada;2,NULL;3,cy;3,cy" {
		t.Errorf("rows: %s", got)
	}
	if n, err := run(adbc.OptionValueIngestModeReplace, batches[0]); err != nil || n != 2 {
		t.Fatalf("replace: %d, %v", n, err)
	}
	_, rows = adbcQuery(t, cnxn, "SELECT count(*) FROM people")
	if got := strings.Join(rows, ";"); got != "2" {
		t.Errorf("rows after replace: %s", got)
	}
}
