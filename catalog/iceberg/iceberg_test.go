package iceberg

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/internal/errs"
)

func plainSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		field(1, "id", iceberg.PrimitiveTypes.Int64, true),
		field(2, "name", iceberg.PrimitiveTypes.String, false),
		field(3, "score", iceberg.PrimitiveTypes.Float64, false),
	)
}

func TestScanUnpartitioned(t *testing.T) {
	l := newLake(t, "lake")
	tbl := l.create("default", "plain", plainSchema())
	tbl = appendJSON(t, tbl, `[{"id":1,"name":"a","score":1.5},{"id":2,"name":"b","score":null}]`)
	tbl = appendJSON(t, tbl, `[{"id":3,"name":"c","score":3.5}]`)
	c := l.reader(Config{})

	got, err := c.Table(context.Background(), "plain")
	if err != nil {
		t.Fatal(err)
	}
	if got.Name() != "default.plain" {
		t.Errorf("Name = %q", got.Name())
	}
	want := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	if !got.Schema().Equal(want) {
		t.Fatalf("schema %s, want %s", got.Schema(), want)
	}

	all := scan(t, got, catalog.ScanRequest{})
	equalRows(t, all.rows, "1|a|1.5", "2|b|NULL", "3|c|3.5")
	snap := strconv.FormatInt(tbl.CurrentSnapshot().SnapshotID, 10)
	if v := explainValue(t, all.plan.Explain, "snapshot"); v != snap {
		t.Errorf("explain snapshot=%s, want %s (%s)", v, snap, all.plan.Explain)
	}
	if kept, total := ratio(t, explainValue(t, all.plan.Explain, "files")); kept != 2 || total != 2 {
		t.Errorf("explain %q: want files=2/2", all.plan.Explain)
	}
	if explainValue(t, all.plan.Explain, "delete_files") != "0" {
		t.Errorf("explain %q: want delete_files=0", all.plan.Explain)
	}
	if len(all.plan.Tasks) != 2 {
		t.Errorf("%d tasks, want one per data file (2)", len(all.plan.Tasks))
	}
	for _, task := range all.plan.Tasks {
		if n := task.EstimatedRows(); n != 1 && n != 2 {
			t.Errorf("EstimatedRows = %d", n)
		}
		sized, ok := task.(catalog.SizedTask)
		if !ok || sized.EstimatedBytes() <= 0 {
			t.Errorf("task does not report the bytes it reads (%T)", task)
		}
	}
	allBytes := fetchedBytes(t, all.plan)
	if allBytes <= 0 {
		t.Fatalf("Fetched %q: want bytes > 0", all.plan.Fetched())
	}
	planned, _ := strconv.ParseInt(explainValue(t, all.plan.Explain, "bytes_planned"), 10, 64)
	if planned <= 0 {
		t.Errorf("explain %q: want bytes_planned > 0", all.plan.Explain)
	}

	// Projection in a requested order, with the declared types.
	proj := scan(t, got, catalog.ScanRequest{Columns: []int{2, 0}})
	equalRows(t, proj.rows, "1.5|1", "NULL|2", "3.5|3")
	if proj.sch.NumFields() != 2 || proj.sch.Field(0).Name != "score" || proj.sch.Field(1).Name != "id" {
		t.Errorf("projected schema %s", proj.sch)
	}
	one := scan(t, got, catalog.ScanRequest{Columns: []int{0}})
	if b := fetchedBytes(t, one.plan); b <= 0 || b >= allBytes {
		t.Errorf("one column fetched %d bytes, all columns %d: want 0 < one < all", b, allBytes)
	}
	onePlanned, _ := strconv.ParseInt(explainValue(t, one.plan.Explain, "bytes_planned"), 10, 64)
	if onePlanned <= 0 || onePlanned >= planned {
		t.Errorf("bytes_planned one column %d, all %d", onePlanned, planned)
	}

	// No columns (count(*)): rows without columns.
	none := scan(t, got, catalog.ScanRequest{Columns: []int{}})
	if len(none.rows) != 3 || none.sch.NumFields() != 0 {
		t.Errorf("empty projection: %d rows, schema %s", len(none.rows), none.sch)
	}

	// A filter the engine would apply anyway: the rows it keeps are all there.
	f := scan(t, got, catalog.ScanRequest{Filter: catalog.Filter{{{Column: 0, Op: catalog.OpGtEq, Values: []scalar.Scalar{scalar.NewInt64Scalar(2)}}}}})
	for _, r := range []string{"2|b|NULL", "3|c|3.5"} {
		if !contains(f.rows, r) {
			t.Errorf("filtered scan lost row %s: %q", r, f.rows)
		}
	}
}

func contains(rows []string, r string) bool {
	for _, x := range rows {
		if x == r {
			return true
		}
	}
	return false
}

func TestLimitStopsEarly(t *testing.T) {
	l := newLake(t, "lake")
	tbl := l.create("default", "plain", plainSchema())
	for i := 0; i < 4; i++ {
		tbl = appendJSON(t, tbl, `[{"id":`+strconv.Itoa(2*i)+`,"name":"x"},{"id":`+strconv.Itoa(2*i+1)+`,"name":"y"}]`)
	}
	got, err := l.reader(Config{}).Table(context.Background(), "default.plain")
	if err != nil {
		t.Fatal(err)
	}
	res := scan(t, got, catalog.ScanRequest{Limit: 3})
	if len(res.plan.Tasks) != 2 {
		t.Errorf("limit 3 over files of 2 rows planned %d tasks, want 2", len(res.plan.Tasks))
	}
	if kept, total := ratio(t, explainValue(t, res.plan.Explain, "files")); kept != 2 || total != 4 {
		t.Errorf("explain %q: want files=2/4", res.plan.Explain)
	}
	if len(res.rows) < 3 {
		t.Errorf("limit 3 returned %d rows", len(res.rows))
	}
}

func TestTimeTravel(t *testing.T) {
	ctx := context.Background()
	l := newLake(t, "lake")
	tbl := l.create("sales", "orders", plainSchema())
	tbl = appendJSON(t, tbl, `[{"id":1,"name":"a"}]`)
	first := tbl.CurrentSnapshot()
	time.Sleep(5 * time.Millisecond)
	between := time.Now().UTC()
	time.Sleep(5 * time.Millisecond)
	tbl = appendJSON(t, tbl, `[{"id":2,"name":"b"}]`)
	second := tbl.CurrentSnapshot()

	// Tag the first snapshot and branch off it.
	for _, ref := range []struct {
		name string
		typ  table.RefType
	}{{"v1", table.TagRef}, {"audit", table.BranchRef}} {
		upd := table.NewSetSnapshotRefUpdate(ref.name, first.SnapshotID, ref.typ, 0, 0, 0)
		if _, _, err := l.w.CommitTable(ctx, tbl.Identifier(), nil, []table.Update{upd}); err != nil {
			t.Fatal(err)
		}
	}

	c := l.reader(Config{})
	current, err := c.Table(ctx, "sales.orders")
	if err != nil {
		t.Fatal(err)
	}
	fmtTS := func(ts time.Time, layout string) string { return ts.Format(layout) }
	cases := []struct {
		version string
		rows    []string
		snap    int64
	}{
		{"", []string{"1|a|NULL", "2|b|NULL"}, second.SnapshotID},
		{strconv.FormatInt(first.SnapshotID, 10), []string{"1|a|NULL"}, first.SnapshotID},
		{strconv.FormatInt(second.SnapshotID, 10), []string{"1|a|NULL", "2|b|NULL"}, second.SnapshotID},
		{fmtTS(between, time.RFC3339Nano), []string{"1|a|NULL"}, first.SnapshotID},
		{fmtTS(between, "2006-01-02 15:04:05.000"), []string{"1|a|NULL"}, first.SnapshotID},
		{fmtTS(time.Now().UTC().Add(time.Hour), "2006-01-02T15:04:05"), []string{"1|a|NULL", "2|b|NULL"}, second.SnapshotID},
		{"v1", []string{"1|a|NULL"}, first.SnapshotID},
		{"V1", []string{"1|a|NULL"}, first.SnapshotID},
		{"audit", []string{"1|a|NULL"}, first.SnapshotID},
		{"main", []string{"1|a|NULL", "2|b|NULL"}, second.SnapshotID},
	}
	for _, tc := range cases {
		name := "sales.orders"
		if tc.version != "" {
			name += "@" + tc.version
		}
		got, err := c.Table(ctx, name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if id := got.(*Table).SnapshotID(); id != tc.snap {
			t.Errorf("%s: snapshot %d, want %d", name, id, tc.snap)
		}
		res := scan(t, got, catalog.ScanRequest{})
		equalRows(t, res.rows, tc.rows...)
		if v := explainValue(t, res.plan.Explain, "snapshot"); v != strconv.FormatInt(tc.snap, 10) {
			t.Errorf("%s: explain %q", name, res.plan.Explain)
		}
	}

	for _, bad := range []string{"12345", "nosuchref", "2001-01-01", "2001-01-01 10:00:00"} {
		_, err := c.Table(ctx, "sales.orders@"+bad)
		if errs.CategoryOf(err) != errs.NotFound || !strings.Contains(err.Error(), "lake.sales.orders") || !strings.Contains(err.Error(), bad) {
			t.Errorf("@%s: %v, want NotFound naming the table and the version", bad, err)
		}
	}

	// A resolved table stays pinned: a later commit is invisible to its scans.
	appendJSON(t, tbl, `[{"id":3,"name":"c"}]`)
	res := scan(t, current, catalog.ScanRequest{})
	equalRows(t, res.rows, "1|a|NULL", "2|b|NULL")
	again, err := c.Table(ctx, "sales.orders")
	if err != nil {
		t.Fatal(err)
	}
	equalRows(t, scan(t, again, catalog.ScanRequest{}).rows, "1|a|NULL", "2|b|NULL", "3|c|NULL")
}

func TestNames(t *testing.T) {
	ctx := context.Background()
	// Rows stored under catalog name "default", as pyiceberg's SqlCatalog("default") writes
	// them; cachedb calls the catalog "lake".
	l := newLake(t, "default")
	appendJSON(t, l.create("Sales", "Orders", plainSchema()), `[{"id":1}]`)
	appendJSON(t, l.create("default", "events", plainSchema()), `[{"id":2}]`)
	appendJSON(t, l.create("a.b", "deep", plainSchema()), `[{"id":3}]`)

	c := l.reader(Config{Properties: map[string]string{PropCatalogName: "default"}})
	names, err := c.TableNames(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(names, ",") != "Sales.Orders,a.b.deep,default.events" {
		t.Errorf("TableNames = %q", names)
	}
	nss, err := c.Namespaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(nss, ",") != "Sales,a.b,default" {
		t.Errorf("Namespaces = %q", nss)
	}
	in, err := c.TablesIn(ctx, "sales")
	if err != nil || strings.Join(in, ",") != "Orders" {
		t.Errorf("TablesIn(sales) = %q, %v", in, err)
	}
	if _, err := c.TablesIn(ctx, "nope"); errs.CategoryOf(err) != errs.NotFound {
		t.Errorf("TablesIn(nope): %v, want NotFound", err)
	}
	for name, want := range map[string]string{
		"Sales.Orders": "1|NULL|NULL", "sales.orders": "1|NULL|NULL", "SALES.ORDERS@main": "1|NULL|NULL",
		"events": "2|NULL|NULL", "EVENTS": "2|NULL|NULL", "a.b.deep": "3|NULL|NULL", "A.B.Deep": "3|NULL|NULL",
	} {
		tbl, err := c.Table(ctx, name)
		if err != nil {
			t.Errorf("Table(%s): %v", name, err)
			continue
		}
		equalRows(t, scan(t, tbl, catalog.ScanRequest{}).rows, want)
	}
	if tbl, _ := c.Table(ctx, "sales.orders"); tbl.Name() != "Sales.Orders" {
		t.Errorf("case-insensitive match named %q, want the stored spelling", tbl.Name())
	}
	for _, name := range []string{"nope", "sales.nope", "nope.orders", "orders"} {
		_, err := c.Table(ctx, name)
		if errs.CategoryOf(err) != errs.NotFound || !strings.Contains(err.Error(), "lake") {
			t.Errorf("Table(%s): %v, want NotFound naming the catalog", name, err)
		}
	}

	// Without catalog-name the rows stored under "default" are not this catalog's.
	other := l.reader(Config{Properties: map[string]string{PropCatalogName: "lake"}})
	if names, err := other.TableNames(ctx); err != nil || len(names) != 0 {
		t.Errorf("catalog-name lake: TableNames = %q, %v; want none", names, err)
	}
}

func TestSQLURIForms(t *testing.T) {
	ctx := context.Background()
	l := newLake(t, "lake")
	appendJSON(t, l.create("default", "plain", plainSchema()), `[{"id":1}]`)
	for _, uri := range []string{
		l.dbPath,
		"file:" + l.dbPath,
		"file://" + l.dbPath,
		"sqlite:///" + l.dbPath, // sqlite:////abs/path.db
		"sqlite:///" + strings.TrimPrefix(l.dbPath, "/"), // sqlite:///abs/path.db, meaning /abs/path.db
	} {
		c := l.reader(Config{URI: uri})
		names, err := c.TableNames(ctx)
		if err != nil || len(names) != 1 || names[0] != "default.plain" {
			t.Errorf("uri %s: TableNames = %q, %v", uri, names, err)
		}
	}
	for _, uri := range []string{"postgres://u:pw@127.0.0.1:1/db", "postgresql://127.0.0.1:1/db"} {
		got, err := parseSQLURI(uri)
		if err != nil || got.driver != "pgx" || got.dialect != "postgres" {
			t.Errorf("parseSQLURI(%s) = %+v, %v", uri, got, err)
		}
	}
	if _, err := parseSQLURI("mysql://h/db"); err == nil {
		t.Error("mysql:// accepted")
	}
}

func TestEmptyTable(t *testing.T) {
	l := newLake(t, "lake")
	l.create("default", "empty", plainSchema())
	got, err := l.reader(Config{}).Table(context.Background(), "empty")
	if err != nil {
		t.Fatal(err)
	}
	res := scan(t, got, catalog.ScanRequest{Filter: eq(0, scalar.NewInt64Scalar(1))})
	if len(res.plan.Tasks) != 0 || len(res.rows) != 0 || res.plan.Explain != "snapshot=none files=0/0 delete_files=0 bytes_planned=0" {
		t.Errorf("empty table: %d tasks, explain %q", len(res.plan.Tasks), res.plan.Explain)
	}
	if got.Schema().NumFields() != 3 {
		t.Errorf("schema %s", got.Schema())
	}
}
