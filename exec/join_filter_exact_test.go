package exec

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A join table of integer keys over a narrow range has an exact filter, and finds with it
// exactly what it finds without one: keys below, inside and above the range, the range's ends,
// NULLs and removed keys; a table whose keys span a wide range (or cross zero, as words) has
// none.
func TestExactJoinFilter(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	form := joinKeyFormOf([]arrow.DataType{arrow.PrimitiveTypes.Int64})
	keysOf := func(vals []int64, nullEvery int) *joinKeys {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		for i, v := range vals {
			if nullEvery > 0 && i%nullEvery == 0 {
				b.AppendNull()
			} else {
				b.Append(v)
			}
		}
		col := b.NewArray()
		defer col.Release()
		k, err := newJoinKeys(form, []arrow.Array{col}, col.Len(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	var build []int64
	for v := int64(1000); v <= 6000; v += 7 {
		build = append(build, v, v) // repeated keys
	}
	table := newJoinTable(keysOf(build, 11), form)
	if !table.filter.exact {
		t.Fatalf("keys 1000..6000 in %d slots: no exact filter", len(table.slots))
	}
	plain := *table
	plain.filter = joinFilter{}
	var probe []int64
	for v := int64(-5); v <= 6010; v++ {
		probe = append(probe, v)
	}
	probe = append(probe, 1<<40, -1<<40)
	pk := keysOf(probe, 13)
	check := func(what string) {
		t.Helper()
		found := 0
		for row := range pk.n {
			if pk.null != nil && pk.null[row] {
				continue
			}
			got, want := table.find(pk, row), plain.find(pk, row)
			if got != want {
				t.Fatalf("%s: key %d found in slot %d, want %d", what, probe[row], got, want)
			}
			if got >= 0 {
				found++
			}
		}
		if found == 0 {
			t.Fatalf("%s: no probe key found", what)
		}
	}
	check("built")
	// Removing keys (as a left-build join does) leaves the filter's bits: the slot decides.
	for row := 0; row < pk.n; row += 3 {
		if pk.null == nil || !pk.null[row] {
			if slot := table.find(pk, row); slot >= 0 {
				table.remove(slot)
			}
		}
	}
	check("after removals")

	for _, vals := range [][]int64{{1, 1 << 40}, {-3, 3}} {
		if wide := newJoinTable(keysOf(vals, 0), form); wide.filter.exact {
			t.Errorf("keys %v: an exact filter over a range of %d", vals, wide.filter.span)
		}
	}
}
