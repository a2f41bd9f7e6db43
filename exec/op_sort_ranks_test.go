package exec

import (
	"math/rand"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A string sort key of few distinct values, compared by rank, orders every pair of rows as
// comparing the bytes does: NULLs first, "" before any other string, prefixes first, bytes
// unsigned (0xff after ASCII); one of many distinct values is not ranked.
func TestSortRanksOrderAsBytes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(3))
	values := []string{"", "a", "ab", "a\x00", "B", "b", "Brand#45", "Brand#5", "\xff", "é", "MEDIUM POLISHED TIN"}
	build := func(n int, value func() string) *array.String {
		b := array.NewStringBuilder(mem)
		defer b.Release()
		for range n {
			if rng.Intn(10) == 0 {
				b.AppendNull()
			} else {
				b.Append(value())
			}
		}
		return b.NewArray().(*array.String)
	}
	col := build(3000, func() string { return values[rng.Intn(len(values))] })
	defer col.Release()
	ranked := sortRankedComparator(col)
	if ranked == nil {
		t.Fatal("3000 rows of 11 strings are not ranked")
	}
	bytewise, err := sortPairComparator(col, col)
	if err != nil {
		t.Fatal(err)
	}
	sign := func(c int) int { return min(max(c, -1), 1) }
	for range 200_000 {
		a, b := int32(rng.Intn(col.Len())), int32(rng.Intn(col.Len()))
		if got, want := sign(ranked(a, b)), sign(bytewise(a, b)); got != want {
			t.Fatalf("rows %d (%q, null %v) and %d (%q, null %v): ranked %d, bytes %d",
				a, col.Value(int(a)), col.IsNull(int(a)), b, col.Value(int(b)), col.IsNull(int(b)), got, want)
		}
	}
	// Through sortRowComparator, descending: NULLs last.
	desc, err := sortRowComparator([]arrow.Array{col}, []bool{true})
	if err != nil {
		t.Fatal(err)
	}
	for a := range int32(100) {
		for b := range int32(100) {
			if got, want := sign(desc(a, b)), -sign(bytewise(a, b)); got != want {
				t.Fatalf("descending rows %d and %d: %d, want %d", a, b, got, want)
			}
		}
	}

	wide := build(3000, func() string {
		return string(rune('a'+rng.Intn(26))) + string(rune('a'+rng.Intn(26))) + string(rune('a'+rng.Intn(26)))
	})
	defer wide.Release()
	if sortRankedComparator(wide) != nil {
		t.Error("3000 rows of about 2500 distinct strings are ranked")
	}
}
