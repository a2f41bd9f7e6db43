package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/catalog/iceberg/demo"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/internal/errs"
)

func TestDatasetSpecQuery(t *testing.T) {
	cases := []struct {
		name string
		spec DatasetSpec
		want string
	}{
		{"table only", DatasetSpec{Name: "d", Table: "rides"}, "SELECT * FROM `rides`"},
		{
			"columns, filter and snapshot",
			DatasetSpec{Name: "feats", Table: "ns.t", Columns: []string{"a", "b c", "we`ird"}, Filter: "a > 1 AND c = 'x'", Snapshot: "snap"},
			"SELECT `a`, `b c`, `we``ird` FROM `ns`.`t@snap` WHERE a > 1 AND c = 'x'",
		},
		{"snapshot id", DatasetSpec{Name: "d", Table: "demo.rides", Snapshot: "123456789"}, "SELECT * FROM `demo`.`rides@123456789`"},
		{"three-part name", DatasetSpec{Name: "d", Table: "lake.demo.rides"}, "SELECT * FROM `lake.demo`.`rides`"},
		{"three-part name as SQL writes it", DatasetSpec{Name: "d", Table: "`lake.demo`.rides", Snapshot: "initial"}, "SELECT * FROM `lake.demo`.`rides@initial`"},
		{"blank filter", DatasetSpec{Name: "d", Table: "t", Filter: "  "}, "SELECT * FROM `t`"},
		{"sql", DatasetSpec{Name: "_d9", SQL: "SELECT a FROM t WHERE b = 1", Partitions: 8}, "SELECT a FROM t WHERE b = 1"},
		{
			"metadata location in the default catalog",
			DatasetSpec{Name: "d", MetadataLocation: "/w/t/metadata/v1.metadata.json"},
			"SELECT * FROM `" + catalog.LocationTableName("/w/t/metadata/v1.metadata.json") + "`",
		},
		{
			"metadata location",
			DatasetSpec{Name: "d", MetadataLocation: "s3://b/t/metadata/00002-x.metadata.json", Catalog: "lake", Columns: []string{"a"}, Snapshot: "5"},
			"SELECT `a` FROM `lake`.`" + catalog.LocationTableName("s3://b/t/metadata/00002-x.metadata.json") + "@5`",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.spec.Query()
			if err != nil || got != c.want {
				t.Errorf("Query() = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestDatasetSpecQueryRefusesBadSpecs(t *testing.T) {
	long := strings.Repeat("x", 129)
	cases := []struct {
		name string
		spec DatasetSpec
		want string // in the message
	}{
		{"empty name", DatasetSpec{Table: "t"}, "dataset name"},
		{"name starting with a digit", DatasetSpec{Name: "1d", Table: "t"}, "dataset name"},
		{"name with a dot", DatasetSpec{Name: "a.b", Table: "t"}, "dataset name"},
		{"name with a dash", DatasetSpec{Name: "a-b", Table: "t"}, "dataset name"},
		{"name with a version", DatasetSpec{Name: "a@1", Table: "t"}, "dataset name"},
		{"name with a backquote", DatasetSpec{Name: "a`b", Table: "t"}, "dataset name"},
		{"name too long", DatasetSpec{Name: long, Table: "t"}, "dataset name"},
		{"sql and table", DatasetSpec{Name: "d", SQL: "SELECT 1", Table: "t"}, "not both"},
		{"sql and columns", DatasetSpec{Name: "d", SQL: "SELECT 1", Columns: []string{"a"}}, "not both"},
		{"sql and filter", DatasetSpec{Name: "d", SQL: "SELECT 1", Filter: "a = 1"}, "not both"},
		{"sql and snapshot", DatasetSpec{Name: "d", SQL: "SELECT 1", Snapshot: "1"}, "not both"},
		{"neither", DatasetSpec{Name: "d"}, "give a table"},
		{"table and metadata location", DatasetSpec{Name: "d", Table: "t", MetadataLocation: "/m.metadata.json", Catalog: "lake"}, "not both"},
		{"sql and metadata location", DatasetSpec{Name: "d", SQL: "SELECT 1", MetadataLocation: "/m.metadata.json"}, "not both"},
		{"catalog with a table", DatasetSpec{Name: "d", Table: "t", Catalog: "lake"}, "qualify table"},
		{"negative partitions", DatasetSpec{Name: "d", Table: "t", Partitions: -1}, "partitions"},
		{"pinned to disk", DatasetSpec{Name: "d", Table: "t", Pin: "disk"}, `pin must be "memory"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, err := c.spec.Query()
			if errs.CategoryOf(err) != errs.InvalidInput || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Query() = %q, %v; want invalid input mentioning %q", q, err, c.want)
			}
		})
	}
	if _, err := (DatasetSpec{Name: "d", Table: "t", Pin: "memory"}).Query(); err != nil {
		t.Errorf("pin: memory is refused: %v", err)
	}
	if _, err := (DatasetSpec{Name: strings.Repeat("x", 128), Table: "t"}).Query(); err != nil {
		t.Errorf("a 128-character name is refused: %v", err)
	}
}

// TestDatasetSpecQueryRunsAndLoadNeedsACluster checks that the SQL a spec stands for binds and
// runs against a real Iceberg catalog (the quoting of qualified, versioned names included), and
// that Load is refused on an engine that runs no data nodes.
func TestDatasetSpecQueryRunsAndLoadNeedsACluster(t *testing.T) {
	ctx := context.Background()
	e := newLakeEngine(t)
	count := func(q string) string {
		t.Helper()
		res, err := e.Execute(ctx, "SELECT count(*) FROM ("+q+") s", nil)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer res.Reader.Release()
		var v string
		for res.Reader.Next() {
			v = res.Reader.RecordBatch().Column(0).ValueStr(0)
		}
		return v
	}
	for _, spec := range []DatasetSpec{
		{Name: "a", Table: "demo.rides", Columns: []string{"city", "fare"}, Filter: "city = 'Lisbon'", Snapshot: demo.InitialTag},
		{Name: "b", Table: "lake.demo.rides", Columns: []string{"city", "fare"}, Filter: "city = 'Lisbon'", Snapshot: demo.InitialTag},
	} {
		q, err := spec.Query()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := count(q), count("SELECT city, fare FROM demo.`rides@initial` WHERE city = 'Lisbon'"); got != want || got == "0" {
			t.Errorf("%s counts %s rows, want %s", q, got, want)
		}
	}

	// A table given by its metadata file reads that version, through the catalog's storage.
	tbl, err := e.Catalogs().Table(ctx, "lake.demo.rides")
	if err != nil {
		t.Fatal(err)
	}
	location := tbl.(interface{ MetadataLocation() string }).MetadataLocation()
	byLocation := DatasetSpec{Name: "c", MetadataLocation: location, Catalog: "lake", Columns: []string{"city", "fare"}, Filter: "city = 'Lisbon'", Snapshot: demo.InitialTag}
	q, err := byLocation.Query()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := count(q), count("SELECT city, fare FROM demo.`rides@initial` WHERE city = 'Lisbon'"); got != want || got == "0" {
		t.Errorf("by metadata location: %s counts %s rows, want %s", q, got, want)
	}
	for _, bad := range []struct {
		location string
		category errs.Category
	}{
		{strings.Replace(location, ".metadata.json", "-gone.metadata.json", 1), errs.NotFound},
		{location + ".bak", errs.InvalidInput},
	} {
		spec := byLocation
		spec.MetadataLocation = bad.location
		q, _ := spec.Query()
		_, err := e.Execute(ctx, q, nil)
		if errs.CategoryOf(err) != bad.category || !strings.Contains(err.Error(), bad.location) {
			t.Errorf("metadata location %s: %v, want %v naming it", bad.location, err, bad.category)
		}
	}

	noDefault, err := New(Config{NoDemo: true, Sources: e.cfg.Sources})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noDefault.Load(ctx, DatasetSpec{Name: "d", MetadataLocation: location}, nil); errs.CategoryOf(err) != errs.InvalidInput || !strings.Contains(err.Error(), "add catalog") {
		t.Errorf("metadata_location without a catalog on a server without a default: %v", err)
	}

	called := false
	_, err = e.Load(ctx, DatasetSpec{Name: "feats", Table: "demo.rides"}, func(cluster.Progress) { called = true })
	if errs.CategoryOf(err) != errs.Unsupported || !strings.Contains(err.Error(), "data nodes") {
		t.Errorf("Load without data nodes = %v, want unsupported", err)
	}
	if _, err := e.CreateDataset(ctx, "feats", "SELECT * FROM demo.rides", DatasetOptions{}, nil); errs.CategoryOf(err) != errs.Unsupported {
		t.Errorf("CreateDataset without data nodes = %v", err)
	}
	// A bad spec is reported as such before anything else.
	if _, err := e.Load(ctx, DatasetSpec{Name: "bad name", Table: "demo.rides"}, nil); errs.CategoryOf(err) != errs.InvalidInput {
		t.Errorf("Load of a bad spec = %v", err)
	}
	if called {
		t.Error("progress was reported for a load that did not run")
	}
	if len(e.MemoryCatalog().Datasets()) != 0 {
		t.Error("a refused load left a dataset behind")
	}
}
