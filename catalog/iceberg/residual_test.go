package iceberg

import (
	"context"
	"strconv"
	"testing"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/cachedb/cachedb/catalog"
)

// TestTestedTasksReadUnfiltered: a task whose row groups planning tested against the filter
// with the file's footer returns every row of them, matching or not (the engine filters them,
// so iceberg-go evaluating the filter on every row again would be wasted); only the row groups
// the statistics rule out are skipped.
func TestTestedTasksReadUnfiltered(t *testing.T) {
	ctx := context.Background()
	l := newLake(t, "lake")
	tbl := l.create("default", "clustered", eventsSchema(), icecat.WithProperties(iceberg.Properties{
		table.ParquetRowGroupLimitKey: "10",
	}))
	appendJSON(t, tbl, clusteredRows(0, 50)) // one file, 5 row groups of 10 ids
	got, err := l.reader(Config{}).Table(ctx, "clustered")
	if err != nil {
		t.Fatal(err)
	}
	res := scan(t, got, catalog.ScanRequest{Columns: []int{0}, Filter: between(0, i64(22), i64(24))})
	if g := explainValue(t, res.plan.Explain, "row_groups"); g != "1/5" {
		t.Fatalf("ids 22..24: explain %q, want row_groups=1/5", res.plan.Explain)
	}
	var want []string
	for id := 20; id < 30; id++ {
		want = append(want, strconv.Itoa(id))
	}
	if !slicesEqualSorted(res.rows, want) {
		t.Errorf("ids 22..24: rows %q, want all of the kept row group %q", res.rows, want)
	}
}

// TestReadResidual: only tasks planning tested read without a residual; the others keep the
// scan's read filter (nil), and cutting a tested task into splits keeps it tested.
func TestReadResidual(t *testing.T) {
	if r := readResidual(prunedTask{tested: true}); r == nil || !r.Equals(iceberg.AlwaysTrue{}) {
		t.Errorf("tested task residual %v, want AlwaysTrue", r)
	}
	if r := readResidual(prunedTask{groups: 3}); r != nil {
		t.Errorf("untested task residual %v, want nil (the scan's read filter)", r)
	}
	ctx := context.Background()
	l := newLake(t, "lake")
	tbl := l.create("default", "clustered", eventsSchema(), icecat.WithProperties(iceberg.Properties{
		table.ParquetRowGroupLimitKey: "10",
	}))
	appendJSON(t, tbl, clusteredRows(0, 50))
	got, err := l.reader(Config{SplitBytes: 1}).Table(ctx, "clustered")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		filter catalog.Filter
		tested bool
	}{
		{"filtered", between(0, i64(0), i64(49)), true},
		{"unfiltered", nil, false},
	} {
		plan, err := got.Scan(ctx, catalog.ScanRequest{Columns: []int{0}, Filter: tc.filter})
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Tasks) != 5 {
			t.Fatalf("%s: %d tasks, want one per row group", tc.name, len(plan.Tasks))
		}
		for i, task := range plan.Tasks {
			r := task.(*scanTask).task.Residual
			if tested := r != nil && r.Equals(iceberg.AlwaysTrue{}); tested != tc.tested || (!tested && r != nil) {
				t.Errorf("%s: task %d reads with residual %v, want tested=%v", tc.name, i, r, tc.tested)
			}
		}
	}
}
