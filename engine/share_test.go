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
)

func TestSharesDivideAQueryExactlyOnce(t *testing.T) {
	ctx := context.Background()
	e := newLakeEngine(t)
	// One scan partition per data file (one per day of rides).
	query := "SELECT ride_id, city FROM demo.rides WHERE city = 'Lisbon' AND passengers > 4"
	div, err := e.Divide(ctx, query)
	if err != nil || div == nil || div.Tasks() < 2 {
		t.Fatalf("Divide = %+v, %v; want several scan tasks", div, err)
	}
	n := div.Tasks()
	for i, loc := range div.Locations {
		if loc != "" || div.Bytes[i] < 1 {
			t.Errorf("task %d: location %q, bytes %d; want no location and bytes ≥ 1", i, loc, div.Bytes[i])
		}
	}
	want := rows(t, e, query)
	for _, of := range []int{1, 2, 3, n + 2} {
		var got []string
		for _, tasks := range exec.AssignShares(div.Bytes, of) {
			res, err := e.ExecuteTasks(ctx, query, tasks)
			if err != nil {
				t.Fatal(err)
			}
			for res.Reader.Next() {
				b := res.Reader.RecordBatch()
				for i := range int(b.NumRows()) {
					got = append(got, valueString(b.Column(0), i)+","+valueString(b.Column(1), i))
				}
			}
			res.Reader.Release()
		}
		slices.Sort(got)
		slices.Sort(want)
		if strings.Join(got, ";") != strings.Join(want, ";") {
			t.Errorf("%d shares: got %v, want %v", of, got, want)
		}
	}
	for _, q := range []string{"SELECT count(*) FROM demo.rides", "SELECT ride_id FROM demo.rides ORDER BY ride_id",
		"SELECT ride_id FROM demo.rides LIMIT 3", "CREATE TABLE s AS SELECT 1"} {
		if div, err := e.Divide(ctx, q); err != nil || div != nil {
			t.Errorf("%s: Divide = %+v, %v; want nil", q, div, err)
		}
	}
	if _, err := e.ExecuteTasks(ctx, "SELECT count(*) FROM demo.rides", []int{0}); err == nil {
		t.Error("an aggregate was divided")
	}
	if _, err := e.ExecuteTasks(ctx, query, []int{n}); err == nil {
		t.Errorf("task %d of %d ran", n, n)
	}
}

// Memory and system tables live on the head only: queries over them are never divided.
func TestQueriesOverMemoryTablesAreNotDivided(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE TABLE m (a BIGINT)")
	run(t, e, "INSERT INTO m VALUES (1), (2)")
	if div, err := e.Divide(context.Background(), "SELECT a FROM m WHERE a > 1"); err != nil || div != nil {
		t.Errorf("Divide = %+v, %v; want nil", div, err)
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
