package flightsql

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// buildBatch makes a batch of rows (int64 id, utf8 text) where row i's text has width(i) bytes.
func buildBatch(mem memory.Allocator, rows int, width func(i int) int) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "text", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := 0; i < rows; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(strings.Repeat("x", width(i)))
	}
	return b.NewRecordBatch()
}

func TestSplitBatchCapsBytes(t *testing.T) {
	const capBytes = 1 << 20
	tests := []struct {
		name   string
		rows   int
		width  func(int) int
		pieces int // exact count, or 0 for "more than one"
	}{
		{"small stays whole", 100, func(int) int { return 10 }, 1},
		{"uniform rows", 10_000, func(int) int { return 1000 }, 0},
		{"skewed rows", 2000, func(i int) int {
			if i >= 1900 {
				return 50_000
			}
			return 10
		}, 0},
		{"one huge row", 1, func(int) int { return 3 * capBytes }, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			rec := buildBatch(mem, tt.rows, tt.width)
			defer rec.Release()
			pieces := splitBatch(rec, capBytes)
			var rows int64
			for i, p := range pieces {
				if p.NumRows() > 1 && recordBytes(p) > capBytes-ipcOverheadBytes {
					t.Errorf("piece %d has %d bytes over the cap", i, recordBytes(p))
				}
				// Pieces must keep row order.
				if p.NumRows() > 0 {
					first := p.Column(0).(*array.Int64).Value(0)
					if first != rows {
						t.Errorf("piece %d starts at row %d, want %d", i, first, rows)
					}
				}
				rows += p.NumRows()
				p.Release()
			}
			if rows != int64(tt.rows) {
				t.Errorf("pieces hold %d rows, want %d", rows, tt.rows)
			}
			if tt.pieces > 0 && len(pieces) != tt.pieces {
				t.Errorf("%d pieces, want %d", len(pieces), tt.pieces)
			}
			if tt.pieces == 0 && len(pieces) < 2 {
				t.Errorf("%d pieces, want a split", len(pieces))
			}
		})
	}
}

func TestRecordBytesCountsOnlyTheSlice(t *testing.T) {
	mem := memory.NewGoAllocator()
	rec := buildBatch(mem, 1000, func(int) int { return 100 })
	defer rec.Release()
	whole := recordBytes(rec)
	half := rec.NewSlice(0, 500)
	defer half.Release()
	if got := recordBytes(half); got > whole/2+64 || got < whole/2-64 {
		t.Errorf("half slice estimated at %d bytes, whole at %d", got, whole)
	}
}

// A column of the null type (SELECT NULL) has no buffers and no dictionary: estimating it
// must not dereference either.
func TestRecordBytesOfNullColumn(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	nulls := array.NewNull(3)
	defer nulls.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.Null, Nullable: true}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{nulls}, 3)
	defer rec.Release()
	if got := recordBytes(rec); got != 0 {
		t.Errorf("null column estimated at %d bytes, want 0", got)
	}
	for _, p := range splitBatch(rec, 1<<20) {
		p.Release()
	}
}
