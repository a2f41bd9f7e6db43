package iceberg

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/cachedb/cachedb/catalog"
)

// TestCatalogSplitsTasksAtRowGroups: with a small split size, a table of two files of ten row
// groups each is planned as one task per run of row groups of about that size; the tasks read
// every row exactly once, with a filter and with position deletes too, and planning twice
// gives the same tasks.
func TestCatalogSplitsTasksAtRowGroups(t *testing.T) {
	ctx := context.Background()
	l := newLake(t, "lake")
	tbl := l.create("default", "big", eventsSchema(), icecat.WithProperties(iceberg.Properties{
		table.ParquetRowGroupLimitKey: "10",
		table.WriteDeleteModeKey:      table.WriteModeMergeOnRead,
		"format-version":              "2",
	}))
	tbl = appendJSON(t, tbl, clusteredRows(0, 100))
	tbl = appendJSON(t, tbl, clusteredRows(100, 100))
	if _, err := tbl.Delete(ctx, iceberg.IsIn(iceberg.Reference("id"), int64(7), int64(55), int64(150)), nil); err != nil {
		t.Fatal(err)
	}
	deleted := map[int]bool{7: true, 55: true, 150: true}

	whole, err := l.reader(Config{SplitBytes: -1}).Table(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	split, err := l.reader(Config{SplitBytes: 1}).Table(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	wholeRes := scan(t, whole, catalog.ScanRequest{Columns: []int{0}})
	if len(wholeRes.plan.Tasks) != 2 {
		t.Fatalf("without splitting: %d tasks, want one per file", len(wholeRes.plan.Tasks))
	}
	res := scan(t, split, catalog.ScanRequest{Columns: []int{0}})
	if len(res.plan.Tasks) != 20 {
		t.Errorf("split at every row group: %d tasks, want 20 (2 files × 10 row groups); %s", len(res.plan.Tasks), res.plan.Explain)
	}
	want := map[string]bool{}
	for id := range 200 {
		if !deleted[id] {
			want[strconv.Itoa(id)] = true
		}
	}
	if len(res.rows) != len(want) {
		t.Errorf("split tasks read %d rows, want %d", len(res.rows), len(want))
	}
	seen := map[string]bool{}
	for _, r := range res.rows {
		if !want[r] || seen[r] {
			t.Errorf("row %s read wrongly (deleted, unknown or twice)", r)
		}
		seen[r] = true
	}
	var rows, bytes int64
	for _, task := range res.plan.Tasks {
		rows += task.EstimatedRows()
		bytes += task.(catalog.SizedTask).EstimatedBytes()
	}
	var wholeBytes int64
	for _, task := range wholeRes.plan.Tasks {
		wholeBytes += task.(catalog.SizedTask).EstimatedBytes()
	}
	if rows < 150 || rows > 250 || bytes != wholeBytes {
		t.Errorf("split tasks estimate %d rows and %d bytes; want about 200 rows and exactly the files' %d bytes", rows, bytes, wholeBytes)
	}

	// A filter prunes row groups first; the kept runs are split in turn.
	filtered := scan(t, split, catalog.ScanRequest{Columns: []int{0}, Filter: between(0, scalar.NewInt64Scalar(30), scalar.NewInt64Scalar(169))})
	var got []string
	for _, r := range filtered.rows {
		if id, _ := strconv.Atoi(r); id >= 30 && id <= 169 {
			got = append(got, r)
		}
	}
	if len(got) != 140-2 || len(filtered.plan.Tasks) != 14 {
		t.Errorf("filtered: %d matching rows in %d tasks, want 138 in 14: %s %s", len(got), len(filtered.plan.Tasks), filtered.plan.Explain, taskRanges(filtered.plan))
	}

	// Every process plans the same tasks.
	again := scan(t, split, catalog.ScanRequest{Columns: []int{0}})
	if taskRanges(res.plan) != taskRanges(again.plan) {
		t.Errorf("two plans differ:\n%s\n%s", taskRanges(res.plan), taskRanges(again.plan))
	}

	// A middling size groups neighbouring row groups: fewer tasks, still every row once.
	mid, err := l.reader(Config{SplitBytes: wholeBytes / 6}).Table(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	midRes := scan(t, mid, catalog.ScanRequest{Columns: []int{0}})
	if n := len(midRes.plan.Tasks); n <= 2 || n >= 20 || len(midRes.rows) != len(want) {
		t.Errorf("split size %d: %d tasks and %d rows, want between 3 and 19 tasks and %d rows", wholeBytes/6, n, len(midRes.rows), len(want))
	}
}

func taskRanges(plan *catalog.ScanPlan) string {
	var s string
	for _, task := range plan.Tasks {
		st := task.(*scanTask).task
		s += fmt.Sprintf("%s[%d+%d] ", st.File.FilePath(), st.Start, st.Length)
	}
	return s
}

func TestSplitTaskKeepsTasksItCannotCut(t *testing.T) {
	for _, tc := range []struct {
		offsets []int64
		size    int64
		valid   bool
	}{
		{[]int64{4, 100, 200}, 300, true},
		{nil, 300, false},
		{[]int64{4, 200, 100}, 300, false},
		{[]int64{4, 100, 300}, 300, false},
		{[]int64{-1, 100}, 300, false},
		{[]int64{4, 4}, 300, false},
	} {
		if got := validSplitOffsets(tc.offsets, tc.size); got != tc.valid {
			t.Errorf("validSplitOffsets(%v, %d) = %v, want %v", tc.offsets, tc.size, got, tc.valid)
		}
	}
}
