package memory

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	memalloc "github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/internal/errs"
)

// nestedSchema has a list and a dictionary column beside datasetSchema's, so a round trip
// through a mapped file covers children and dictionaries.
var nestedSchema = arrow.NewSchema(append(slices.Clone(datasetSchema.Fields()),
	arrow.Field{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	arrow.Field{Name: "kind", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}},
), nil)

func nestedBatch(mem memalloc.Allocator, from, to int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, nestedSchema)
	defer b.Release()
	for i := from; i < to; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.StringBuilder).Append("n" + string(rune('a'+i%26)))
		if i%3 == 0 {
			b.Field(2).(*array.Float64Builder).AppendNull()
		} else {
			b.Field(2).(*array.Float64Builder).Append(float64(i) / 2)
		}
		lb := b.Field(3).(*array.ListBuilder)
		if i%4 == 1 {
			lb.AppendNull()
		} else {
			lb.Append(true)
			for k := range i % 3 {
				lb.ValueBuilder().(*array.StringBuilder).Append(string(rune('x' + k)))
			}
		}
		if err := b.Field(4).(*array.BinaryDictionaryBuilder).AppendString([]string{"cat", "dog"}[i%2]); err != nil {
			panic(err)
		}
	}
	return b.NewRecordBatch()
}

// rowsOf renders batches as strings, one per row.
func rowsOf(batches []arrow.RecordBatch) []string {
	var out []string
	for _, b := range batches {
		for r := range int(b.NumRows()) {
			s := ""
			for c := range int(b.NumCols()) {
				s += b.Column(c).ValueStr(r) + "|"
			}
			out = append(out, s)
		}
	}
	return out
}

func openRows(t *testing.T, d *PartData) []string {
	t.Helper()
	batches, release, err := d.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	return rowsOf(batches)
}

func TestPartDataRoundTripsThroughAMappedFile(t *testing.T) {
	mem := memalloc.NewCheckedAllocator(memalloc.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	d := NewPartData(nestedSchema, []arrow.RecordBatch{nestedBatch(mem, 0, 50), nestedBatch(mem, 50, 51), nestedBatch(mem, 51, 51)})
	want := openRows(t, d)
	if len(want) != 51 || d.Rows() != 51 || d.Tier() != TierMemory {
		t.Fatalf("in memory: %d rows (Rows %d), tier %s", len(want), d.Rows(), d.Tier())
	}
	path := filepath.Join(t.TempDir(), "p0.arrow")
	size, err := d.ToDisk(path)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != size || size == 0 {
		t.Fatalf("file %v, size %d", err, size)
	}
	// The memory batches are released once moved (the checked allocator reaches 0).
	mem.AssertSize(t, 0)
	// A file with dictionary columns is read with a copy (see mapPartFile): nothing of the
	// mapping stays in use.
	if d.Tier() != TierDisk || d.Mappings() != 0 {
		t.Fatalf("tier %s, mappings %d", d.Tier(), d.Mappings())
	}
	if got := openRows(t, d); !slices.Equal(got, want) {
		t.Fatalf("rows from disk differ:\n got %v\nwant %v", got, want)
	}
	// A dataset scan reads the same rows from the disk tier.
	ds := NewDataset("feats", 1, nestedSchema, 1)
	if err := ds.SetPart(0, TieredPart(d)); err != nil {
		t.Fatal(err)
	}
	plan, err := ds.Scan(context.Background(), catalog.ScanRequest{Columns: []int{0, 3}})
	if err != nil {
		t.Fatal(err)
	}
	_, rows := readAll(t, plan.Tasks[0], memalloc.DefaultAllocator)
	if len(rows) != 51 || rows[1] != "1|(null)" {
		t.Fatalf("scan of the disk tier: %d rows, row 1 %q", len(rows), rows[1])
	}
	if st := d.Stats(); st.Reads != 3 || st.DiskBytes != size || st.LastRead.IsZero() {
		t.Fatalf("stats %+v", st)
	}
	d.Drop()
	if d.Mappings() != 0 {
		t.Fatalf("mapping kept after drop with no reader: %d", d.Mappings())
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("file kept after drop: %v", err)
	}
}

func TestMappedFileStaysMappedWhileAReaderHoldsItsArrays(t *testing.T) {
	d := NewPartData(datasetSchema, []arrow.RecordBatch{datasetBatch(memalloc.DefaultAllocator, 0, 100), datasetBatch(memalloc.DefaultAllocator, 100, 120)})
	want := openRows(t, d)
	if _, err := d.ToDisk(filepath.Join(t.TempDir(), "p.arrow")); err != nil {
		t.Fatal(err)
	}
	if d.Mappings() != 1 {
		t.Fatalf("a partition on disk has %d mappings", d.Mappings())
	}
	if got := openRows(t, d); !slices.Equal(got, want) {
		t.Fatalf("rows from disk differ:\n got %v\nwant %v", got, want)
	}
	batches, release, err := d.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// A reader keeps one column past its release of the batches, as an operator retaining its
	// input does.
	names := batches[0].Column(1)
	names.Retain()
	release()
	d.Drop()
	if d.Mappings() != 1 {
		t.Fatalf("mapping ended while a reader holds a column of it: mappings %d", d.Mappings())
	}
	if got := names.(*array.String).Value(99); got != "n"+string(rune('a'+99%26)) {
		t.Fatalf("value read from the kept mapping = %q", got)
	}
	names.Release()
	if d.Mappings() != 0 {
		t.Fatalf("mapping not ended after the last array was released: %d", d.Mappings())
	}
	if _, _, err := d.Open(context.Background()); errs.CategoryOf(err) != errs.Unavailable {
		t.Fatalf("Open of a dropped partition = %v", err)
	}
}

func TestEvictedPartitionIsMadeAgainWhenRead(t *testing.T) {
	d := NewPartData(datasetSchema, []arrow.RecordBatch{datasetBatch(memalloc.DefaultAllocator, 0, 10)})
	want := openRows(t, d)
	if _, err := d.ToDisk(filepath.Join(t.TempDir(), "p.arrow")); err != nil {
		t.Fatal(err)
	}
	if n := d.Evict(); n <= 0 || d.Tier() != TierEvicted {
		t.Fatalf("Evict freed %d, tier %s", n, d.Tier())
	}
	if _, _, err := d.Open(context.Background()); errs.CategoryOf(err) != errs.ResourceExhausted {
		t.Fatalf("Open of an evicted partition without a reload = %v", err)
	}
	reloads := 0
	d.SetReload(func(context.Context) error {
		reloads++
		return d.Restore([]arrow.RecordBatch{datasetBatch(memalloc.DefaultAllocator, 0, 10)})
	})
	if got := openRows(t, d); !slices.Equal(got, want) || reloads != 1 || d.Tier() != TierMemory {
		t.Fatalf("after reload: %d rows, %d reloads, tier %s", len(got), reloads, d.Tier())
	}
	if got := openRows(t, d); !slices.Equal(got, want) || reloads != 1 {
		t.Fatalf("second read reloaded again (%d)", reloads)
	}
	// Rows that differ from the partition's are refused.
	if _, err := d.ToDisk(filepath.Join(t.TempDir(), "q.arrow")); err != nil {
		t.Fatal(err)
	}
	d.Evict()
	d.SetReload(func(context.Context) error {
		return d.Restore([]arrow.RecordBatch{datasetBatch(memalloc.DefaultAllocator, 0, 9)})
	})
	if _, _, err := d.Open(context.Background()); errs.CategoryOf(err) != errs.Internal {
		t.Fatalf("Open of a partition made again with other rows = %v", err)
	}
}
