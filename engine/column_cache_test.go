package engine

import (
	"context"
	"testing"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/catalog/iceberg"
	"github.com/cachedb/cachedb/catalog/iceberg/demo"
)

// TestTablesMadeFromIcebergLeaveTheColumnCacheAlone: CREATE TABLE … AS SELECT and INSERT …
// SELECT read an Iceberg table read-once (the memory table keeps the rows), so the column cache
// stays empty; a query of the table fills it.
func TestTablesMadeFromIcebergLeaveTheColumnCacheAlone(t *testing.T) {
	ctx := context.Background()
	wh, err := demo.Ensure(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cache := iceberg.NewColumnCache(64<<20, nil)
	defer cache.Close()
	cfg := wh.CatalogConfig("lake")
	cfg.ColumnCache = cache
	lake, err := iceberg.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{NoDemo: true, Sources: []catalog.Catalog{lake}, DefaultCatalog: "lake"})
	if err != nil {
		t.Fatal(err)
	}
	run(t, e, "CREATE TABLE cachedb.m AS SELECT ride_id, city FROM demo.rides")
	run(t, e, "INSERT INTO cachedb.m SELECT ride_id, city FROM demo.rides")
	if st := cache.Stats(); st.Chunks != 0 || st.Misses == 0 {
		t.Errorf("after CREATE TABLE … AS SELECT and INSERT … SELECT: %+v; want the table read and nothing cached", st)
	}
	want := rows(t, e, "SELECT count(*) FROM cachedb.m")
	rows(t, e, "SELECT ride_id, city FROM demo.rides")
	if st := cache.Stats(); st.Chunks == 0 {
		t.Errorf("after a query: %+v; want its columns cached", st)
	}
	if got := rows(t, e, "SELECT count(*) FROM cachedb.m"); len(got) != 1 || got[0] != want[0] {
		t.Errorf("memory table: %v, want %v", got, want)
	}
}
