package iceberg

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/cachedb/cachedb/catalog"
)

func eventsSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		field(1, "id", iceberg.PrimitiveTypes.Int64, true),
		field(2, "region", iceberg.PrimitiveTypes.String, true),
		field(3, "ts", iceberg.PrimitiveTypes.Timestamp, true),
		field(4, "amount", iceberg.DecimalTypeOf(10, 2), false),
	)
}

// eventRows spreads 24 rows over regions eu/us/ap and days 2024-01-01..04.
func eventRows() string {
	var rows []string
	regions := []string{"eu", "us", "ap"}
	for i := 0; i < 24; i++ {
		rows = append(rows, fmt.Sprintf(`{"id":%d,"region":%q,"ts":"2024-01-0%d 10:00:00","amount":"%d.25"}`,
			i, regions[i%3], 1+i%4, i))
	}
	return "[" + strings.Join(rows, ",") + "]"
}

func eq(col int, v scalar.Scalar) catalog.Filter {
	return catalog.Filter{{{Column: col, Op: catalog.OpEq, Values: []scalar.Scalar{v}}}}
}

func TestPartitionPruning(t *testing.T) {
	ctx := context.Background()
	l := newLake(t, "lake")
	specs := map[string]iceberg.PartitionSpec{
		"by_region": iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "region", Transform: iceberg.IdentityTransform{}}),
		"by_day":    iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1000, Name: "ts_day", Transform: iceberg.DayTransform{}}),
		"by_bucket": iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "id_bucket", Transform: iceberg.BucketTransform{NumBuckets: 4}}),
	}
	for name, spec := range specs {
		appendJSON(t, l.create("default", name, eventsSchema(), icecat.WithPartitionSpec(&spec)), eventRows())
	}
	c := l.reader(Config{})
	day3 := arrow.Timestamp(1704240000000000) // 2024-01-03 00:00:00 UTC in µs
	cases := []struct {
		table  string
		filter catalog.Filter
		keep   func(cols []string) bool // the filter, on formatted rows
		rows   int
	}{
		{"by_region", eq(1, scalar.NewStringScalar("eu")), colIs(1, "eu"), 8},
		{"by_region", catalog.Filter{{{Column: 1, Op: catalog.OpIn, Values: []scalar.Scalar{scalar.NewStringScalar("eu"), scalar.NewStringScalar("ap")}}}}, func(c []string) bool { return c[1] != "us" }, 16},
		{"by_day", catalog.Filter{{{Column: 2, Op: catalog.OpGtEq, Values: []scalar.Scalar{scalar.NewTimestampScalar(day3, &arrow.TimestampType{Unit: arrow.Microsecond})}}}}, func(c []string) bool { return c[2] >= "2024-01-03" }, 12},
		{"by_day", catalog.Filter{{{Column: 2, Op: catalog.OpLt, Values: []scalar.Scalar{scalar.NewStringScalar("2024-01-02")}}}}, func(c []string) bool { return c[2] < "2024-01-02" }, 6},
		{"by_bucket", eq(0, scalar.NewInt64Scalar(5)), colIs(0, "5"), 1},
		{"by_bucket", eq(0, scalar.NewInt32Scalar(7)), colIs(0, "7"), 1},
	}
	for _, tc := range cases {
		tbl, err := c.Table(ctx, tc.table)
		if err != nil {
			t.Fatal(err)
		}
		unfiltered := scan(t, tbl, catalog.ScanRequest{})
		_, total := ratio(t, explainValue(t, unfiltered.plan.Explain, "files"))
		res := scan(t, tbl, catalog.ScanRequest{Filter: tc.filter})
		t.Logf("%s %s: %s %s", tc.table, tc.filter, res.plan.Explain, res.plan.Fetched())
		kept, total2 := ratio(t, explainValue(t, res.plan.Explain, "files"))
		if total2 != total || kept >= total || kept == 0 {
			t.Errorf("%s %s: explain %q, want files=k/%d with 0<k<%d", tc.table, tc.filter, res.plan.Explain, total, total)
		}
		if len(res.plan.Tasks) != kept {
			t.Errorf("%s: %d tasks for %d kept files", tc.table, len(res.plan.Tasks), kept)
		}
		// The kept files hold every matching row; the engine applies the filter to them.
		if n := len(keepRows(res.rows, tc.keep)); n != tc.rows || len(res.rows) >= len(unfiltered.rows) {
			t.Errorf("%s %s: %d rows of %d read match, want %d of fewer than %d", tc.table, tc.filter, n, len(res.rows), tc.rows, len(unfiltered.rows))
		}
		if fetchedBytes(t, res.plan) >= fetchedBytes(t, unfiltered.plan) {
			t.Errorf("%s: pruned scan fetched %s, full scan %s", tc.table, res.plan.Fetched(), unfiltered.plan.Fetched())
		}
	}
}

func TestStatsPruning(t *testing.T) {
	ctx := context.Background()
	l := newLake(t, "lake")
	tbl := l.create("default", "ranges", eventsSchema(), icecat.WithProperties(iceberg.Properties{
		table.ParquetRowGroupLimitKey: "4", // several row groups per file
	}))
	// Four files with disjoint id ranges, each of 8 rows in 2 row groups.
	for f := 0; f < 4; f++ {
		var rows []string
		for i := 0; i < 8; i++ {
			id := f*100 + i
			rows = append(rows, fmt.Sprintf(`{"id":%d,"region":"eu","ts":"2024-01-01 00:00:00","amount":"1.00"}`, id))
		}
		tbl = appendJSON(t, tbl, "["+strings.Join(rows, ",")+"]")
	}
	c := l.reader(Config{})
	got, err := c.Table(ctx, "ranges")
	if err != nil {
		t.Fatal(err)
	}
	full := scan(t, got, catalog.ScanRequest{})
	fk, ft := ratio(t, explainValue(t, full.plan.Explain, "files"))
	gk, gt := ratio(t, explainValue(t, full.plan.Explain, "row_groups"))
	if fk != 4 || ft != 4 || gk != gt || gt < 8 {
		t.Fatalf("unfiltered explain %q: want files=4/4 and all of >= 8 row groups", full.plan.Explain)
	}

	// id > 250: only the files of ids 300.. qualify by their min/max.
	res := scan(t, got, catalog.ScanRequest{Columns: []int{0}, Filter: catalog.Filter{{{Column: 0, Op: catalog.OpGt, Values: []scalar.Scalar{scalar.NewFloat64Scalar(250.5)}}}}})
	fk, ft = ratio(t, explainValue(t, res.plan.Explain, "files"))
	if fk != 1 || ft != 4 || explainValue(t, res.plan.Explain, "row_groups") != "2/2" {
		t.Errorf("id > 250.5: explain %q, want files=1/4 row_groups=2/2 (both groups of the kept file match)", res.plan.Explain)
	}
	equalRows(t, res.rows, "300", "301", "302", "303", "304", "305", "306", "307")

	// Within the kept file, row groups are pruned by their statistics at planning: reading ids
	// >= 306 plans and fetches less than reading the whole file.
	narrow := scan(t, got, catalog.ScanRequest{Columns: []int{0}, Filter: catalog.Filter{{{Column: 0, Op: catalog.OpGtEq, Values: []scalar.Scalar{scalar.NewInt64Scalar(306)}}}}})
	equalRows(t, keepRows(narrow.rows, func(c []string) bool { return c[0] >= "306" }), "306", "307")
	if g := explainValue(t, narrow.plan.Explain, "row_groups"); g != "1/2" {
		t.Errorf("ids >= 306: explain %q, want row_groups=1/2", narrow.plan.Explain)
	}
	if fetchedBytes(t, narrow.plan) >= fetchedBytes(t, res.plan) {
		t.Errorf("ids >= 306 fetched %s, ids > 250.5 fetched %s: want fewer bytes", narrow.plan.Fetched(), res.plan.Fetched())
	}
	if planned(t, narrow.plan) >= planned(t, res.plan) {
		t.Errorf("ids >= 306 planned %q, ids > 250.5 planned %q: want fewer bytes", narrow.plan.Explain, res.plan.Explain)
	}

	// An OR with one untranslatable side is dropped whole: nothing is pruned.
	or := scan(t, got, catalog.ScanRequest{Filter: catalog.Filter{{
		{Column: 0, Op: catalog.OpEq, Values: []scalar.Scalar{scalar.NewInt64Scalar(1)}},
		{Column: 1, Op: catalog.OpEq, Values: []scalar.Scalar{scalar.NewInt64Scalar(1)}}, // string column vs number
	}}})
	if fk, _ := ratio(t, explainValue(t, or.plan.Explain, "files")); fk != 4 || len(or.rows) != 32 {
		t.Errorf("untranslatable OR: explain %q, %d rows; want nothing pruned", or.plan.Explain, len(or.rows))
	}
}

func TestSplitTasks(t *testing.T) {
	ctx := context.Background()
	l := newLake(t, "lake")
	tbl := l.create("default", "split", eventsSchema(), icecat.WithProperties(iceberg.Properties{
		table.ParquetRowGroupLimitKey: "5",
		table.ReadSplitTargetSizeKey:  "1", // one task per row group
	}))
	_ = appendJSON(t, tbl, eventRows())
	got, err := l.reader(Config{}).Table(ctx, "split")
	if err != nil {
		t.Fatal(err)
	}
	res := scan(t, got, catalog.ScanRequest{Columns: []int{0}})
	if len(res.rows) != 24 {
		t.Errorf("%d rows, want 24", len(res.rows))
	}
	gk, gt := ratio(t, explainValue(t, res.plan.Explain, "row_groups"))
	if len(res.plan.Tasks) < 2 || len(res.plan.Tasks) != gt || gk != gt {
		t.Errorf("%d tasks, explain %q: want one task per row group", len(res.plan.Tasks), res.plan.Explain)
	}
	var est int64
	for _, task := range res.plan.Tasks {
		est += task.EstimatedRows()
	}
	if est < 12 || est > 36 {
		t.Errorf("estimated rows over split tasks %d, want about 24", est)
	}
}

// TestConcurrentTasks reads all tasks of one plan at once, as exec partitions do.
func TestConcurrentTasks(t *testing.T) {
	ctx := context.Background()
	l := newLake(t, "lake")
	tbl := l.create("default", "many", eventsSchema())
	for i := 0; i < 6; i++ {
		tbl = appendJSON(t, tbl, eventRows())
	}
	got, err := l.reader(Config{}).Table(ctx, "many")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := got.Scan(ctx, catalog.ScanRequest{Columns: []int{3, 0}})
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	var wg sync.WaitGroup
	var rows atomic.Int64
	errc := make(chan error, len(plan.Tasks))
	for _, task := range plan.Tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rdr, err := task.Open(ctx, mem)
			if err != nil {
				errc <- err
				return
			}
			defer rdr.Release()
			for rdr.Next() {
				rows.Add(rdr.RecordBatch().NumRows())
				_ = plan.Fetched()
			}
			if err := rdr.Err(); err != nil {
				errc <- err
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	if rows.Load() != 6*24 {
		t.Errorf("%d rows, want %d", rows.Load(), 6*24)
	}
	mem.AssertSize(t, 0)
}

func planned(t testing.TB, plan *catalog.ScanPlan) int64 {
	t.Helper()
	n, err := strconv.ParseInt(explainValue(t, plan.Explain, "bytes_planned"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func between(col int, lo, hi scalar.Scalar) catalog.Filter {
	return catalog.Filter{
		{{Column: col, Op: catalog.OpGtEq, Values: []scalar.Scalar{lo}}},
		{{Column: col, Op: catalog.OpLtEq, Values: []scalar.Scalar{hi}}},
	}
}

func in(col int, vals ...scalar.Scalar) catalog.Filter {
	return catalog.Filter{{{Column: col, Op: catalog.OpIn, Values: vals}}}
}

func i64(v int64) scalar.Scalar { return scalar.NewInt64Scalar(v) }

// clusteredRows are ids from..from+n-1 with every column rising with the id, so row groups of
// consecutive rows have disjoint ranges in all of them.
func clusteredRows(from, n int) string {
	var rows []string
	for i := from; i < from+n; i++ {
		rows = append(rows, fmt.Sprintf(`{"id":%d,"region":"r%03d","ts":"2024-01-%02d 00:00:00","amount":"%d.25"}`, i, i, 1+i/10, i))
	}
	return "[" + strings.Join(rows, ",") + "]"
}

// TestRowGroupPruning: with a filter, planning reads the kept files' footers and plans only
// the row groups whose statistics may match, as ranged tasks.
func TestRowGroupPruning(t *testing.T) {
	ctx := context.Background()
	l := newLake(t, "lake")
	tbl := l.create("default", "clustered", eventsSchema(), icecat.WithProperties(iceberg.Properties{
		table.ParquetRowGroupLimitKey: "10",
	}))
	tbl = appendJSON(t, tbl, clusteredRows(0, 50)) // one file, 5 row groups of 10 ids
	appendJSON(t, tbl, clusteredRows(100, 50))
	c := l.reader(Config{})
	got, err := c.Table(ctx, "clustered")
	if err != nil {
		t.Fatal(err)
	}
	ids := func(from, to int, skip ...int) []string {
		var out []string
		for i := from; i <= to; i++ {
			if !slices.Contains(skip, i) {
				out = append(out, strconv.Itoa(i))
			}
		}
		return out
	}
	ts := func(day int) scalar.Scalar {
		return scalar.NewTimestampScalar(arrow.Timestamp(time.Date(2024, 1, day, 0, 0, 0, 0, time.UTC).UnixMicro()), &arrow.TimestampType{Unit: arrow.Microsecond})
	}
	dec := func(s string) scalar.Scalar {
		v, err := decimal128.FromString(s, 10, 2)
		if err != nil {
			t.Fatal(err)
		}
		return scalar.NewDecimal128Scalar(v, &arrow.Decimal128Type{Precision: 10, Scale: 2})
	}
	all := scan(t, got, catalog.ScanRequest{Columns: []int{0}, Filter: between(0, i64(0), i64(49))})
	if e := all.plan.Explain; explainValue(t, e, "files") != "1/2" || explainValue(t, e, "row_groups") != "5/5" || len(all.plan.Tasks) != 1 {
		t.Fatalf("ids 0..49: explain %q, %d tasks; want files=1/2 row_groups=5/5 in one task", e, len(all.plan.Tasks))
	}
	cases := []struct {
		name   string
		filter catalog.Filter
		groups string
		tasks  int
		want   []string // ids, after the engine re-applies the filter
		keep   func(id int) bool
	}{
		{"id between 22 and 27", between(0, i64(22), i64(27)), "1/5", 1, ids(22, 27), func(id int) bool { return id >= 22 && id <= 27 }},
		{"id between 18 and 31", between(0, i64(18), i64(31)), "3/5", 1, ids(18, 31), func(id int) bool { return id >= 18 && id <= 31 }},
		{"id in (5, 45)", in(0, i64(5), i64(45)), "2/5", 2, []string{"5", "45"}, func(id int) bool { return id == 5 || id == 45 }},
		{"id < 10.5", catalog.Filter{{{Column: 0, Op: catalog.OpLt, Values: []scalar.Scalar{scalar.NewFloat64Scalar(10.5)}}}}, "2/5", 1, ids(0, 10), func(id int) bool { return id <= 10 }},
		{"region = r033", eq(1, scalar.NewStringScalar("r033")), "1/5", 1, []string{"33"}, func(id int) bool { return id == 33 }},
		{"ts = 2024-01-05", eq(2, ts(5)), "1/5", 1, ids(40, 49), func(id int) bool { return id >= 40 && id <= 49 }},
		{"amount = 12.25", eq(3, dec("12.25")), "1/5", 1, []string{"12"}, func(id int) bool { return id == 12 }},
		{"amount < 5.3", catalog.Filter{{{Column: 3, Op: catalog.OpLt, Values: []scalar.Scalar{dec("5.30")}}}}, "1/5", 1, ids(0, 5), func(id int) bool { return id <= 5 }},
	}
	for _, tc := range cases {
		res := scan(t, got, catalog.ScanRequest{Columns: []int{0}, Filter: tc.filter})
		t.Logf("%s: %s %s", tc.name, res.plan.Explain, res.plan.Fetched())
		if g := explainValue(t, res.plan.Explain, "row_groups"); g != tc.groups || len(res.plan.Tasks) != tc.tasks {
			t.Errorf("%s: explain %q, %d tasks; want row_groups=%s in %d tasks", tc.name, res.plan.Explain, len(res.plan.Tasks), tc.groups, tc.tasks)
		}
		var rows []string
		for _, r := range res.rows {
			id, _ := strconv.Atoi(r)
			if tc.keep(id) {
				rows = append(rows, r)
			}
		}
		if !slicesEqualSorted(rows, tc.want) {
			t.Errorf("%s: rows %q, want %q", tc.name, rows, tc.want)
		}
		// Each task reads the file's footer again, so only a single task surely fetches less.
		if planned(t, res.plan) >= planned(t, all.plan) || (tc.tasks == 1 && fetchedBytes(t, res.plan) >= fetchedBytes(t, all.plan)) {
			t.Errorf("%s: planned/fetched %q %s, all row groups %q %s: want fewer bytes", tc.name,
				res.plan.Explain, res.plan.Fetched(), all.plan.Explain, all.plan.Fetched())
		}
	}

	// Without a filter no footer is read: the plan is one task per file.
	full := scan(t, got, catalog.ScanRequest{Columns: []int{0}})
	if len(full.plan.Tasks) != 2 || explainValue(t, full.plan.Explain, "row_groups") != "10/10" || len(full.rows) != 100 {
		t.Errorf("unfiltered: explain %q, %d tasks, %d rows", full.plan.Explain, len(full.plan.Tasks), len(full.rows))
	}
}

// TestRowGroupPruningNulls: a NULL satisfies no comparison, so only a row group whose column is
// all NULL is pruned by one; IS NULL and IS NOT NULL go by the null counts.
func TestRowGroupPruningNulls(t *testing.T) {
	ctx := context.Background()
	l := newLake(t, "lake")
	tbl := l.create("default", "nulls", iceberg.NewSchema(0,
		field(1, "id", iceberg.PrimitiveTypes.Int64, true),
		field(2, "x", iceberg.PrimitiveTypes.Int64, false),
	), icecat.WithProperties(iceberg.Properties{table.ParquetRowGroupLimitKey: "2"}))
	// Row groups: (5, NULL), (NULL, NULL), (7, 8).
	appendJSON(t, tbl, `[{"id":1,"x":5},{"id":2,"x":null},{"id":3,"x":null},{"id":4,"x":null},{"id":5,"x":7},{"id":6,"x":8}]`)
	got, err := l.reader(Config{}).Table(ctx, "nulls")
	if err != nil {
		t.Fatal(err)
	}
	isNull := catalog.Filter{{{Column: 1, Op: catalog.OpIsNull}}}
	notNull := catalog.Filter{{{Column: 1, Op: catalog.OpIsNotNull}}}
	cases := []struct {
		name   string
		filter catalog.Filter
		groups string
		want   []string // id|x rows that satisfy the filter
		keep   func(x string) bool
	}{
		{"x = 5", eq(1, i64(5)), "1/3", []string{"1|5"}, func(x string) bool { return x == "5" }},
		{"x = 8", eq(1, i64(8)), "1/3", []string{"6|8"}, func(x string) bool { return x == "8" }},
		{"x = 6", eq(1, i64(6)), "0/3", nil, func(x string) bool { return x == "6" }},
		{"x is not null", notNull, "2/3", []string{"1|5", "5|7", "6|8"}, func(x string) bool { return x != "NULL" }},
		{"x is null", isNull, "2/3", []string{"2|NULL", "3|NULL", "4|NULL"}, func(x string) bool { return x == "NULL" }},
		{"x is null or x = 8", catalog.Filter{{isNull[0][0], eq(1, i64(8))[0][0]}}, "3/3", []string{"2|NULL", "3|NULL", "4|NULL", "6|8"}, func(x string) bool { return x == "NULL" || x == "8" }},
		{"x < 5", catalog.Filter{{{Column: 1, Op: catalog.OpLt, Values: []scalar.Scalar{i64(5)}}}}, "0/0", nil, func(x string) bool { return false }}, // the file's bounds rule it out
	}
	for _, tc := range cases {
		res := scan(t, got, catalog.ScanRequest{Filter: tc.filter})
		if g := explainValue(t, res.plan.Explain, "row_groups"); g != tc.groups {
			t.Errorf("%s: explain %q, want row_groups=%s", tc.name, res.plan.Explain, tc.groups)
		}
		var rows []string
		for _, r := range res.rows {
			if _, x, _ := strings.Cut(r, "|"); tc.keep(x) {
				rows = append(rows, r)
			}
		}
		if !slicesEqualSorted(rows, tc.want) {
			t.Errorf("%s: rows %q, want %q", tc.name, rows, tc.want)
		}
	}
}

// TestRowGroupPruningPositionDeletes: position deletes count rows from the start of the whole
// file, so they must still remove exactly the deleted rows from a task over some row groups.
func TestRowGroupPruningPositionDeletes(t *testing.T) {
	ctx := context.Background()
	l := newLake(t, "lake")
	tbl := l.create("default", "posdel", eventsSchema(), icecat.WithProperties(iceberg.Properties{
		table.ParquetRowGroupLimitKey: "10",
		table.WriteDeleteModeKey:      table.WriteModeMergeOnRead,
		"format-version":              "2",
	}))
	tbl = appendJSON(t, tbl, clusteredRows(0, 50))
	var err error
	if _, err = tbl.Delete(ctx, iceberg.IsIn(iceberg.Reference("id"), int64(23), int64(41), int64(44)), nil); err != nil {
		t.Fatal(err)
	}
	got, err := l.reader(Config{}).Table(ctx, "posdel")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		filter catalog.Filter
		groups string
		tasks  int
		want   []string
		keep   func(id int) bool
	}{
		{"id between 20 and 29", between(0, i64(20), i64(29)), "1/5", 1, []string{"20", "21", "22", "24", "25", "26", "27", "28", "29"}, func(id int) bool { return id >= 20 && id <= 29 }},
		{"id >= 40", catalog.Filter{{{Column: 0, Op: catalog.OpGtEq, Values: []scalar.Scalar{i64(40)}}}}, "1/5", 1, []string{"40", "42", "43", "45", "46", "47", "48", "49"}, func(id int) bool { return id >= 40 }},
		{"id in (21, 23, 41, 45)", in(0, i64(21), i64(23), i64(41), i64(45)), "2/5", 2, []string{"21", "45"}, func(id int) bool { return id == 21 || id == 23 || id == 41 || id == 45 }},
		{"id between 8 and 31", between(0, i64(8), i64(31)), "4/5", 1, []string{"8", "9", "10", "11", "12", "13", "14", "15", "16", "17", "18", "19", "20", "21", "22", "24", "25", "26", "27", "28", "29", "30", "31"}, func(id int) bool { return id >= 8 && id <= 31 }},
	}
	for _, tc := range cases {
		res := scan(t, got, catalog.ScanRequest{Columns: []int{0}, Filter: tc.filter})
		if g := explainValue(t, res.plan.Explain, "row_groups"); g != tc.groups || len(res.plan.Tasks) != tc.tasks || explainValue(t, res.plan.Explain, "delete_files") != "1" {
			t.Errorf("%s: explain %q, %d tasks; want row_groups=%s delete_files=1 in %d tasks", tc.name, res.plan.Explain, len(res.plan.Tasks), tc.groups, tc.tasks)
		}
		var rows []string
		for _, r := range res.rows {
			id, _ := strconv.Atoi(r)
			if tc.keep(id) {
				rows = append(rows, r)
			}
		}
		if !slicesEqualSorted(rows, tc.want) {
			t.Errorf("%s: rows %q, want %q", tc.name, rows, tc.want)
		}
	}
}

func TestFooterCacheBound(t *testing.T) {
	var c footerCache
	big := &fileFooter{cost: footerCacheBytes / 5}
	for i := 0; i < 7; i++ {
		c.put(footerKey{path: strconv.Itoa(i), size: 1}, big)
	}
	if c.cost > footerCacheBytes || c.lru.Len() != 5 {
		t.Errorf("cache holds %d footers, %d bytes; bound %d", c.lru.Len(), c.cost, footerCacheBytes)
	}
	if c.get(footerKey{"0", 1}) != nil || c.get(footerKey{"6", 1}) != big {
		t.Error("want the oldest footers evicted and the newest kept")
	}
	if c.get(footerKey{"6", 2}) != nil {
		t.Error("a file of another size is another key")
	}
}
