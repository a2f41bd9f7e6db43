package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/internal/errs"
)

// ingestReader is a reader of JSON batches of one int64 column named a.
func ingestReader(t *testing.T, mem memory.Allocator, batches ...string) array.RecordReader {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	var recs []arrow.RecordBatch
	for _, js := range batches {
		rec, _, err := array.RecordFromJSON(mem, schema, strings.NewReader(js))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	rdr, err := array.NewRecordReader(schema, recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		r.Release()
	}
	return rdr
}

func TestIngestResolvesNamesAsStatementsDo(t *testing.T) {
	e := newEngineWithSource(t)
	ctx := context.Background()
	for _, c := range []struct {
		catalog, schema, table string
		want                   string // the memory table written, or the error's category
	}{
		{table: "x1", want: "x1"},
		{catalog: "cachedb", table: "x2", want: "x2"},
		{catalog: "CACHEDB", schema: "PUBLIC", table: "x3", want: "x3"},
		{schema: "public", table: "x4", want: "x4"},
		{schema: "cachedb", table: "x5", want: "x5"},
		{catalog: "lake", table: "x", want: errs.Unsupported.String()},
		{catalog: "lake", schema: "public", table: "x", want: errs.Unsupported.String()},
		{schema: "ns", table: "x", want: errs.Unsupported.String()}, // a namespace of the default catalog, lake
		{catalog: "information_schema", table: "x", want: errs.Unsupported.String()},
		{catalog: "nowhere", table: "x", want: errs.NotFound.String()},
		{catalog: "cachedb", schema: "other", table: "x", want: errs.NotFound.String()},
		{table: "a.b", want: errs.InvalidInput.String()},
		{table: "t@1", want: errs.InvalidInput.String()},
		{table: "", want: errs.InvalidInput.String()},
	} {
		req := IngestRequest{Catalog: c.catalog, Schema: c.schema, Table: c.table, IfMissing: MissingCreates}
		rdr := ingestReader(t, memory.DefaultAllocator, `[{"a": 7}]`)
		n, err := e.Ingest(ctx, req, rdr)
		rdr.Release()
		got := ""
		if err != nil {
			got = errs.CategoryOf(err).String()
		} else if n == 1 {
			tbl, terr := e.Catalog().Table(ctx, c.want)
			if terr == nil && tbl.Schema().NumFields() == 1 {
				got = c.want
			}
		}
		if got != c.want {
			t.Errorf("%q.%q.%q: got %q (%v), want %q", c.catalog, c.schema, c.table, got, err, c.want)
		}
	}
	if got := strings.Join(rows(t, e, "SELECT count(*) FROM lake.events"), ";"); got != "3" {
		t.Errorf("the source table changed: %s rows", got)
	}
}

func TestIngestRefusesViewsAndKeepsMemoryOnFailure(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	e, err := New(Config{NoDemo: true, Alloc: mem})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run(t, e, "CREATE VIEW v AS SELECT 1 AS a")
	for _, req := range []IngestRequest{
		{Table: "v", IfMissing: MissingCreates, IfExists: ExistingReplaced},
		{Table: "v", IfMissing: MissingCreates, IfExists: ExistingAppends},
	} {
		rdr := ingestReader(t, mem, `[{"a": 1}]`)
		if _, err := e.Ingest(ctx, req, rdr); errs.CategoryOf(err) != errs.AlreadyExists || !strings.Contains(err.Error(), "view") {
			t.Errorf("ingest over a view: %v", err)
		}
		rdr.Release()
	}

	run(t, e, "CREATE TABLE k (a BIGINT PRIMARY KEY)")
	run(t, e, "INSERT INTO k VALUES (1)")
	before := mem.CurrentAlloc()
	rdr := ingestReader(t, mem, `[{"a": 2}, {"a": 3}]`, `[{"a": 3}]`)
	_, err = e.Ingest(ctx, IngestRequest{Table: "k", IfExists: ExistingAppends}, rdr)
	rdr.Release()
	if errs.CategoryOf(err) != errs.AlreadyExists || !strings.Contains(err.Error(), "Duplicate entry '3'") {
		t.Fatalf("a duplicate key across batches: %v", err)
	}
	if got := strings.Join(rows(t, e, "SELECT a FROM k"), ";"); got != "1" {
		t.Errorf("k after the failed ingest: %s", got)
	}
	// Nothing the failed ingest read or converted is left behind (a table's own batches are
	// never released: scans may hold them).
	if after := mem.CurrentAlloc(); after != before {
		t.Errorf("the failed ingest left %d bytes allocated", after-before)
	}
}

func TestIngestCutsLargeBatchesSoScansDivide(t *testing.T) {
	e, err := New(Config{NoDemo: true, BatchSize: 2000})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b := array.NewInt64Builder(memory.DefaultAllocator)
	for i := range 40_000 {
		b.Append(int64(i))
	}
	col := b.NewArray()
	b.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, 40_000)
	col.Release()
	rdr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if n, err := e.Ingest(ctx, IngestRequest{Table: "big", IfMissing: MissingCreates}, rdr); err != nil || n != 40_000 {
		t.Fatalf("ingest: %d, %v", n, err)
	}
	tbl, err := e.Catalog().Table(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := tbl.Scan(ctx, catalog.ScanRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Tasks) < 2 {
		t.Errorf("one 40,000-row batch at batch size 2,000 scans as %d task(s), want several", len(plan.Tasks))
	}
	if got := strings.Join(rows(t, e, "SELECT count(*), sum(a), min(a), max(a) FROM big"), ";"); got != "40000,799980000,0,39999" {
		t.Errorf("aggregates over the ingested rows: %s", got)
	}
}
