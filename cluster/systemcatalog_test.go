package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/internal/errs"
)

func TestSystemNodes(t *testing.T) {
	m, clock, _ := newTestMembership()
	start := clock.Now()
	for _, id := range []string{"b", "a"} {
		if _, err := m.Register(id, id+".local:7000", "boot-"+id); err != nil {
			t.Fatal(err)
		}
	}
	for range 11 {
		tick(t, m, clock, "a") // b: 11 s silent, lost
	}

	ctx := context.Background()
	c := NewSystemCatalog(m, nil)
	if names, _ := c.TableNames(ctx); len(names) != 1 || names[0] != "nodes" {
		t.Errorf("TableNames = %v", names)
	}
	if _, err := c.Table(ctx, "missing"); errs.CategoryOf(err) != errs.NotFound {
		t.Errorf("system.missing: %v", err)
	}
	tbl, err := c.Table(ctx, "NODES")
	if err != nil {
		t.Fatal(err)
	}

	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	// All columns.
	rows := scanAll(t, mem, tbl, catalog.ScanRequest{})
	want := [][]any{
		{"a", "a.local:7000", "alive", start, start.Add(11 * time.Second), "boot-a"},
		{"b", "b.local:7000", "lost", start, start, "boot-b"},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows = %v", rows)
	}
	for i := range want {
		for j := range want[i] {
			if !equalValue(rows[i][j], want[i][j]) {
				t.Errorf("row %d column %s = %v, want %v", i, nodesSchema.Field(j).Name, rows[i][j], want[i][j])
			}
		}
	}

	// A projection, columns reordered.
	rows = scanAll(t, mem, tbl, catalog.ScanRequest{Columns: []int{2, 0}})
	if len(rows) != 2 || rows[0][0] != "alive" || rows[0][1] != "a" || rows[1][0] != "lost" {
		t.Errorf("state, id = %v", rows)
	}
	if _, err := tbl.Scan(ctx, catalog.ScanRequest{Columns: []int{6}}); err == nil {
		t.Error("column 6 accepted")
	}
}

// scanAll reads every task of a scan into rows of Go values (strings and UTC times).
func scanAll(t *testing.T, mem memory.Allocator, tbl catalog.Table, req catalog.ScanRequest) [][]any {
	t.Helper()
	plan, err := tbl.Scan(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]any
	for _, task := range plan.Tasks {
		rr, err := task.Open(context.Background(), mem)
		if err != nil {
			t.Fatal(err)
		}
		for rr.Next() {
			rec := rr.RecordBatch()
			for r := 0; r < int(rec.NumRows()); r++ {
				var row []any
				for _, col := range rec.Columns() {
					switch a := col.(type) {
					case *array.String:
						row = append(row, a.Value(r))
					case *array.Timestamp:
						row = append(row, a.Value(r).ToTime(arrow.Microsecond))
					default:
						t.Fatalf("unexpected column type %s", col.DataType())
					}
				}
				rows = append(rows, row)
			}
		}
		if err := rr.Err(); err != nil {
			t.Fatal(err)
		}
		rr.Release()
	}
	return rows
}

func equalValue(got, want any) bool {
	if w, ok := want.(time.Time); ok {
		g, ok := got.(time.Time)
		return ok && g.Equal(w)
	}
	return got == want
}
