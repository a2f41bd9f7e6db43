package catalog_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/catalog"
	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/internal/errs"
)

func newMem(t *testing.T, name string, tables ...string) *memcat.Catalog {
	t.Helper()
	c := memcat.NewCatalog(name)
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	for _, tbl := range tables {
		if _, err := c.CreateTable(context.Background(), tbl, schema, false); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func TestSetResolvesNames(t *testing.T) {
	primary := newMem(t, "cachedb", "t")
	lake := newMem(t, "lake")
	other := newMem(t, "other")
	set, err := catalog.NewSet(primary, []catalog.Catalog{other, lake}, "lake")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, catalog, local string }{
		{"t", "cachedb", "t"},
		{"t@5", "lake", "t@5"},
		{"cachedb.t", "cachedb", "t"},
		{"LAKE.t", "lake", "t"},
		{"lake.ns.t", "lake", "ns.t"},
		{"lake.a.b.t@2026-01-01 10:00:00.5", "lake", "a.b.t@2026-01-01 10:00:00.5"},
		{"ns.t", "lake", "ns.t"},
		{"ns.t@123", "lake", "ns.t@123"},
		{"other.ns.t", "other", "ns.t"},
	}
	for _, c := range cases {
		cat, local, err := set.Resolve(c.name)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if cat.Name() != c.catalog || local != c.local {
			t.Errorf("%s: got %s / %s, want %s / %s", c.name, cat.Name(), local, c.catalog, c.local)
		}
	}
	if _, _, err := set.Resolve("cachedb.ns.t"); errs.CategoryOf(err) != errs.NotFound {
		t.Errorf("the memory catalog has no namespaces: got %v", err)
	}
	names := []string{}
	for _, c := range set.Catalogs() {
		names = append(names, c.Name())
	}
	if len(names) != 3 || names[0] != "cachedb" || names[1] != "lake" || names[2] != "other" {
		t.Errorf("Catalogs() = %v", names)
	}
}

func TestSetFallsBackToDefaultCatalog(t *testing.T) {
	primary := newMem(t, "cachedb", "t")
	lake := newMem(t, "lake", "only_in_lake")
	set, err := catalog.NewSet(primary, []catalog.Catalog{lake}, "lake")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if tbl, err := set.Table(ctx, "only_in_lake"); err != nil || tbl.Name() != "only_in_lake" {
		t.Fatalf("fallback: %v %v", tbl, err)
	}
	if _, err := set.Table(ctx, "nowhere"); errs.CategoryOf(err) != errs.NotFound {
		t.Fatalf("missing table: %v", err)
	}
	noDefault, err := catalog.NewSet(primary, []catalog.Catalog{lake}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noDefault.Table(ctx, "only_in_lake"); errs.CategoryOf(err) != errs.NotFound {
		t.Fatalf("no default catalog: %v", err)
	}
	if _, err := noDefault.Table(ctx, "ns.x"); errs.CategoryOf(err) != errs.NotFound {
		t.Fatalf("unknown qualifier: %v", err)
	}
}

func TestSetRejectsBadCatalogNames(t *testing.T) {
	primary := newMem(t, "cachedb")
	for _, bad := range [][]catalog.Catalog{
		{newMem(t, "CACHEDB")},
		{newMem(t, "a.b")},
		{newMem(t, "x"), newMem(t, "X")},
	} {
		if _, err := catalog.NewSet(primary, bad, ""); errs.CategoryOf(err) != errs.InvalidInput {
			t.Errorf("%s: want invalid input, got %v", bad[len(bad)-1].Name(), err)
		}
	}
	if _, err := catalog.NewSet(primary, nil, "missing"); err == nil {
		t.Error("an unknown default catalog must be refused")
	}
}

func TestSetWithCurrentCatalogAndNamespace(t *testing.T) {
	primary := newMem(t, "cachedb", "t", "only_here")
	lake := newMem(t, "lake", "t")
	other := newMem(t, "other")
	set, err := catalog.NewSet(primary, []catalog.Catalog{lake, other}, "")
	if err != nil {
		t.Fatal(err)
	}
	cur, err := set.WithCurrent("LAKE", "")
	if err != nil {
		t.Fatal(err)
	}
	if c, local, _ := cur.Resolve("t"); c.Name() != "lake" || local != "t" {
		t.Errorf("t with current lake: %s / %s", c.Name(), local)
	}
	if c, local, _ := cur.Resolve("ns.t"); c.Name() != "lake" || local != "ns.t" {
		t.Errorf("ns.t with current lake: %s / %s", c.Name(), local)
	}
	// A name the current catalog lacks still finds the memory catalog's table.
	if tbl, err := cur.Table(context.Background(), "only_here"); err != nil || tbl.Name() != "only_here" {
		t.Errorf("fallback to the memory catalog: %v", err)
	}
	withNS, err := set.WithCurrent("other", "sales")
	if err != nil {
		t.Fatal(err)
	}
	if c, local, _ := withNS.Resolve("t@7"); c.Name() != "other" || local != "sales.t@7" {
		t.Errorf("t@7 with current other.sales: %s / %s", c.Name(), local)
	}
	if _, err := set.WithCurrent("nope", ""); errs.CategoryOf(err) != errs.NotFound {
		t.Errorf("unknown catalog: %v", err)
	}
	if _, err := set.WithCurrent("cachedb", "sales"); errs.CategoryOf(err) != errs.NotFound {
		t.Errorf("the memory catalog has no schema sales: %v", err)
	}
	if same, err := set.WithCurrent("cachedb", "public"); err != nil {
		t.Error(err)
	} else if c, _, _ := same.Resolve("t"); c.Name() != "cachedb" {
		t.Errorf("current cachedb.public: %s", c.Name())
	}
}

// anyVersion is a source catalog that has every version of its tables, as an Iceberg catalog
// whose snapshot ids happen to match would.
type anyVersion struct{ *memcat.Catalog }

func (c anyVersion) Table(ctx context.Context, name string) (catalog.Table, error) {
	base, _, _ := strings.Cut(name, "@")
	return c.Catalog.Table(ctx, base)
}

// A dataset pinned by the head is looked up only in the primary catalog, even where a source
// catalog has a table of the same name (a data node that does not hold the dataset).
func TestSetPinsSayWhichCatalogResolved(t *testing.T) {
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	headPrimary := newMem(t, "cachedb")
	if _, err := headPrimary.AttachDataset(memcat.NewDataset("rides", 7, schema, 1), false); err != nil {
		t.Fatal(err)
	}
	lake := anyVersion{newMem(t, "lake", "rides")}
	head, err := catalog.NewSet(headPrimary, []catalog.Catalog{lake}, "lake")
	if err != nil {
		t.Fatal(err)
	}
	head = head.WithPins(nil)
	tbl, err := head.Table(ctx, "rides")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tbl.(*memcat.Dataset); !ok {
		t.Fatalf("the head resolved rides to %T, want the dataset", tbl)
	}
	pins := head.Pins()
	// The same pins again find the dataset on the head.
	again, err := catalog.NewSet(headPrimary, []catalog.Catalog{lake}, "lake")
	if err != nil {
		t.Fatal(err)
	}
	if tbl, err := again.WithPins(pins).Table(ctx, "rides"); err != nil {
		t.Fatal(err)
	} else if _, ok := tbl.(*memcat.Dataset); !ok {
		t.Fatalf("pinned rides resolved to %T, want the dataset", tbl)
	}
	// A process without the dataset reports it missing instead of reading the source's table.
	node, err := catalog.NewSet(newMem(t, "cachedb"), []catalog.Catalog{lake}, "lake")
	if err != nil {
		t.Fatal(err)
	}
	if tbl, err := node.WithPins(pins).Table(ctx, "rides"); errs.CategoryOf(err) != errs.NotFound {
		t.Fatalf("pinned dataset on a process without it: %T, %v; want NotFound", tbl, err)
	}
}

// The primary catalog's schema of datasets: "datasets.t" and "cachedb.datasets.t" name dataset
// t, never a memory table; "datasets.t" still names namespace datasets of the default catalog
// when there is no such dataset.
func TestSetDatasetsSchemaNamesDatasets(t *testing.T) {
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	primary := newMem(t, "cachedb", "memtable")
	if _, err := primary.AttachDataset(memcat.NewDataset("feats", 3, schema, 1), false); err != nil {
		t.Fatal(err)
	}
	lake := newMem(t, "lake", "datasets.old")
	set, err := catalog.NewSet(primary, []catalog.Catalog{lake}, "lake")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"datasets.feats", "DATASETS.feats", "cachedb.datasets.feats", "CacheDB.Datasets.feats"} {
		tbl, err := set.Table(ctx, name)
		if _, ok := tbl.(*memcat.Dataset); err != nil || !ok {
			t.Errorf("%s: %T, %v; want the dataset", name, tbl, err)
		}
	}
	for _, name := range []string{"datasets.memtable", "cachedb.datasets.memtable", "cachedb.datasets.nope", "cachedb.datasets.old"} {
		if _, err := set.Table(ctx, name); errs.CategoryOf(err) != errs.NotFound || !strings.Contains(err.Error(), "Dataset '") {
			t.Errorf("%s: %v; want NotFound naming the dataset", name, err)
		}
	}
	if tbl, err := set.Table(ctx, "datasets.old"); err != nil || tbl.Name() != "datasets.old" {
		t.Errorf("datasets.old: %v, %v; want the default catalog's table", tbl, err)
	}
	// Pinned, the name finds the same dataset generation.
	pinned := set.WithPins(nil)
	if _, err := pinned.Table(ctx, "datasets.feats"); err != nil {
		t.Fatal(err)
	}
	if got := pinned.Pins()["datasets.feats"]; !strings.HasSuffix(got, "@3") {
		t.Errorf("pin of datasets.feats = %q, want generation 3 of the primary catalog", got)
	}
	if tbl, err := set.WithPins(pinned.Pins()).Table(ctx, "datasets.feats"); err != nil {
		t.Errorf("pinned datasets.feats: %v", err)
	} else if _, ok := tbl.(*memcat.Dataset); !ok {
		t.Errorf("pinned datasets.feats resolved to %T", tbl)
	}
}

func TestSetDatabaseNamesWhatShowDatabasesLists(t *testing.T) {
	set, err := catalog.NewSet(newMem(t, "cachedb", "t"), []catalog.Catalog{newMem(t, "lake")}, "lake")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for name, want := range map[string]string{"CACHEDB": "cachedb", "lake": "lake", "Information_Schema": "information_schema"} {
		if got, ok := set.Database(ctx, name); !ok || got != want {
			t.Errorf("Database(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	for _, name := range []string{"nope", "lake.sales", ""} {
		if got, ok := set.Database(ctx, name); ok {
			t.Errorf("Database(%q) = %q, want none", name, got)
		}
	}
}
