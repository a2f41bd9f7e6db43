package exec

import (
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The typed column-versus-column comparison gives, for every operator, what the general
// row-by-row comparer gives: NULL where an operand is NULL, sliced operands included.
func TestCompareColumnsFastMatchesComparer(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(3))
	types := []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.FixedWidthTypes.Date32,
		&arrow.TimestampType{Unit: arrow.Microsecond}, arrow.FixedWidthTypes.Time64us}
	for _, dt := range types {
		mk := func() arrow.Array {
			parts := make([]string, 77)
			for i := range parts {
				if rng.Intn(6) == 0 {
					parts[i] = "null"
				} else {
					parts[i] = strconv.Itoa(rng.Intn(5))
				}
			}
			b := array.NewBuilder(mem, dt)
			defer b.Release()
			if err := b.UnmarshalJSON([]byte("[" + strings.Join(parts, ",") + "]")); err != nil {
				t.Fatal(err)
			}
			return b.NewArray()
		}
		fa, fb := mk(), mk()
		a, b := array.NewSlice(fa, 3, 77), array.NewSlice(fb, 5, 79-5)
		b2 := array.NewSlice(fb, 3, 77)
		for _, op := range []string{"=", "<>", "<", "<=", ">", ">="} {
			want := comparisonOutcome(op)
			for _, pair := range [][2]arrow.Array{{fa, fb}, {a, b2}} {
				x, y := pair[0], pair[1]
				got := compareColumnsFast(mem, x, y, want)
				if got == nil {
					t.Fatalf("%s: no fast comparison", dt)
				}
				c, err := makeComparer(x, y)
				if err != nil {
					t.Fatal(err)
				}
				for i := range x.Len() {
					isNull := x.IsNull(i) || y.IsNull(i)
					if got.IsNull(i) != isNull || !isNull && got.(*array.Boolean).Value(i) != want[c(i, i)+1] {
						t.Fatalf("%s %s row %d: got %v (null %v)", dt, op, i, got.(*array.Boolean).Value(i), got.IsNull(i))
					}
				}
				got.Release()
			}
		}
		for _, arr := range []arrow.Array{fa, fb, a, b, b2} {
			arr.Release()
		}
	}
}
