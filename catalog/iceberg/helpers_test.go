package iceberg

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/cachedb/cachedb/catalog"
)

// lake is a warehouse written by iceberg-go itself: a SQL catalog in a SQLite file and a local
// data directory, as the tests' writer sees it.
type lake struct {
	t         testing.TB
	dir       string
	dbPath    string
	name      string // the catalog name rows are stored under
	w         *sqlcat.Catalog
	namespace map[string]bool
}

func newLake(t testing.TB, storedName string) *lake {
	return newLakeAt(t, storedName, "", nil)
}

// newLakeAt is newLake with the warehouse at location (a local one when empty) and extra
// writer properties (object-store settings).
func newLakeAt(t testing.TB, storedName, location string, props iceberg.Properties) *lake {
	t.Helper()
	dir := t.TempDir()
	l := &lake{t: t, dir: dir, dbPath: filepath.Join(dir, "catalog.db"), name: storedName, namespace: map[string]bool{}}
	db, err := sql.Open(sqliteshim.ShimName, "file:"+l.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if location == "" {
		location = "file://" + filepath.Join(dir, "warehouse")
	}
	all := iceberg.Properties{"warehouse": location, "init_catalog_tables": "true"}
	for k, v := range props {
		all[k] = v
	}
	l.w, err = sqlcat.NewCatalog(storedName, db, sqlcat.SQLite, all)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func (l *lake) create(ns, name string, sc *iceberg.Schema, opts ...icecat.CreateTableOpt) *table.Table {
	l.t.Helper()
	ctx := context.Background()
	if !l.namespace[ns] {
		if err := l.w.CreateNamespace(ctx, strings.Split(ns, "."), nil); err != nil {
			l.t.Fatal(err)
		}
		l.namespace[ns] = true
	}
	tbl, err := l.w.CreateTable(ctx, append(strings.Split(ns, "."), name), sc, opts...)
	if err != nil {
		l.t.Fatal(err)
	}
	return tbl
}

// reader opens the lake as cachedb does.
func (l *lake) reader(cfg Config) *Catalog {
	l.t.Helper()
	if cfg.Name == "" {
		cfg.Name = "lake"
	}
	if cfg.Type == "" {
		cfg.Type = TypeSQL
	}
	if cfg.URI == "" {
		cfg.URI = l.dbPath
	}
	if cfg.Properties == nil {
		cfg.Properties = map[string]string{}
	}
	if _, ok := cfg.Properties[PropCatalogName]; !ok && l.name != cfg.Name {
		cfg.Properties[PropCatalogName] = l.name
	}
	c, err := Open(context.Background(), cfg)
	if err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(func() { _ = c.Close() })
	return c
}

// appendJSON appends rows given as a JSON array of objects, one snapshot.
func appendJSON(t testing.TB, tbl *table.Table, rows string) *table.Table {
	t.Helper()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer at.Release()
	out, err := tbl.AppendTable(context.Background(), at, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Snapshot timestamps have millisecond resolution; keep consecutive commits apart.
	time.Sleep(3 * time.Millisecond)
	return out
}

func field(id int, name string, typ iceberg.Type, required bool) iceberg.NestedField {
	return iceberg.NestedField{ID: id, Name: name, Type: typ, Required: required}
}

// scanResult is what a scan returned.
type scanResult struct {
	plan *catalog.ScanPlan
	rows []string // each row's values, formatted and joined with "|", sorted
	sch  *arrow.Schema
}

func scan(t testing.TB, tbl catalog.Table, req catalog.ScanRequest) scanResult {
	t.Helper()
	res, err := tryScan(tbl, req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// tryScan plans and reads every task with a checked allocator and fails the test on leaks.
func tryScan(tbl catalog.Table, req catalog.ScanRequest) (scanResult, error) {
	return tryScanCtx(context.Background(), tbl, req)
}

// tryScanCtx is tryScan under ctx.
func tryScanCtx(ctx context.Context, tbl catalog.Table, req catalog.ScanRequest) (scanResult, error) {
	plan, err := tbl.Scan(ctx, req)
	if err != nil {
		return scanResult{}, err
	}
	res := scanResult{plan: plan}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	for _, task := range plan.Tasks {
		rdr, err := task.Open(ctx, mem)
		if err != nil {
			return res, err
		}
		res.sch = rdr.Schema()
		for rdr.Next() {
			rec := rdr.RecordBatch()
			if !rec.Schema().Equal(rdr.Schema()) {
				rdr.Release()
				return res, fmt.Errorf("batch schema %s differs from reader schema %s", rec.Schema(), rdr.Schema())
			}
			res.rows = append(res.rows, formatRows(rec)...)
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return res, err
		}
	}
	if n := mem.CurrentAlloc(); n != 0 {
		return res, fmt.Errorf("%d bytes leaked", n)
	}
	slices.Sort(res.rows)
	return res, nil
}

func formatRows(rec arrow.RecordBatch) []string {
	out := make([]string, rec.NumRows())
	for r := range out {
		vals := make([]string, rec.NumCols())
		for c := range vals {
			col := rec.Column(c)
			if col.IsNull(r) {
				vals[c] = "NULL"
			} else {
				vals[c] = col.ValueStr(r)
			}
		}
		out[r] = strings.Join(vals, "|")
	}
	return out
}

func equalRows(t testing.TB, got []string, want ...string) {
	t.Helper()
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("rows:\n got %q\nwant %q", got, want)
	}
}

// explainValue returns the value of key in an Explain line.
func explainValue(t testing.TB, explain, key string) string {
	t.Helper()
	for _, kv := range strings.Fields(explain) {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	t.Fatalf("explain %q has no %s", explain, key)
	return ""
}

// ratio parses "kept/total".
func ratio(t testing.TB, s string) (int, int) {
	t.Helper()
	var kept, total int
	if _, err := fmt.Sscanf(s, "%d/%d", &kept, &total); err != nil {
		t.Fatalf("%q is not kept/total: %v", s, err)
	}
	return kept, total
}

// fetchedBytes parses bytes_fetched from a plan's Fetched.
func fetchedBytes(t testing.TB, plan *catalog.ScanPlan) int64 {
	t.Helper()
	var n, reqs int64
	if _, err := fmt.Sscanf(plan.Fetched(), "bytes_fetched=%d requests=%d", &n, &reqs); err != nil {
		t.Fatalf("Fetched %q: %v", plan.Fetched(), err)
	}
	return n
}

// unavailable skips a test whose outside parts (a Java REST server, a Python with pyiceberg) are
// not installed, except under `make test` (CACHEDB_REQUIRE_ALL set), which installs them and
// where a missing part is a failure, not a silent skip.
func unavailable(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CACHEDB_REQUIRE_ALL") != "" {
		t.Fatal(why + " (CACHEDB_REQUIRE_ALL is set: `make test` installs it)")
	}
	t.Skip(why)
}

// keepRows applies a filter to formatted rows ("a|b|c") as the engine would after a scan: a
// source may return rows its filter does not keep (catalog.ScanRequest).
func keepRows(rows []string, keep func(cols []string) bool) []string {
	var out []string
	for _, r := range rows {
		if keep(strings.Split(r, "|")) {
			out = append(out, r)
		}
	}
	return out
}

// colIs keeps the rows whose column i formats as v.
func colIs(i int, v string) func([]string) bool {
	return func(cols []string) bool { return cols[i] == v }
}
