package engine

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/catalog/iceberg"
	"github.com/cachedb/cachedb/catalog/iceberg/demo"
	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
)

// TestTasksDivideAQueryExactlyOnce: the scan tasks of a query, planned in groups with
// PlanTasks (as data nodes plan their dataset partitions), return each row of the query once
// however they are grouped.
func TestTasksDivideAQueryExactlyOnce(t *testing.T) {
	ctx := context.Background()
	e := newLakeEngine(t)
	// One scan partition per data file (one per day of rides).
	query := "SELECT ride_id, city FROM demo.rides WHERE city = 'Lisbon' AND passengers > 4"
	_, scan, ok, err := e.planShares(ctx, query)
	if err != nil || !ok || len(scan.TaskBytes()) < 2 {
		t.Fatalf("planShares: divides %v, %v; want several scan tasks", ok, err)
	}
	bytes := scan.TaskBytes()
	n := len(bytes)
	for i, loc := range scan.TaskLocations() {
		if loc != "" || bytes[i] < 1 {
			t.Errorf("task %d: location %q, bytes %d; want no location and bytes ≥ 1", i, loc, bytes[i])
		}
	}
	want := rows(t, e, query)
	for _, of := range []int{1, 2, 3, n + 2} {
		var got []string
		for _, tasks := range exec.AssignShares(bytes, of) {
			op, err := e.PlanTasks(ctx, query, tasks)
			if err != nil {
				t.Fatal(err)
			}
			rdr, err := e.run(ctx, exec.NewCoalesce(op), nil)
			if err != nil {
				t.Fatal(err)
			}
			for rdr.Next() {
				b := rdr.RecordBatch()
				for i := range int(b.NumRows()) {
					got = append(got, valueString(b.Column(0), i)+","+valueString(b.Column(1), i))
				}
			}
			if err := rdr.Err(); err != nil {
				t.Fatal(err)
			}
			rdr.Release()
		}
		slices.Sort(got)
		slices.Sort(want)
		if strings.Join(got, ";") != strings.Join(want, ";") {
			t.Errorf("%d shares: got %v, want %v", of, got, want)
		}
	}
	for _, q := range []string{"SELECT count(*) FROM demo.rides", "SELECT ride_id FROM demo.rides ORDER BY ride_id",
		"SELECT ride_id FROM demo.rides LIMIT 3", "CREATE TABLE s AS SELECT 1"} {
		if _, err := e.PlanTasks(ctx, q, []int{0}); errs.CategoryOf(err) != errs.InvalidInput {
			t.Errorf("%s: PlanTasks = %v; want an InvalidInput error", q, err)
		}
	}
	if _, err := e.PlanTasks(ctx, query, []int{n}); err == nil {
		t.Errorf("task %d of %d was planned", n, n)
	}
}

// Memory and system tables live on the head only: queries over them are never divided.
func TestQueriesOverMemoryTablesAreNotDivided(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE TABLE m (a BIGINT)")
	run(t, e, "INSERT INTO m VALUES (1), (2)")
	if _, err := e.PlanTasks(context.Background(), "SELECT a FROM m WHERE a > 1", []int{0}); errs.CategoryOf(err) != errs.InvalidInput {
		t.Errorf("PlanTasks = %v; want an InvalidInput error", err)
	}
}

// newLakeEngine returns an engine over a fresh embedded demo warehouse, as catalog "lake", the
// default for unqualified and namespace-qualified names.
func newLakeEngine(t *testing.T) *Engine {
	t.Helper()
	wh, err := demo.Ensure(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	lake, err := iceberg.Open(context.Background(), wh.CatalogConfig("lake"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{NoDemo: true, Sources: []catalog.Catalog{lake}, DefaultCatalog: "lake"})
	if err != nil {
		t.Fatal(err)
	}
	return e
}
