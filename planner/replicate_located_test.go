package planner

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/catalog"
	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/exec"
)

// TestLocatedSeesThroughInstrumentation: a scan of dataset partitions is located whether or
// not the planner instruments it (EXPLAIN ANALYZE), so a process planning an instrumented stage
// replicates no join side that another process, planning it plain, does not.
func TestLocatedSeesThroughInstrumentation(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, nil)
	ds := memcat.NewDataset("few", 1, schema, 1) // attached without rows, as a node holding none
	scan, err := exec.NewScan(ds, "few", catalog.ScanRequest{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []exec.Operator{scan, exec.Instrument(scan), exec.NewCoalesce(exec.Instrument(scan))} {
		if !located(op) {
			t.Errorf("located(%s) = false, want true for a scan of dataset partitions", op)
		}
	}
}
