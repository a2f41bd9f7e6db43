package iceberg

import (
	"testing"

	"github.com/cachedb/cachedb/internal/errs"
)

func TestTablesByLocationStayUnderTheCatalogsPrefixes(t *testing.T) {
	c := &Catalog{cfg: Config{Name: "lake", Warehouse: "s3a://bucket/wh", LocationPrefixes: []string{"/srv/tables"}},
		files: []fileTable{{location: "file:///data/t1/metadata/v3.metadata.json"}}}
	const allowed = errs.Category(-1)
	for loc, want := range map[string]errs.Category{
		"s3://bucket/wh/ns/t/metadata/v1.metadata.json":       allowed,
		"s3a://bucket/wh/ns/t/metadata/v1.metadata.json":      allowed,
		"/srv/tables/x/metadata/00001-a.metadata.json":        allowed,
		"file:///srv/tables/x/metadata/00001-a.metadata.json": allowed,
		"/data/t1/metadata/v4.metadata.json":                  allowed,
		"s3://bucket/wh2/t/metadata/v1.metadata.json":         errs.PermissionDenied,
		"s3://bucket/whatever.metadata.json":                  errs.PermissionDenied,
		"/etc/secret.metadata.json":                           errs.PermissionDenied,
		"/srv/tablesX/a.metadata.json":                        errs.PermissionDenied,
		"/data/t2/metadata/v1.metadata.json":                  errs.PermissionDenied,
		"/srv/tables/../etc/x.metadata.json":                  errs.InvalidInput,
		"s3://bucket/wh/../other/x.metadata.json":             errs.InvalidInput,
	} {
		err := c.checkLocation(loc)
		if got := errs.CategoryOf(err); (want == allowed) != (err == nil) || (err != nil && got != want) {
			t.Errorf("%s: %v, want %v", loc, err, want)
		}
	}
	none := &Catalog{cfg: Config{Name: "rest"}}
	if errs.CategoryOf(none.checkLocation("s3://b/t/metadata/v1.metadata.json")) != errs.PermissionDenied {
		t.Error("a catalog without a warehouse or prefixes reads no table by location")
	}
}
