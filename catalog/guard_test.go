package catalog_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/internal/errs"
)

// onlyGuard lets the caller read the tables it lists, as "catalog.name".
type onlyGuard []string

func (g onlyGuard) Read(cat, name string, own bool) error {
	if slices.Contains(g, cat+"."+name) {
		return nil
	}
	return errs.Deniedf("no %s.%s (own %v)", cat, name, own)
}

func (g onlyGuard) Lists(cat string, _ bool) bool {
	return slices.ContainsFunc(g, func(s string) bool { return strings.HasPrefix(s, cat+".") })
}

// TestGuardRefusesAndHides: a guarded Set resolves only the tables its guard allows, however
// they are named (qualified, unqualified, falling back to the default catalog, pinned), and its
// information_schema lists only those.
func TestGuardRefusesAndHides(t *testing.T) {
	ctx := context.Background()
	primary := newMem(t, "cachedb", "mine", "theirs")
	lake := newMem(t, "lake", "open", "shut")
	set, err := catalog.NewSet(primary, []catalog.Catalog{lake, newMem(t, "other", "x")}, "lake")
	if err != nil {
		t.Fatal(err)
	}
	guarded := set.WithGuard(onlyGuard{"cachedb.mine", "lake.open"})
	for name, ok := range map[string]bool{
		"mine": true, "cachedb.mine": true, "open": true, "lake.open": true,
		"theirs": false, "shut": false, "lake.shut": false, "other.x": false,
	} {
		for _, s := range []*catalog.Set{guarded, guarded.WithPins(nil)} {
			_, err := s.Table(ctx, name)
			if ok && err != nil {
				t.Errorf("%s: %v", name, err)
			}
			if !ok && errs.CategoryOf(err) != errs.PermissionDenied {
				t.Errorf("%s: %v, want PermissionDenied", name, err)
			}
		}
	}
	if _, err := set.Table(ctx, "theirs"); err != nil {
		t.Errorf("the unguarded Set: %v", err)
	}
	// A missing table is still NotFound, and information_schema is readable.
	if _, err := guarded.Table(ctx, "nothing"); errs.CategoryOf(err) != errs.NotFound {
		t.Errorf("a missing table: %v", err)
	}
	tbl, err := guarded.Table(ctx, "information_schema.tables")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := tbl.Scan(ctx, catalog.ScanRequest{})
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := plan.Tasks[0].Open(ctx, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	var listed []string
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for i := range int(rec.NumRows()) {
			cat := rec.Column(0).(*array.String).Value(i)
			if cat != catalog.InformationSchema {
				listed = append(listed, cat+"."+rec.Column(2).(*array.String).Value(i))
			}
		}
	}
	slices.Sort(listed)
	if !slices.Equal(listed, []string{"cachedb.mine", "lake.open"}) {
		t.Errorf("information_schema.tables lists %v", listed)
	}
}
