package memory

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	memalloc "github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/internal/errs"
)

var datasetSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String},
	{Name: "score", Type: arrow.PrimitiveTypes.Float64},
}, nil)

// datasetBatch builds a batch of datasetSchema with ids from..to-1 in mem.
func datasetBatch(mem memalloc.Allocator, from, to int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, datasetSchema)
	defer b.Release()
	for i := from; i < to; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.StringBuilder).Append("n" + string(rune('a'+i%26)))
		b.Field(2).(*array.Float64Builder).Append(float64(i) / 2)
	}
	return b.NewRecordBatch()
}

// readAll opens a task with mem and renders its rows as "v1|v2" strings, releasing the reader.
func readAll(t *testing.T, task catalog.ScanTask, mem memalloc.Allocator) (*arrow.Schema, []string) {
	t.Helper()
	rdr, err := task.Open(context.Background(), mem)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	var rows []string
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for r := 0; r < int(rec.NumRows()); r++ {
			vals := make([]string, rec.NumCols())
			for c := range vals {
				vals[c] = rec.Column(c).ValueStr(r)
			}
			rows = append(rows, strings.Join(vals, "|"))
		}
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
	return rdr.Schema(), rows
}

func TestDatasetScanHasOneTaskPerPartitionInOrder(t *testing.T) {
	ctx := context.Background()
	mem := memalloc.NewCheckedAllocator(memalloc.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	d := NewDataset("feats", 7, datasetSchema, 3)
	if d.Version() != "@7" || d.Generation() != 7 || d.NumPartitions() != 3 {
		t.Fatalf("version %q generation %d partitions %d", d.Version(), d.Generation(), d.NumPartitions())
	}
	p0 := []arrow.RecordBatch{datasetBatch(mem, 0, 3), datasetBatch(mem, 3, 5)}
	p2 := []arrow.RecordBatch{datasetBatch(mem, 10, 11)}
	defer func() {
		for _, b := range slices.Concat(p0, p2) {
			b.Release()
		}
	}()
	local0 := LocalPart(p0)
	if local0.Rows != 5 || local0.Bytes <= 0 || !local0.Held() {
		t.Fatalf("LocalPart = rows %d bytes %d held %v", local0.Rows, local0.Bytes, local0.Held())
	}
	if err := d.SetPart(0, local0); err != nil {
		t.Fatal(err)
	}
	if err := d.SetPart(1, Part{Rows: 4, Bytes: 4096, Location: "node-b:9000"}); err != nil {
		t.Fatal(err)
	}
	if err := d.SetPart(2, LocalPart(p2)); err != nil {
		t.Fatal(err)
	}
	if err := d.SetPart(3, LocalPart(nil)); errs.CategoryOf(err) != errs.InvalidInput {
		t.Errorf("SetPart(3) of 3 partitions: %v, want invalid input", err)
	}
	if rows, bytes := d.Totals(); rows != 10 || bytes != local0.Bytes+4096+d.Parts()[2].Bytes {
		t.Errorf("Totals = %d rows %d bytes", rows, bytes)
	}

	plan, err := d.Scan(ctx, catalog.ScanRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Tasks) != 3 {
		t.Fatalf("%d tasks, want one per partition", len(plan.Tasks))
	}
	if plan.Explain != "generation=7" {
		t.Errorf("Explain = %q", plan.Explain)
	}
	wantRows := []int64{5, 4, 1}
	wantLoc := []string{"", "node-b:9000", ""}
	for i, task := range plan.Tasks {
		if task.EstimatedRows() != wantRows[i] {
			t.Errorf("task %d EstimatedRows = %d, want %d", i, task.EstimatedRows(), wantRows[i])
		}
		sized, ok := task.(catalog.SizedTask)
		if !ok || sized.EstimatedBytes() != max(d.Parts()[i].Bytes, 1) {
			t.Errorf("task %d is not sized by its partition's bytes", i)
		}
		located, ok := task.(catalog.LocatedTask)
		if !ok || located.Location() != wantLoc[i] {
			t.Errorf("task %d location = %v, want %q", i, located, wantLoc[i])
		}
	}
	// An empty partition still costs something to place.
	empty := NewDataset("e", 1, datasetSchema, 1)
	_ = empty.SetPart(0, LocalPart(nil))
	ep, _ := empty.Scan(ctx, catalog.ScanRequest{})
	if got := ep.Tasks[0].(catalog.SizedTask).EstimatedBytes(); got != 1 {
		t.Errorf("empty partition EstimatedBytes = %d, want 1", got)
	}
	if _, rows := readAll(t, ep.Tasks[0], mem); len(rows) != 0 {
		t.Errorf("empty held partition read %v", rows)
	}

	// Held partitions read back the projected columns, in the requested order.
	plan, err = d.Scan(ctx, catalog.ScanRequest{Columns: []int{2, 0}})
	if err != nil {
		t.Fatal(err)
	}
	schema, rows := readAll(t, plan.Tasks[0], mem)
	if schema.NumFields() != 2 || schema.Field(0).Name != "score" || schema.Field(1).Name != "id" {
		t.Errorf("projected schema = %s", schema)
	}
	if want := []string{"0|0", "0.5|1", "1|2", "1.5|3", "2|4"}; !slices.Equal(rows, want) {
		t.Errorf("partition 0 rows = %v, want %v", rows, want)
	}
	if _, rows := readAll(t, plan.Tasks[2], mem); !slices.Equal(rows, []string{"5|10"}) {
		t.Errorf("partition 2 rows = %v", rows)
	}
	// A held partition may be read any number of times.
	if _, again := readAll(t, plan.Tasks[0], mem); len(again) != 5 {
		t.Errorf("second read of partition 0: %d rows", len(again))
	}

	// A remote partition without a way to fetch it is unavailable here, and says where it is.
	_, err = plan.Tasks[1].Open(ctx, mem)
	if errs.CategoryOf(err) != errs.Unavailable || !strings.Contains(err.Error(), "node-b:9000") || !strings.Contains(err.Error(), "feats") {
		t.Errorf("open of a remote partition without Fetch: %v, want Unavailable naming the node", err)
	}
	// A partition known nowhere (a data node asked for another node's partition) is too.
	absent := NewDataset("gone", 2, datasetSchema, 2)
	ap, _ := absent.Scan(ctx, catalog.ScanRequest{})
	if _, err := ap.Tasks[1].Open(ctx, mem); errs.CategoryOf(err) != errs.Unavailable || !strings.Contains(err.Error(), "not held") {
		t.Errorf("open of a partition held nowhere: %v", err)
	}

	// A column index outside the schema is refused at planning.
	if _, err := d.Scan(ctx, catalog.ScanRequest{Columns: []int{3}}); errs.CategoryOf(err) != errs.Internal {
		t.Errorf("scan of column 3: %v", err)
	}
}

func TestDatasetRemotePartitionFetchesProjectedColumns(t *testing.T) {
	ctx := context.Background()
	mem := memalloc.NewCheckedAllocator(memalloc.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	d := NewDataset("remote", 3, datasetSchema, 1)
	var asked []int
	err := d.SetPart(0, Part{Rows: 2, Bytes: 100, Location: "node-a:1", Fetch: func(_ context.Context, cols []int) (array.RecordReader, error) {
		asked = slices.Clone(cols)
		full := datasetBatch(mem, 40, 42)
		defer full.Release()
		arrs := make([]arrow.Array, len(cols))
		fields := make([]arrow.Field, len(cols))
		for i, c := range cols {
			arrs[i], fields[i] = full.Column(c), datasetSchema.Field(c)
		}
		s := arrow.NewSchema(fields, nil)
		rec := array.NewRecordBatch(s, arrs, full.NumRows())
		defer rec.Release()
		return array.NewRecordReader(s, []arrow.RecordBatch{rec})
	}})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := d.Scan(ctx, catalog.ScanRequest{Columns: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	if loc := plan.Tasks[0].(catalog.LocatedTask).Location(); loc != "node-a:1" {
		t.Errorf("Location = %q", loc)
	}
	_, rows := readAll(t, plan.Tasks[0], mem)
	if !slices.Equal(asked, []int{1}) || !slices.Equal(rows, []string{"no", "np"}) {
		t.Errorf("fetch asked for %v and read %v", asked, rows)
	}
}

func TestAttachDatasetSharesTheNamespace(t *testing.T) {
	ctx := context.Background()
	c := NewCatalog("cachedb")
	if _, err := c.CreateTable(ctx, "people", schema, false); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateView(ctx, "v", "SELECT 1", false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AttachDataset(NewDataset("People", 1, datasetSchema, 1), true); errs.CategoryOf(err) != errs.AlreadyExists {
		t.Errorf("dataset over a table: %v", err)
	}
	if _, err := c.AttachDataset(NewDataset("V", 1, datasetSchema, 1), true); errs.CategoryOf(err) != errs.AlreadyExists {
		t.Errorf("dataset over a view: %v", err)
	}

	first := NewDataset("Feats", 10, datasetSchema, 2)
	if old, err := c.AttachDataset(first, false); err != nil || old != nil {
		t.Fatalf("AttachDataset = %v, %v", old, err)
	}
	if _, err := c.AttachDataset(NewDataset("feats", 11, datasetSchema, 2), false); errs.CategoryOf(err) != errs.AlreadyExists {
		t.Errorf("second dataset of one name without replace: %v", err)
	}
	if _, err := c.CreateTable(ctx, "FEATS", schema, false); errs.CategoryOf(err) != errs.AlreadyExists {
		t.Errorf("table over a dataset: %v", err)
	}
	for _, orReplace := range []bool{false, true} {
		if err := c.CreateView(ctx, "Feats", "SELECT 1", orReplace); errs.CategoryOf(err) != errs.AlreadyExists || !strings.Contains(err.Error(), "dataset") {
			t.Errorf("view over a dataset (or replace %v): %v", orReplace, err)
		}
	}
	if got, ok := c.Dataset("feats"); !ok || got != first {
		t.Errorf("Dataset(feats) = %v, %v", got, ok)
	}
	if tbl, err := c.Table(ctx, "FEATS"); err != nil || tbl != first {
		t.Errorf("Table(FEATS) = %v, %v", tbl, err)
	}

	second := NewDataset("feats", 11, datasetSchema, 2)
	old, err := c.AttachDataset(second, true)
	if err != nil || old != first {
		t.Fatalf("replace returned %v, %v; want the first generation", old, err)
	}
	if got, _ := c.Dataset("Feats"); got != second {
		t.Errorf("after replace Dataset = generation %d", got.Generation())
	}
	if list := c.Datasets(); len(list) != 1 || list[0] != second {
		t.Errorf("Datasets = %v", list)
	}
}

func TestDatasetVersionedNamesResolveOnlyTheCurrentGeneration(t *testing.T) {
	ctx := context.Background()
	c := NewCatalog("cachedb")
	d := NewDataset("feats", 42, datasetSchema, 1)
	if _, err := c.AttachDataset(d, false); err != nil {
		t.Fatal(err)
	}
	tbl, err := c.Table(ctx, "feats@42")
	if err != nil || tbl != d {
		t.Fatalf("Table(feats@42) = %v, %v", tbl, err)
	}
	if vt, ok := tbl.(catalog.VersionedTable); !ok || vt.Version() != "@42" {
		t.Errorf("dataset is not a VersionedTable at @42")
	}
	_, err = c.Table(ctx, "feats@41")
	if errs.CategoryOf(err) != errs.NotFound || !strings.Contains(err.Error(), "no longer held") || !strings.Contains(err.Error(), "@42") {
		t.Errorf("Table(feats@41) = %v, want NotFound naming the current generation", err)
	}
	if _, err := c.Table(ctx, "nothing@1"); errs.CategoryOf(err) != errs.NotFound {
		t.Errorf("Table(nothing@1) = %v", err)
	}
	// A memory table has no versions.
	if _, err := c.CreateTable(ctx, "plain", schema, false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Table(ctx, "plain@1"); errs.CategoryOf(err) != errs.NotFound {
		t.Errorf("Table(plain@1) = %v", err)
	}

	// Made again: the old generation no longer resolves, the new one does.
	d2 := NewDataset("feats", 43, datasetSchema, 1)
	if _, err := c.AttachDataset(d2, true); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Table(ctx, "feats@42"); errs.CategoryOf(err) != errs.NotFound {
		t.Errorf("old generation still resolves: %v", err)
	}
	if tbl, err := c.Table(ctx, "feats@43"); err != nil || tbl != d2 {
		t.Errorf("Table(feats@43) = %v, %v", tbl, err)
	}
	// A data node keeps the displaced generation until the head drops it: reads planned
	// against it before the replace still resolve it, by its own version only.
	d2.SetDisplaced(d)
	if tbl, err := c.Table(ctx, "feats@42"); err != nil || tbl != d {
		t.Errorf("Table(feats@42) with @42 displaced = %v, %v", tbl, err)
	}
	if _, err := c.Table(ctx, "feats@40"); errs.CategoryOf(err) != errs.NotFound {
		t.Errorf("Table(feats@40) = %v, want NotFound", err)
	}
	d2.SetDisplaced(nil)
	if _, err := c.Table(ctx, "feats@42"); errs.CategoryOf(err) != errs.NotFound {
		t.Errorf("dropped displaced generation still resolves: %v", err)
	}
}

func TestDetachAndDropDataset(t *testing.T) {
	ctx := context.Background()
	c := NewCatalog("cachedb")
	if _, err := c.CreateTable(ctx, "zeta", schema, false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AttachDataset(NewDataset("alpha", 5, datasetSchema, 1), false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AttachDataset(NewDataset("mid", 6, datasetSchema, 1), false); err != nil {
		t.Fatal(err)
	}
	names, err := c.TableNames(ctx)
	if err != nil || !slices.Equal(names, []string{"alpha", "mid", "zeta"}) {
		t.Errorf("TableNames = %v, %v", names, err)
	}
	if list := c.Datasets(); len(list) != 2 || list[0].Name() != "alpha" || list[1].Name() != "mid" {
		t.Errorf("Datasets not sorted by name: %v", list)
	}

	// Detach by generation: another generation is left alone, the right one or 0 removes it.
	if c.DetachDataset("alpha", 4) {
		t.Error("DetachDataset of another generation removed the dataset")
	}
	if _, ok := c.Dataset("alpha"); !ok {
		t.Fatal("alpha gone after a refused detach")
	}
	if !c.DetachDataset("ALPHA", 5) {
		t.Error("DetachDataset(ALPHA, 5) did not remove it")
	}
	if c.DetachDataset("alpha", 0) {
		t.Error("second detach reported success")
	}
	if !c.DetachDataset("mid", 0) {
		t.Error("DetachDataset(mid, 0) did not remove it")
	}
	if _, err := c.Table(ctx, "mid"); errs.CategoryOf(err) != errs.NotFound {
		t.Errorf("detached dataset still resolves: %v", err)
	}

	// DROP TABLE drops a dataset, and the name is free for a table afterwards.
	if _, err := c.AttachDataset(NewDataset("feats", 9, datasetSchema, 1), false); err != nil {
		t.Fatal(err)
	}
	if err := c.DropTable(ctx, "Feats", false); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Dataset("feats"); ok {
		t.Error("dataset still attached after DropTable")
	}
	if err := c.DropTable(ctx, "feats", false); errs.CategoryOf(err) != errs.NotFound {
		t.Errorf("second DropTable: %v", err)
	}
	if _, err := c.CreateTable(ctx, "feats", schema, false); err != nil {
		t.Errorf("table after the dataset was dropped: %v", err)
	}
	if names, _ := c.TableNames(ctx); !slices.Equal(names, []string{"feats", "zeta"}) {
		t.Errorf("TableNames = %v", names)
	}
}
