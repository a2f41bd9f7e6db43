package node

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/catalog/iceberg"
	"github.com/cachedb/cachedb/catalog/iceberg/demo"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
)

// newLakeEngine returns an engine over a fresh embedded demo warehouse, as catalog "lake", the
// default for unqualified and namespace-qualified names.
func newLakeEngine(t *testing.T) *engine.Engine {
	t.Helper()
	return newLakeEngineWith(t, engine.Config{})
}

// newLakeEngineWith is newLakeEngine with cfg's other settings.
func newLakeEngineWith(t *testing.T, cfg engine.Config) *engine.Engine {
	t.Helper()
	wh, err := demo.Ensure(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	lake, err := iceberg.Open(context.Background(), wh.CatalogConfig("lake"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.NoDemo, cfg.Sources, cfg.DefaultCatalog = true, []catalog.Catalog{lake}, "lake"
	e, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// newLakeRuntime returns a runtime over newLakeEngine, closed when the test ends.
func newLakeRuntime(t *testing.T) *Runtime {
	t.Helper()
	rt, err := New(Config{Engine: newLakeEngine(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	return rt
}

// rowsOf reads rdr to its end, releases it and returns its rows as text.
func rowsOf(t *testing.T, rdr array.RecordReader) []string {
	t.Helper()
	defer rdr.Release()
	var out []string
	for rdr.Next() {
		b := rdr.RecordBatch()
		for i := range int(b.NumRows()) {
			var row []string
			for _, c := range b.Columns() {
				row = append(row, c.ValueStr(i))
			}
			out = append(out, strings.Join(row, ","))
		}
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// queryRows runs query on eng and returns its rows as text.
func queryRows(t *testing.T, eng *engine.Engine, query string) []string {
	t.Helper()
	res, err := eng.Execute(context.Background(), query, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rowsOf(t, res.Reader)
}

// partitionRows returns the rows of partition p of generation gen of dataset name, all columns.
func partitionRows(t *testing.T, rt *Runtime, name string, gen uint64, p int) []string {
	t.Helper()
	ds, ok := rt.eng.MemoryCatalog().Dataset(name)
	if !ok {
		t.Fatalf("dataset %q is not held", name)
	}
	cols := make([]int, ds.Schema().NumFields())
	for i := range cols {
		cols[i] = i
	}
	rdr, err := rt.ReadPartition(context.Background(), name, gen, p, cols)
	if err != nil {
		t.Fatal(err)
	}
	return rowsOf(t, rdr)
}

// TestPartitionsOfScanTasksHoldEachRowOnce: partitions made from groups of a query's scan
// tasks (as the head's registry groups them) hold each row of the query exactly once, and a
// partition made again holds its rows in the same order (training reads rely on it).
func TestPartitionsOfScanTasksHoldEachRowOnce(t *testing.T) {
	ctx := context.Background()
	rt := newLakeRuntime(t)
	const query = "SELECT ride_id, city FROM demo.rides WHERE city = 'Lisbon' AND passengers > 4"
	plan, err := rt.eng.Distribute(ctx, query, 1)
	if err != nil || plan == nil || len(plan.Scans) != 1 || plan.Scans[0].Tasks() < 2 {
		t.Fatalf("Distribute = %+v, %v; want one scan of several tasks", plan, err)
	}
	want := queryRows(t, rt.eng, query)
	groups := exec.AssignShares(plan.Scans[0].Bytes, 3)
	var got []string
	for p, tasks := range groups {
		req := cluster.MaterializeRequest{Dataset: "lisbon", Generation: 1, Partitions: len(groups), Partition: p, SQL: query, Tasks: tasks}
		st, err := rt.Materialize(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		first := partitionRows(t, rt, "lisbon", 1, p)
		if int64(len(first)) != st.Rows {
			t.Fatalf("partition %d: %d rows read, %d made", p, len(first), st.Rows)
		}
		if _, err := rt.Materialize(ctx, req); err != nil {
			t.Fatal(err)
		}
		if again := partitionRows(t, rt, "lisbon", 1, p); !slices.Equal(again, first) {
			t.Fatalf("partition %d made again holds its rows in another order", p)
		}
		got = append(got, first...)
	}
	slices.Sort(got)
	slices.Sort(want)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("the partitions hold %d rows, the query returns %d; or other rows", len(got), len(want))
	}
	if _, err := rt.Materialize(ctx, cluster.MaterializeRequest{Dataset: "agg", Generation: 1, Partitions: 1, SQL: "SELECT count(*) FROM demo.rides", Tasks: []int{0}}); errs.CategoryOf(err) != errs.InvalidInput {
		t.Errorf("a partition of scan tasks of an aggregate: %v, want InvalidInput", err)
	}
}

// TestDataNodeKeepsTheGenerationAReplaceDisplaces drives a runtime as a data node's dataset
// store: a new generation of a dataset displaces the one held, which stays readable by the head
// and is current again when the head drops the new one (making it failed), and is freed when the
// head drops it after a successful replace.
func TestDataNodeKeepsTheGenerationAReplaceDisplaces(t *testing.T) {
	ctx := context.Background()
	e := newLakeRuntime(t)
	hold := func(gen uint64, city string) cluster.PartitionStats {
		t.Helper()
		st, err := e.Materialize(ctx, cluster.MaterializeRequest{
			Dataset: "feats", Generation: gen, Partitions: 2, Partition: 1, Whole: true,
			SQL: "SELECT ride_id FROM demo.rides WHERE city = '" + city + "'",
		})
		if err != nil || st.Rows == 0 {
			t.Fatalf("Materialize generation %d: %+v, %v", gen, st, err)
		}
		return st
	}
	read := func(gen uint64) (int64, error) {
		rdr, err := e.ReadPartition(ctx, "feats", gen, 1, []int{0})
		if err != nil {
			return 0, err
		}
		defer rdr.Release()
		var n int64
		for rdr.Next() {
			n += rdr.RecordBatch().NumRows()
		}
		return n, rdr.Err()
	}
	current := func() uint64 {
		ds, ok := e.eng.MemoryCatalog().Dataset("feats")
		if !ok {
			return 0
		}
		return ds.Generation()
	}

	lisbon := hold(10, "Lisbon")
	tokyo := hold(20, "Tokyo")
	if current() != 20 {
		t.Fatalf("current generation %d, want 20", current())
	}
	if n, err := read(10); err != nil || n != lisbon.Rows {
		t.Errorf("displaced generation 10 reads %d rows, %v; want %d", n, err, lisbon.Rows)
	}
	if n, err := read(20); err != nil || n != tokyo.Rows {
		t.Errorf("generation 20 reads %d rows, %v; want %d", n, err, tokyo.Rows)
	}
	// A partition of the displaced generation made again goes to that generation.
	if st := hold(10, "Lisbon"); st.Rows != lisbon.Rows || current() != 20 {
		t.Errorf("rebuilding generation 10 made %+v, current is %d", st, current())
	}
	// An older generation never held is refused.
	if _, err := e.Materialize(ctx, cluster.MaterializeRequest{Dataset: "feats", Generation: 5, Partitions: 2, Whole: true, SQL: "SELECT 1"}); errs.CategoryOf(err) != errs.InvalidInput {
		t.Errorf("materializing a replaced generation: %v", err)
	}

	// Making generation 20 failed: the head drops it, and 10 is current again.
	e.DropDataset("feats", 20)
	if current() != 10 {
		t.Fatalf("after dropping generation 20 the current one is %d, want 10", current())
	}
	if _, err := read(20); errs.CategoryOf(err) != errs.Unavailable {
		t.Errorf("dropped generation 20 still reads: %v", err)
	}

	// A successful replace: the head drops the displaced generation, which is freed.
	hold(30, "Paris")
	e.DropDataset("feats", 10)
	if ds, _ := e.eng.MemoryCatalog().Dataset("feats"); ds.Generation() != 30 || ds.Displaced() != nil {
		t.Errorf("after dropping generation 10: current %d, displaced %v", ds.Generation(), ds.Displaced())
	}
	if _, err := read(10); errs.CategoryOf(err) != errs.Unavailable {
		t.Errorf("freed generation 10 still reads: %v", err)
	}
	e.DropDataset("feats", 30)
	if current() != 0 {
		t.Errorf("dataset still held after its last generation was dropped")
	}
}
