package engine

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/catalog/iceberg"
	"github.com/cachedb/cachedb/catalog/iceberg/demo"
)

func TestSharesDivideAQueryExactlyOnce(t *testing.T) {
	ctx := context.Background()
	wh, err := demo.Ensure(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	lake, err := iceberg.Open(ctx, wh.CatalogConfig("lake"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{NoDemo: true, Sources: []catalog.Catalog{lake}, DefaultCatalog: "lake"})
	if err != nil {
		t.Fatal(err)
	}
	// One scan partition per data file (one per day of rides).
	query := "SELECT ride_id, city FROM demo.rides WHERE city = 'Lisbon' AND passengers > 4"
	n, err := e.Shares(ctx, query)
	if err != nil || n < 2 {
		t.Fatalf("Shares = %d, %v; want several scan partitions", n, err)
	}
	want := rows(t, e, query)
	for _, of := range []int{1, 2, 3, n + 2} {
		var got []string
		for share := range of {
			res, err := e.ExecuteShare(ctx, query, share, of)
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
		if n, err := e.Shares(ctx, q); err != nil || n != 0 {
			t.Errorf("%s: Shares = %d, %v; want 0", q, n, err)
		}
	}
	if _, err := e.ExecuteShare(ctx, "SELECT count(*) FROM demo.rides", 0, 2); err == nil {
		t.Error("an aggregate was divided")
	}
}

// Memory and system tables live on the head only: queries over them are never divided.
func TestQueriesOverMemoryTablesAreNotDivided(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE TABLE m (a BIGINT)")
	run(t, e, "INSERT INTO m VALUES (1), (2)")
	if n, err := e.Shares(context.Background(), "SELECT a FROM m WHERE a > 1"); err != nil || n != 0 {
		t.Errorf("Shares = %d, %v; want 0", n, err)
	}
}
