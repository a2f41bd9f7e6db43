package iceberg

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
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
		rows   int
	}{
		{"by_region", eq(1, scalar.NewStringScalar("eu")), 8},
		{"by_region", catalog.Filter{{{Column: 1, Op: catalog.OpIn, Values: []scalar.Scalar{scalar.NewStringScalar("eu"), scalar.NewStringScalar("ap")}}}}, 16},
		{"by_day", catalog.Filter{{{Column: 2, Op: catalog.OpGtEq, Values: []scalar.Scalar{scalar.NewTimestampScalar(day3, &arrow.TimestampType{Unit: arrow.Microsecond})}}}}, 12},
		{"by_day", catalog.Filter{{{Column: 2, Op: catalog.OpLt, Values: []scalar.Scalar{scalar.NewStringScalar("2024-01-02")}}}}, 6},
		{"by_bucket", eq(0, scalar.NewInt64Scalar(5)), 1},
		{"by_bucket", eq(0, scalar.NewInt32Scalar(7)), 1},
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
		// iceberg-go applies the filter to the rows too; the engine re-applies it.
		if len(res.rows) != tc.rows {
			t.Errorf("%s %s: %d rows, want %d", tc.table, tc.filter, len(res.rows), tc.rows)
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
	gk, gt2 := ratio(t, explainValue(t, res.plan.Explain, "row_groups"))
	if fk != 1 || ft != 4 || gk >= gt2 || gt2 != gt {
		t.Errorf("id > 250.5: explain %q, want files=1/4 and fewer row groups", res.plan.Explain)
	}
	equalRows(t, res.rows, "300", "301", "302", "303", "304", "305", "306", "307")

	// Within the kept file, row groups are pruned by their statistics when read: reading ids
	// >= 306 fetches less than reading the whole file.
	narrow := scan(t, got, catalog.ScanRequest{Columns: []int{0}, Filter: catalog.Filter{{{Column: 0, Op: catalog.OpGtEq, Values: []scalar.Scalar{scalar.NewInt64Scalar(306)}}}}})
	equalRows(t, narrow.rows, "306", "307")
	if fetchedBytes(t, narrow.plan) >= fetchedBytes(t, res.plan) {
		t.Errorf("ids >= 306 fetched %s, ids > 250.5 fetched %s: want fewer bytes", narrow.plan.Fetched(), res.plan.Fetched())
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
	tbl = appendJSON(t, tbl, eventRows())
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
