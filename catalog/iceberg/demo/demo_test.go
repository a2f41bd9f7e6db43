package demo

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/cachedb/cachedb/catalog"
	cdbiceberg "github.com/cachedb/cachedb/catalog/iceberg"
	"github.com/cachedb/cachedb/internal/errs"
)

// shared is one warehouse that the read-only tests share, generated on first use.
var shared struct {
	once sync.Once
	dir  string
	wh   Warehouse
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

func sharedWarehouse(t *testing.T) Warehouse {
	t.Helper()
	shared.once.Do(func() {
		if shared.dir, shared.err = os.MkdirTemp("", "demo-warehouse-"); shared.err == nil {
			shared.wh, shared.err = Ensure(context.Background(), shared.dir)
		}
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.wh
}

// loadRides opens the warehouse's catalog the way a reader does (without creating catalog
// tables) and loads demo.rides.
func loadRides(t *testing.T, wh Warehouse) *table.Table {
	t.Helper()
	path, ok := strings.CutPrefix(wh.CatalogURI, "sqlite:///")
	if !ok || !filepath.IsAbs(path) {
		t.Fatalf("CatalogURI %q is not sqlite:////absolute/path", wh.CatalogURI)
	}
	db, err := sql.Open(sqliteshim.ShimName, "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cat, err := sqlcat.NewCatalog(wh.CatalogName, db, sqlcat.SQLite, iceberg.Properties{
		"warehouse": wh.Warehouse, "init_catalog_tables": "false",
	})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(context.Background(), table.Identifier{wh.Namespace, wh.Tables[0]})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// scanRows reads the scan and returns its row count and the batches' ride ids.
func scanRows(t *testing.T, scan *table.Scan) (int, []int64) {
	t.Helper()
	_, it, err := scan.ToArrowRecords(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	n := 0
	for rec, err := range it {
		if err != nil {
			t.Fatal(err)
		}
		n += int(rec.NumRows())
		if idx := rec.Schema().FieldIndices("ride_id"); len(idx) == 1 {
			ids = append(ids, rec.Column(idx[0]).(*array.Int64).Int64Values()...)
		}
		rec.Release()
	}
	return n, ids
}

func genDirs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), genPrefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

func initialRows() int {
	n := 0
	for _, c := range dayRideCounts()[:InitialDays] {
		n += c
	}
	return n
}

func TestEnsureCreatesTheRidesTable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	start := time.Now()
	wh, err := Ensure(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("generated in %v", time.Since(start).Round(time.Millisecond))

	if wh.CatalogName != "demo" || wh.Namespace != "demo" || !slices.Equal(wh.Tables, []string{"rides"}) {
		t.Fatalf("unexpected warehouse %+v", wh)
	}
	if !strings.HasPrefix(wh.CatalogURI, "sqlite:////") || !strings.HasPrefix(wh.Warehouse, "file:///") {
		t.Fatalf("want absolute sqlite:////… and file:///… locations, got %+v", wh)
	}
	if !strings.HasPrefix(strings.TrimPrefix(wh.CatalogURI, "sqlite:///"), dir+string(filepath.Separator)) {
		t.Fatalf("catalog %s is not under %s", wh.CatalogURI, dir)
	}

	tbl := loadRides(t, wh)
	if !strings.HasPrefix(tbl.MetadataLocation(), wh.Warehouse+"/demo.db/rides/metadata/") {
		t.Fatalf("metadata %s is not under the warehouse %s", tbl.MetadataLocation(), wh.Warehouse)
	}
	if got := tbl.Properties()[table.ParquetRowGroupLimitKey]; got != "1024" {
		t.Fatalf("row-group limit property = %q", got)
	}

	// Two snapshots: the initial load (tagged) and the second append.
	snaps := tbl.Metadata().Snapshots()
	if len(snaps) != 2 {
		t.Fatalf("want 2 snapshots, got %d", len(snaps))
	}
	tag := tbl.Metadata().SnapshotByName(InitialTag)
	if tag == nil || tag.SnapshotID != snaps[0].SnapshotID {
		t.Fatalf("tag %s should name the first snapshot %d, got %+v", InitialTag, snaps[0].SnapshotID, tag)
	}
	if cur := tbl.CurrentSnapshot(); cur.SnapshotID != snaps[1].SnapshotID || cur.ParentSnapshotID == nil || *cur.ParentSnapshotID != snaps[0].SnapshotID {
		t.Fatalf("current snapshot should be the second append, child of the first")
	}

	// The current snapshot holds every row, ride ids 1..RidesRows exactly once.
	n, ids := scanRows(t, tbl.Scan(table.WithSelectedFields("ride_id")))
	if n != RidesRows {
		t.Fatalf("current snapshot has %d rows, want %d", n, RidesRows)
	}
	slices.Sort(ids)
	for i, id := range ids {
		if id != int64(i+1) {
			t.Fatalf("ride ids are not 1..%d: position %d holds %d", RidesRows, i, id)
		}
	}
	// Time travel: the first snapshot holds only the initial days.
	n, _ = scanRows(t, tbl.Scan(table.WithSnapshotID(snaps[0].SnapshotID), table.WithSelectedFields("ride_id")))
	if want := initialRows(); n != want || n >= RidesRows || n < RidesRows/2 {
		t.Fatalf("first snapshot has %d rows, want %d", n, want)
	}

	// A second Ensure finds the published warehouse: same catalog, same metadata, no new
	// generation, and quickly.
	start = time.Now()
	again, err := Ensure(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if again.CatalogURI != wh.CatalogURI || again.Warehouse != wh.Warehouse {
		t.Fatalf("second Ensure returned %+v, first %+v", again, wh)
	}
	if loc := loadRides(t, again).MetadataLocation(); loc != tbl.MetadataLocation() {
		t.Fatalf("second Ensure changed the metadata: %s, was %s", loc, tbl.MetadataLocation())
	}
	if gens := genDirs(t, dir); len(gens) != 1 {
		t.Fatalf("want one generation directory, got %v", gens)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("second Ensure took %v: it should only look the warehouse up", d)
	}
}

func TestPruning(t *testing.T) {
	ctx := context.Background()
	tbl := loadRides(t, sharedWarehouse(t))

	all, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != RidesDays {
		t.Fatalf("want one data file per day (%d), got %d", RidesDays, len(all))
	}
	// pickup_at >= 2026-01-20: the partition filter keeps days 20..30.
	from := iceberg.Timestamp(time.Date(2026, 1, 20, 0, 0, 0, 0, time.UTC).UnixMicro())
	late, err := tbl.Scan(table.WithRowFilter(iceberg.GreaterThanEqual(iceberg.Reference("pickup_at"), from))).PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := RidesDays - 19; len(late) != want {
		t.Fatalf("day-filtered plan has %d files, want %d of %d", len(late), want, len(all))
	}
	// ride_id increases with pickup time, so per-file bounds single out one file.
	one, err := tbl.Scan(table.WithRowFilter(iceberg.EqualTo(iceberg.Reference("ride_id"), int64(123_456)))).PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(one) != 1 {
		t.Fatalf("ride_id = 123456 plans %d files, want 1", len(one))
	}

	// Every file has several row groups, sorted by city, so a city filter can skip most of
	// them by their statistics.
	total, withLisbon := 0, 0
	for _, task := range all {
		path := strings.TrimPrefix(task.File.FilePath(), "file://")
		rdr, err := file.OpenParquetFile(path, false)
		if err != nil {
			t.Fatal(err)
		}
		md := rdr.MetaData()
		if md.NumRowGroups() < 3 {
			t.Fatalf("%s has %d row groups, want several", path, md.NumRowGroups())
		}
		col := md.Schema.ColumnIndexByName("city")
		prevMax := ""
		for i := range md.NumRowGroups() {
			rg := md.RowGroup(i)
			if rg.NumRows() > RowGroupRows {
				t.Fatalf("%s row group %d has %d rows, limit %d", path, i, rg.NumRows(), RowGroupRows)
			}
			cc, err := rg.ColumnChunk(col)
			if err != nil {
				t.Fatal(err)
			}
			st, err := cc.Statistics()
			if err != nil || st == nil || !st.HasMinMax() {
				t.Fatalf("%s row group %d: no city statistics (%v)", path, i, err)
			}
			bs := st.(*metadata.ByteArrayStatistics)
			lo, hi := string(bs.Min()), string(bs.Max())
			if lo < prevMax {
				t.Fatalf("%s is not sorted by city: row group %d starts at %q after %q", path, i, lo, prevMax)
			}
			prevMax = hi
			total++
			if lo <= "Lisbon" && "Lisbon" <= hi {
				withLisbon++
			}
		}
		rdr.Close()
	}
	t.Logf("%d of %d row groups may hold Lisbon", withLisbon, total)
	if withLisbon == 0 || withLisbon*3 > total {
		t.Fatalf("%d of %d row groups may hold Lisbon: city statistics should rule out most", withLisbon, total)
	}
}

func TestRidesData(t *testing.T) {
	tbl := loadRides(t, sharedWarehouse(t))
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	_, it, err := tbl.Scan().ToArrowRecords(compute.WithAllocator(context.Background(), mem))
	if err != nil {
		t.Fatal(err)
	}
	cities := map[string]int{}
	var rows, nullTips, labels int
	var f4Pos, f4Neg, nPos, nNeg float64
	first, last := int64(1<<62), int64(0)
	for rec, err := range it {
		if err != nil {
			t.Fatal(err)
		}
		col := func(name string) arrow.Array { return rec.Column(rec.Schema().FieldIndices(name)[0]) }
		city := col("city").(*array.String)
		at := col("pickup_at").(*array.Timestamp)
		tip := col("tip").(*array.Float64)
		label := col("label").(*array.Int32)
		f4 := col("f4").(*array.Float32)
		fare := col("fare").(*array.Decimal128)
		pass := col("passengers").(*array.Int32)
		for i := range int(rec.NumRows()) {
			rows++
			cities[city.Value(i)]++
			first, last = min(first, int64(at.Value(i))), max(last, int64(at.Value(i)))
			if tip.IsNull(i) {
				nullTips++
			}
			if fare.Value(i).LowBits() == 0 || pass.Value(i) < 1 || pass.Value(i) > 6 {
				t.Fatalf("implausible row: fare %v passengers %d", fare.Value(i), pass.Value(i))
			}
			if label.Value(i) == 1 {
				labels++
				f4Pos += float64(f4.Value(i))
				nPos++
			} else {
				f4Neg += float64(f4.Value(i))
				nNeg++
			}
		}
		rec.Release()
	}
	mem.AssertSize(t, 0)
	if rows != RidesRows {
		t.Fatalf("read %d rows, want %d", rows, RidesRows)
	}
	if len(cities) != len(Cities) {
		t.Fatalf("cities %v, want the %d of %v", cities, len(Cities), Cities)
	}
	if got, want := time.UnixMicro(first).UTC(), RidesStart; got.Before(want) || got.After(want.Add(time.Hour)) {
		t.Fatalf("first pickup %v, want shortly after %v", got, want)
	}
	if got, end := time.UnixMicro(last).UTC(), RidesStart.AddDate(0, 0, RidesDays); !got.Before(end) || got.Before(end.Add(-time.Hour)) {
		t.Fatalf("last pickup %v, want shortly before %v", got, end)
	}
	if share := float64(nullTips) / float64(rows); share < 0.03 || share > 0.12 {
		t.Fatalf("NULL tip share %.3f, want about 0.07", share)
	}
	if share := float64(labels) / float64(rows); share < 0.2 || share > 0.8 {
		t.Fatalf("label share %.3f is too unbalanced to train on", share)
	}
	if f4Pos/nPos-f4Neg/nNeg < 0.5 {
		t.Fatalf("label is not correlated with f4: mean %.3f when 1, %.3f when 0", f4Pos/nPos, f4Neg/nNeg)
	}
}

func TestGeneratorIsDeterministic(t *testing.T) {
	a, b := newRidesGen(), newRidesGen()
	for d := range 3 {
		if !slices.Equal(a.day(d), b.day(d)) {
			t.Fatalf("day %d differs between two generators", d)
		}
	}
	if !slices.Equal(newRidesGen().day(0), newRidesGen().day(0)) || slices.Equal(newRidesGen().day(0), a.day(3)) {
		t.Fatal("days must be reproducible and differ from each other")
	}
	counts := dayRideCounts()
	sum := 0
	for _, c := range counts {
		sum += c
	}
	if sum != RidesRows || len(counts) != RidesDays {
		t.Fatalf("day counts sum to %d over %d days", sum, len(counts))
	}
}

func TestConcurrentEnsureAgrees(t *testing.T) {
	dir := t.TempDir()
	const n = 3
	var (
		wg     sync.WaitGroup
		whs    [n]Warehouse
		errors [n]error
	)
	for i := range n {
		wg.Go(func() { whs[i], errors[i] = Ensure(context.Background(), dir) })
	}
	wg.Wait()
	for i := range n {
		if errors[i] != nil {
			t.Fatal(errors[i])
		}
		if whs[i].CatalogURI != whs[0].CatalogURI {
			t.Fatalf("concurrent Ensure calls disagree: %s and %s", whs[i].CatalogURI, whs[0].CatalogURI)
		}
	}
	if gens := genDirs(t, dir); len(gens) != 1 {
		t.Fatalf("losing generations were not removed: %v", gens)
	}
	if n, _ := scanRows(t, loadRides(t, whs[0]).Scan(table.WithSelectedFields("ride_id"))); n != RidesRows {
		t.Fatalf("published warehouse has %d rows", n)
	}
}

func TestEnsureRepairsAndCleansUp(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	wh, err := Ensure(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	// Someone deletes the generation: the dangling link is replaced by a new one.
	gen := filepath.Dir(strings.TrimPrefix(wh.CatalogURI, "sqlite:///"))
	if err := os.RemoveAll(gen); err != nil {
		t.Fatal(err)
	}
	// An abandoned generation from long ago, and one that may still be being written.
	old, fresh := filepath.Join(dir, genPrefix+"old"), filepath.Join(dir, genPrefix+"fresh")
	for _, d := range []string{old, fresh} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-2 * staleAfter)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}

	again, err := Ensure(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if again.CatalogURI == wh.CatalogURI {
		t.Fatal("the deleted generation was not regenerated")
	}
	if n, _ := scanRows(t, loadRides(t, again).Scan(table.WithSelectedFields("ride_id"))); n != RidesRows {
		t.Fatalf("regenerated warehouse has %d rows", n)
	}
	// The abandoned generation is removed when the published one is next looked up.
	if _, err := Ensure(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Fatalf("abandoned generation %s survived: %v", old, err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Fatalf("a recent generation must be left alone: %v", err)
	}
}

func TestEnsureRejectsEmptyDir(t *testing.T) {
	if _, err := Ensure(context.Background(), " "); err == nil {
		t.Fatal("want an error for an empty directory")
	}
}

func TestEnsureCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	if _, err := Ensure(ctx, dir); errs.CategoryOf(err) != errs.Canceled {
		t.Fatalf("want a canceled error, got %v", err)
	}
	if gens := genDirs(t, dir); len(gens) != 0 {
		t.Fatalf("a failed generation left %v behind", gens)
	}
	if _, err := os.Lstat(filepath.Join(dir, linkName)); !os.IsNotExist(err) {
		t.Fatalf("a failed generation was published: %v", err)
	}
}

// TestServedByCachedbCatalog opens the warehouse as `cachedb serve` does and checks that
// EXPLAIN's scan summary shows file pruning for a pickup_at range and row-group pruning for a
// city.
func TestServedByCachedbCatalog(t *testing.T) {
	ctx := context.Background()
	wh := sharedWarehouse(t)
	cat, err := cdbiceberg.Open(ctx, cdbiceberg.Config{
		Name: "local", Type: cdbiceberg.TypeSQL, URI: wh.CatalogURI, Warehouse: wh.Warehouse,
		DefaultNamespace: wh.Namespace,
		Properties:       map[string]string{cdbiceberg.PropCatalogName: wh.CatalogName},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	tbl, err := cat.Table(ctx, "rides")
	if err != nil {
		t.Fatal(err)
	}
	col := func(name string) int { return tbl.Schema().FieldIndices(name)[0] }
	field := func(summary, key string) string {
		for _, kv := range strings.Fields(summary) {
			if v, ok := strings.CutPrefix(kv, key+"="); ok {
				return v
			}
		}
		t.Fatalf("%q has no %s", summary, key)
		return ""
	}
	plan := func(f catalog.Filter) *catalog.ScanPlan {
		p, err := tbl.Scan(ctx, catalog.ScanRequest{Columns: []int{col("fare")}, Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%v: %s", f, p.Explain)
		return p
	}
	explain := func(f catalog.Filter) string { return plan(f).Explain }
	// run reads every task of the plan and returns the rows and the bytes fetched.
	run := func(p *catalog.ScanPlan) (rows, fetched int64) {
		mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
		defer mem.AssertSize(t, 0)
		for _, task := range p.Tasks {
			rdr, err := task.Open(ctx, mem)
			if err != nil {
				t.Fatal(err)
			}
			for rdr.Next() {
				rows += rdr.RecordBatch().NumRows()
			}
			if err := rdr.Err(); err != nil {
				t.Fatal(err)
			}
			rdr.Release()
		}
		fetched, err := strconv.ParseInt(field(p.Fetched(), "bytes_fetched"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("read %d rows: %s", rows, p.Fetched())
		return rows, fetched
	}
	all := explain(nil)
	if got := field(all, "files"); got != "30/30" {
		t.Fatalf("unfiltered scan plans files=%s", got)
	}
	late := explain(catalog.Filter{{{Column: col("pickup_at"), Op: catalog.OpGtEq, Values: []scalar.Scalar{scalar.NewStringScalar("2026-01-20")}}}})
	if got := field(late, "files"); got != "11/30" {
		t.Fatalf("pickup_at >= '2026-01-20' plans files=%s, want 11/30", got)
	}
	// Row groups are pruned by their city statistics when the tasks are read: reading Lisbon's
	// rides fetches less than a city filter that keeps every row group (both read city and
	// fare). Footers and whole-file tail fetches of these small files are shared overhead, so
	// the saving is well short of the 4/5 of row groups skipped.
	city := func(op catalog.CompareOp, v string) catalog.Filter {
		return catalog.Filter{{{Column: col("city"), Op: op, Values: []scalar.Scalar{scalar.NewStringScalar(v)}}}}
	}
	allRows, allBytes := run(plan(city(catalog.OpGtEq, "A")))
	lisbonRows, lisbonBytes := run(plan(city(catalog.OpEq, "Lisbon")))
	if allRows != RidesRows || lisbonRows >= allRows/2 || lisbonRows == 0 {
		t.Fatalf("read %d rows for Lisbon and %d in all", lisbonRows, allRows)
	}
	if lisbonBytes*4 > allBytes*3 {
		t.Fatalf("reading Lisbon fetched %d bytes, everything %d: row groups were not pruned", lisbonBytes, allBytes)
	}
	if v1, err := cat.Table(ctx, "rides@"+InitialTag); err != nil {
		t.Fatal(err)
	} else if plan, err := v1.Scan(ctx, catalog.ScanRequest{}); err != nil {
		t.Fatal(err)
	} else if got := field(plan.Explain, "files"); got != fmt.Sprintf("%d/%d", InitialDays, InitialDays) {
		t.Fatalf("the %s tag plans files=%s, want the %d initial days", InitialTag, got, InitialDays)
	}
}
