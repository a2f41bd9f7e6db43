package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/catalog"
	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/internal/errs"
)

// A second memory catalog stands in for a source catalog: name resolution does not depend on
// what kind of catalog a source is.
func newEngineWithSource(t *testing.T) *Engine {
	t.Helper()
	ctx := context.Background()
	lake := memcat.NewCatalog("lake")
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	e, err := New(Config{NoDemo: true, Alloc: mem, Sources: []catalog.Catalog{lake}, DefaultCatalog: "lake"})
	if err != nil {
		t.Fatal(err)
	}
	run(t, e, "CREATE TABLE t (a BIGINT)")
	run(t, e, "INSERT INTO t VALUES (1), (2)")
	// Fill the source through its own API, as a source catalog is filled outside cachedb.
	lakeEngine, err := New(Config{NoDemo: true})
	if err != nil {
		t.Fatal(err)
	}
	run(t, lakeEngine, "CREATE TABLE events (id BIGINT, kind VARCHAR(10))")
	run(t, lakeEngine, "INSERT INTO events VALUES (1, 'x'), (2, 'y'), (3, 'x')")
	events, err := lakeEngine.Catalog().Table(ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	copyTable(t, lake, events)
	return e
}

// copyTable creates dst.<name> with src's rows.
func copyTable(t *testing.T, dst *memcat.Catalog, src catalog.Table) {
	t.Helper()
	ctx := context.Background()
	tbl, err := dst.CreateTable(ctx, src.Name(), src.Schema(), false)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := src.Scan(ctx, catalog.ScanRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range plan.Tasks {
		r, err := task.Open(ctx, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			if err := tbl.(catalog.InsertableTable).Append(ctx, r.RecordBatch()); err != nil {
				t.Fatal(err)
			}
		}
		r.Release()
	}
}

func TestQueriesNameTablesOfSeveralCatalogs(t *testing.T) {
	e := newEngineWithSource(t)
	for _, c := range []struct{ sql, want string }{
		{"SELECT count(*) FROM t", "2"},
		{"SELECT count(*) FROM cachedb.t", "2"},
		{"SELECT count(*) FROM events", "3"},
		{"SELECT count(*) FROM lake.events", "3"},
		{"SELECT count(*) FROM LAKE.events WHERE kind = 'x'", "2"},
		{"SELECT events.id FROM lake.events WHERE id = 2", "2"},
		{"SELECT count(*) FROM t JOIN lake.events e ON t.a = e.id", "2"},
	} {
		got := strings.Join(rows(t, e, c.sql), ";")
		if got != c.want {
			t.Errorf("%s: got %s, want %s", c.sql, got, c.want)
		}
	}
}

func TestWritesToSourceCatalogsAreRefused(t *testing.T) {
	e := newEngineWithSource(t)
	for _, q := range []string{
		"CREATE TABLE lake.x (a BIGINT)",
		"INSERT INTO lake.events VALUES (9, 'z')",
		"DELETE FROM lake.events",
		"UPDATE lake.events SET id = 0",
		"DROP TABLE lake.events",
		"CREATE TABLE ns.x AS SELECT 1",
	} {
		_, err := e.Execute(context.Background(), q, nil)
		if errs.CategoryOf(err) != errs.Unsupported || !strings.Contains(err.Error(), "read-only") {
			t.Errorf("%s: want a read-only error, got %v", q, err)
		}
	}
	if got := strings.Join(rows(t, e, "SELECT count(*) FROM lake.events"), ";"); got != "3" {
		t.Errorf("source table changed: %s rows", got)
	}
	// Writes to the engine's own catalog still work, qualified or not.
	run(t, e, "INSERT INTO cachedb.t VALUES (3)")
	if got := strings.Join(rows(t, e, "SELECT count(*) FROM t"), ";"); got != "3" {
		t.Errorf("after insert: %s", got)
	}
}

func TestNoPushdownGivesTheSameAnswers(t *testing.T) {
	for _, noPushdown := range []bool{false, true} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		e, err := New(Config{NoDemo: true, Alloc: mem, NoPushdown: noPushdown, BatchSize: 3})
		if err != nil {
			t.Fatal(err)
		}
		run(t, e, "CREATE TABLE w (a BIGINT, b VARCHAR(5), c INT, d DOUBLE)")
		run(t, e, "INSERT INTO w VALUES (1, 'x', 10, 0.5), (2, 'y', 20, 1.5), (3, 'x', 30, 2.5), (4, NULL, 40, 3.5)")
		before := mem.CurrentAlloc() // the table's own batches
		got := strings.Join(rows(t, e, "SELECT d, a FROM w WHERE c >= 20 AND b = 'x' OR a = 4 ORDER BY a"), ";")
		if got != "2.5,3;3.5,4" {
			t.Errorf("NoPushdown=%v: got %s", noPushdown, got)
		}
		plan := strings.Join(rows(t, e, "EXPLAIN SELECT d FROM w WHERE a > 1"), "\n")
		if strings.Contains(plan, "Scan: w [a, b, c, d]") != noPushdown {
			t.Errorf("NoPushdown=%v: plan\n%s", noPushdown, plan)
		}
		if leaked := mem.CurrentAlloc() - before; leaked != 0 {
			t.Errorf("NoPushdown=%v: queries leaked %d bytes", noPushdown, leaked)
		}
	}
}

// Sources store narrow types (Iceberg int and float); queries see them widened to the engine's
// canonical int64 and float64, in the plan and in the batches alike.
func TestNarrowColumnTypesAreWidened(t *testing.T) {
	ctx := context.Background()
	e := newTestEngine(t)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	}, nil)
	tbl, err := e.Catalog().CreateTable(ctx, "narrow", schema, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	b.Field(0).(*array.Int32Builder).AppendValues([]int32{7, 8}, nil)
	b.Field(1).(*array.Float32Builder).AppendValues([]float32{0.5, 1.5}, nil)
	rec := b.NewRecordBatch()
	b.Release()
	if err := tbl.(catalog.InsertableTable).Append(ctx, rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	res := run(t, e, "SELECT * FROM narrow WHERE i > 7")
	defer res.Reader.Release()
	if got := res.Schema.Field(0).Type; got.ID() != arrow.INT64 {
		t.Errorf("i is %s, want int64", got)
	}
	n := 0
	for res.Reader.Next() {
		n += int(res.Reader.RecordBatch().NumRows())
	}
	if err := res.Reader.Err(); err != nil || n != 1 {
		t.Errorf("rows=%d err=%v", n, err)
	}
}

func TestExplainAnalyzeMeasuresTheWholeTableScan(t *testing.T) {
	e, err := New(Config{NoDemo: true, NoPushdown: true})
	if err != nil {
		t.Fatal(err)
	}
	run(t, e, "CREATE TABLE w (a BIGINT, b BIGINT)")
	run(t, e, "INSERT INTO w VALUES (1, 2), (3, 4)")
	plan := strings.Join(rows(t, e, "EXPLAIN ANALYZE SELECT a FROM w WHERE b > 2"), "\n")
	for _, line := range strings.Split(plan, "\n") {
		if strings.HasPrefix(line, "analyzed_plan") && strings.Contains(line, "Scan: w") && !strings.Contains(line, "rows=1 ") {
			t.Errorf("the scan is not measured: %s", line)
		}
	}
}
