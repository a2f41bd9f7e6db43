package sql

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/catalog"
	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/planner"
)

// countingCatalog serves its tables through countingTables that count the scan tasks opened.
type countingCatalog struct {
	*memcat.Catalog
	opened atomic.Int64
}

func (c *countingCatalog) Table(ctx context.Context, name string) (catalog.Table, error) {
	t, err := c.Catalog.Table(ctx, name)
	if err != nil {
		return nil, err
	}
	return &countingTable{Table: t, opened: &c.opened}, nil
}

type countingTable struct {
	catalog.Table
	opened *atomic.Int64
}

func (t *countingTable) Scan(ctx context.Context, req catalog.ScanRequest) (*catalog.ScanPlan, error) {
	plan, err := t.Table.Scan(ctx, req)
	if err != nil {
		return nil, err
	}
	out := *plan
	out.Tasks = make([]catalog.ScanTask, len(plan.Tasks))
	for i, task := range plan.Tasks {
		out.Tasks[i] = &countingTask{ScanTask: task, opened: t.opened}
	}
	return &out, nil
}

type countingTask struct {
	catalog.ScanTask
	opened *atomic.Int64
}

func (t *countingTask) Open(ctx context.Context, mem memory.Allocator) (array.RecordReader, error) {
	t.opened.Add(1)
	return t.ScanTask.Open(ctx, mem)
}

// cteShareCatalog holds t(k BIGINT, v BIGINT), appended in two batches, with NULL keys and
// values.
func cteShareCatalog(t *testing.T) *countingCatalog {
	t.Helper()
	ctx := context.Background()
	cat := &countingCatalog{Catalog: memcat.NewCatalog("test")}
	i64 := arrow.PrimitiveTypes.Int64
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: i64, Nullable: true}, {Name: "v", Type: i64, Nullable: true}}, nil)
	tbl, err := cat.CreateTable(ctx, "t", schema, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, rows := range [][][2]*int64{
		{{ptr(1), ptr(10)}, {ptr(1), ptr(20)}, {ptr(2), ptr(5)}},
		{{ptr(3), nil}, {nil, ptr(7)}, {ptr(4), ptr(30)}, {ptr(2), ptr(25)}},
	} {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for _, r := range rows {
			for c, v := range r {
				if v == nil {
					b.Field(c).AppendNull()
				} else {
					b.Field(c).(*array.Int64Builder).Append(*v)
				}
			}
		}
		batch := b.NewRecordBatch()
		b.Release()
		if err := tbl.(catalog.InsertableTable).Append(ctx, batch); err != nil {
			t.Fatal(err)
		}
		batch.Release()
	}
	return cat
}

func ptr(v int64) *int64 { return &v }

// runOperator executes op's partitions with a fresh query cache and returns its rows, sorted,
// as "v1,v2" strings; the allocator must hold nothing once the cache is released.
func runOperator(t *testing.T, op exec.Operator) []string {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	tc := &exec.TaskContext{Alloc: mem, Cache: exec.NewQueryCache()}
	var out []string
	for p := range op.Partitions() {
		rdr, err := op.Execute(context.Background(), p, tc)
		if err != nil {
			t.Fatal(err)
		}
		for rdr.Next() {
			b := rdr.RecordBatch()
			for i := range int(b.NumRows()) {
				vals := make([]string, b.NumCols())
				for c := range vals {
					vals[c] = b.Column(c).ValueStr(i)
				}
				out = append(out, strings.Join(vals, ","))
			}
		}
		if err := rdr.Err(); err != nil {
			t.Fatal(err)
		}
		rdr.Release()
	}
	tc.Cache.Release()
	mem.AssertSize(t, 0)
	slices.Sort(out)
	return out
}

// scanTasks is the number of scan tasks a query reading t once opens.
func scanTasks(t *testing.T, cat *countingCatalog) int64 {
	t.Helper()
	stmt, err := Bind(context.Background(), "SELECT k FROM t", cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	op, _, err := planner.PlanQuery(context.Background(), stmt.(*planner.Query), planner.PhysicalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cat.opened.Store(0)
	runOperator(t, op)
	if n := cat.opened.Load(); n > 0 {
		return n
	}
	t.Fatal("reading t opened no scan task")
	return 0
}

// TestSharedCTEScansOnce runs queries that read an aggregating CTE several times, as
// PlanQuery plans them (the CTE computed once, its rows shared) and with every reference
// planned on its own (planner.Optimize inlines each), and checks that the shared plan opens
// the table's scan tasks once, where the inlined one opens them once per reference, and that
// both answer alike.
func TestSharedCTEScansOnce(t *testing.T) {
	const sum = "WITH s AS (SELECT k, sum(v) AS total FROM t GROUP BY k) "
	cases := []struct {
		query string
		refs  int64 // references to the CTE, each of which scans t when inlined
		reads int64 // reads of t outside the CTE
	}{
		// TPC-H Q15's shape: the CTE joined and in a scalar subquery.
		{sum + "SELECT k, total FROM s WHERE total = (SELECT max(total) FROM s)", 2, 0},
		// A filter above one reference only.
		{sum + "SELECT x.k, x.total, y.total FROM s x LEFT JOIN s y ON y.k = x.k + 2 WHERE x.k <= 2", 2, 0},
		// Three references, two in subqueries, one of them correlated.
		{sum + "SELECT k, v, (SELECT total FROM s WHERE s.k = t.k), (SELECT count(*) FROM s) FROM t WHERE k IN (SELECT k FROM s)", 3, 1},
		// An empty CTE.
		{"WITH e AS (SELECT k, count(*) AS n FROM t WHERE v > 100 GROUP BY k) SELECT (SELECT count(*) FROM e), (SELECT max(n) FROM e)", 2, 0},
	}
	for _, c := range cases {
		cat := cteShareCatalog(t)
		stmt, err := Bind(context.Background(), c.query, cat, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.query, err)
		}
		q := stmt.(*planner.Query)
		opts := planner.PhysicalOptions{Partitions: 3}

		shared, _, err := planner.PlanQuery(context.Background(), q, opts)
		if err != nil {
			t.Fatalf("%s: %v", c.query, err)
		}
		tasks := scanTasks(t, cat)
		cat.opened.Store(0)
		got := runOperator(t, shared)
		if n := cat.opened.Load(); n != (1+c.reads)*tasks {
			t.Errorf("%s: shared plan opened %d scan tasks, want %d (the CTE's once)", c.query, n, (1+c.reads)*tasks)
		}

		inlined, err := planner.Physical(planner.Optimize(q.Plan), opts)
		if err != nil {
			t.Fatal(err)
		}
		cat.opened.Store(0)
		want := runOperator(t, inlined)
		// A correlated reference scans once per outer row: at least once per reference.
		if n := cat.opened.Load(); n < (c.refs+c.reads)*tasks {
			t.Errorf("%s: inlined plan opened %d scan tasks, want at least %d", c.query, n, (c.refs+c.reads)*tasks)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s:\nshared  %v\ninlined %v", c.query, got, want)
		}
		if len(want) == 0 {
			t.Errorf("%s: no rows to compare", c.query)
		}
	}
}
