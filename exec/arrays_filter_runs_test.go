package exec

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// selectedRuns finds exactly the runs of set bits, at every bit offset a byte boundary allows
// and across word boundaries, and gives up beyond maxRuns.
func TestSelectedRuns(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for trial := 0; trial < 300; trial++ {
		n := rng.Intn(300)
		offset := 8 * rng.Intn(3)
		density := rng.Float64()
		bits := make([]bool, offset+n)
		bitmap := make([]byte, (offset+n+7)/8)
		for i := range bits {
			if rng.Float64() < density {
				bits[i] = true
				bitmap[i/8] |= 1 << (i % 8)
			}
		}
		var want []int32
		for i := 0; i < n; i++ {
			if bits[offset+i] && (i == 0 || !bits[offset+i-1]) {
				j := i
				for j < n && bits[offset+j] {
					j++
				}
				want = append(want, int32(i), int32(j))
			}
		}
		got := selectedRuns(bitmap, offset, n, n+1)
		if fmt.Sprint(got) != fmt.Sprint(want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("n=%d offset=%d: runs %v, want %v", n, offset, got, want)
		}
		if len(want) > 2 && selectedRuns(bitmap, offset, n, len(want)/2-1) != nil {
			t.Fatalf("n=%d offset=%d: %d runs found with a limit of %d", n, offset, len(want)/2, len(want)/2-1)
		}
	}
	if selectedRuns([]byte{0xFF, 0xFF}, 3, 10, 10) != nil {
		t.Fatal("an offset inside a byte has no run selection")
	}
}

// Filtering by runs gives exactly the batch that gathering the kept rows by index gives, for
// every layout (those copied by run and the others), NULLs, sliced columns and dense masks.
func TestFilterRunsMatchesGather(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tc := &TaskContext{Alloc: mem}
	rng := rand.New(rand.NewSource(2))
	const n = 1000
	ib := array.NewInt64Builder(mem)
	i32 := array.NewInt32Builder(mem)
	db := array.NewDecimal128Builder(mem, dec(15, 2).(*arrow.Decimal128Type))
	bb := array.NewBooleanBuilder(mem)
	sb := array.NewStringBuilder(mem)
	fb := array.NewFloat16Builder(mem) // no run copy: gathered
	for i := 0; i < n; i++ {
		if rng.Intn(7) == 0 {
			ib.AppendNull()
			i32.AppendNull()
			db.AppendNull()
			bb.AppendNull()
			sb.AppendNull()
		} else {
			ib.Append(rng.Int63())
			i32.Append(rng.Int31())
			db.Append(decimal128.FromI64(rng.Int63n(1e9)))
			bb.Append(rng.Intn(2) == 0)
			sb.Append(fmt.Sprintf("s%0*d", rng.Intn(5), rng.Intn(100)))
		}
		fb.AppendNull()
	}
	cols := []arrow.Array{ib.NewArray(), i32.NewArray(), db.NewArray(), bb.NewArray(), sb.NewArray(), fb.NewArray()}
	for _, b := range []interface{ Release() }{ib, i32, db, bb, sb, fb} {
		b.Release()
	}
	defer releaseArrays(cols)
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: fmt.Sprint("c", i), Type: c.DataType(), Nullable: true}
	}
	schema := arrow.NewSchema(fields, nil)
	for _, from := range []int{0, 13} {
		sliced := make([]arrow.Array, len(cols))
		for i, c := range cols {
			sliced[i] = array.NewSlice(c, int64(from), n)
		}
		batch := array.NewRecordBatch(schema, sliced, int64(n-from))
		releaseArrays(sliced)
		for _, keep := range []float64{0.5, 0.97, 0.999} {
			mb := array.NewBooleanBuilder(mem)
			for i := 0; i < n-from; i++ {
				mb.Append(rng.Float64() < keep)
			}
			mask := mb.NewBooleanArray()
			mb.Release()
			bitmap, offset := maskBitmap(mask)
			sel := selectedRows(bitmap, offset, n-from, nil)
			want, err := takeBatchRows(ctx, tc, batch, sel)
			if err != nil {
				t.Fatal(err)
			}
			runs := selectedRuns(bitmap, offset, n-from, len(sel))
			got, err := filterRuns(ctx, tc, batch, runs, len(sel))
			if err != nil {
				t.Fatal(err)
			}
			for c := range cols {
				if g, w := renderArray(got.Column(c)), renderArray(want.Column(c)); g != w || got.Column(c).NullN() != want.Column(c).NullN() {
					t.Errorf("slice from %d, keep %.3f, column %s: runs give %.80s (%d NULLs), gather gives %.80s (%d)", from, keep, cols[c].DataType(), g, got.Column(c).NullN(), w, want.Column(c).NullN())
				}
			}
			if err := got.Column(4).(*array.String).ValidateFull(); err != nil {
				t.Errorf("string column: %v", err)
			}
			got.Release()
			want.Release()
			mask.Release()
		}
		batch.Release()
	}
}
