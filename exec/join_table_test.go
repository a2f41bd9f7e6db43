package exec

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// randomKeyColumn returns n values of type t drawn from few distinct ones (so keys repeat),
// with NULLs, -0 and NaN among the floats.
func randomKeyColumn(mem memory.Allocator, rng *rand.Rand, t arrow.DataType, n int) arrow.Array {
	b := array.NewBuilder(mem, t)
	defer b.Release()
	for range n {
		if rng.Intn(10) == 0 {
			b.AppendNull()
			continue
		}
		v := rng.Intn(7) - 3
		switch b := b.(type) {
		case *array.Int64Builder:
			b.Append(int64(v) << 40) // beyond 32 bits
		case *array.Int32Builder:
			b.Append(int32(v))
		case *array.Int8Builder:
			b.Append(int8(v))
		case *array.Date32Builder:
			b.Append(arrow.Date32(v))
		case *array.Float64Builder:
			f := []float64{0, math.Copysign(0, -1), math.NaN(), math.Float64frombits(0x7FF8000000000123), 1.5, -2.25}[rng.Intn(6)]
			b.Append(f)
		case *array.Decimal128Builder:
			b.Append(decimal128.New(int64(v), uint64(rng.Intn(2)))) // high words tell keys apart
		case *array.BooleanBuilder:
			b.Append(v > 0)
		case *array.StringBuilder:
			b.Append([]string{"", "a", "ab", "b", "a\x00", "a value of 17 byte", "a value of 17 bytf"}[rng.Intn(7)])
		case *array.Int16Builder:
			b.Append(int16(v))
		default:
			panic(fmt.Sprintf("randomKeyColumn: %T", b))
		}
	}
	return b.NewArray()
}

// TestJoinTableMatchesEncodedKeys checks that a join table finds for every probe row exactly
// the build rows whose row-key encoding equals the probe row's (the equality the hash joins
// promise), in ascending order, and none for a NULL key; in every key form, with full hashes
// and with hashes cut to two bits, so that distinct keys of several words or encoded collide.
func TestJoinTableMatchesEncodedKeys(t *testing.T) {
	for _, mask := range []uint64{^uint64(0), 3} {
		t.Run(fmt.Sprintf("mask=%x", mask), func(t *testing.T) {
			defer func(old uint64) { joinHashMask = old }(joinHashMask)
			joinHashMask = mask
			testJoinTableMatchesEncodedKeys(t)
		})
	}
	// Every table with a filter in front (joinFilter): it turns away no probe key the table has.
	t.Run("filtered", func(t *testing.T) {
		defer func(old int) { joinFilterMinSlots = old }(joinFilterMinSlots)
		joinFilterMinSlots = 0
		testJoinTableMatchesEncodedKeys(t)
	})
	// Every table with repeated keys lists its rows grouped (groupRows), also with colliding hashes.
	for _, mask := range []uint64{^uint64(0), 3} {
		t.Run(fmt.Sprintf("grouped/mask=%x", mask), func(t *testing.T) {
			defer func(old uint64, rows int) { joinHashMask, joinGroupMinRows = old, rows }(joinHashMask, joinGroupMinRows)
			joinHashMask, joinGroupMinRows = mask, 0
			testJoinTableMatchesEncodedKeys(t)
		})
	}
}

// A join filter answers true for every key added and false for most others.
func TestJoinFilter(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	f := newJoinFilter(1000)
	added := map[uint64]bool{}
	for range 1000 {
		h := rng.Uint64() >> rng.Intn(40) // small and large hashes: one-word keys are their own hash
		f.add(h)
		added[h] = true
	}
	for h := range added {
		if !f.mayHave(h) {
			t.Fatalf("hash %d added, filter says absent", h)
		}
	}
	passed := 0
	for range 10000 {
		if h := rng.Uint64() >> rng.Intn(40); !added[h] && f.mayHave(h) {
			passed++
		}
	}
	if passed > 2000 {
		t.Errorf("%d of 10000 absent keys pass the filter", passed)
	}
}

func testJoinTableMatchesEncodedKeys(t *testing.T) {
	dec := &arrow.Decimal128Type{Precision: 38, Scale: 2}
	keySets := [][]arrow.DataType{
		{arrow.PrimitiveTypes.Int64},
		{arrow.PrimitiveTypes.Int32},
		{arrow.PrimitiveTypes.Int8},
		{arrow.FixedWidthTypes.Date32},
		{arrow.PrimitiveTypes.Float64},
		{arrow.FixedWidthTypes.Boolean},
		{dec},
		{arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int32},
		{arrow.PrimitiveTypes.Float64, dec, arrow.FixedWidthTypes.Date32},
		{arrow.BinaryTypes.String},
		{arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64},
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for seed, types := range keySets {
		t.Run(fmt.Sprint(types), func(t *testing.T) {
			rng := rand.New(rand.NewSource(int64(seed)))
			form := joinKeyFormOf(types)
			if wantWords := types[0].ID() != arrow.STRING; (form.words > 0) != wantWords {
				t.Fatalf("form %+v for %v", form, types)
			}
			for _, size := range [][2]int{{0, 5}, {1, 5}, {300, 200}, {40, 1000}} {
				build := make([]arrow.Array, len(types))
				probe := make([]arrow.Array, len(types))
				for i, ty := range types {
					build[i] = randomKeyColumn(mem, rng, ty, size[0])
					probe[i] = randomKeyColumn(mem, rng, ty, size[1])
				}
				bk, err := newJoinKeys(form, build, size[0], nil)
				if err != nil {
					t.Fatal(err)
				}
				table := newJoinTable(bk, form)
				// Probe twice with one scratch, as the joins do batch after batch.
				scratch := &joinKeys{}
				for range 2 {
					pk, err := newJoinKeys(form, probe, size[1], scratch)
					if err != nil {
						t.Fatal(err)
					}
					checkJoinTable(t, table, pk, build, probe)
				}
				releaseAll(build)
				releaseAll(probe)
			}
		})
	}
}

// checkJoinTable compares what table finds for each row of pk with the rows of build whose
// encoded key equals that of probe's row.
func checkJoinTable(t *testing.T, table *joinTable, pk *joinKeys, build, probe []arrow.Array) {
	t.Helper()
	benc, err := NewRowKeyEncoder(build)
	if err != nil {
		t.Fatal(err)
	}
	penc, err := NewRowKeyEncoder(probe)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if len(build) > 0 {
		n = build[0].Len()
	}
	hasNull := false
	for b := range n {
		hasNull = hasNull || benc.HasNull(b)
	}
	if table.hasNullKey != hasNull {
		t.Errorf("hasNullKey %v, want %v", table.hasNullKey, hasNull)
	}
	for p := range pk.n {
		if nullKey := pk.null != nil && pk.null[p]; nullKey != penc.HasNull(p) {
			t.Fatalf("probe row %d: null %v, encoder says %v", p, nullKey, penc.HasNull(p))
		}
		if penc.HasNull(p) {
			continue
		}
		var want []int32
		key := string(penc.Append(nil, p))
		for b := range n {
			if !benc.HasNull(b) && string(benc.Append(nil, b)) == key {
				want = append(want, int32(b))
			}
		}
		var got []int32
		if slot := table.find(pk, p); slot >= 0 {
			for r := table.head(slot); r >= 0; r = table.next[r] {
				got = append(got, r)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("probe row %d (key %q): got build rows %v, want %v", p, key, got, want)
		}
		if table.grouped != nil {
			var listed []int32
			if slot := table.find(pk, p); slot >= 0 {
				listed = table.grouped[table.groupStart[slot]:table.groupStart[slot+1]]
			}
			if !slices.Equal(listed, want) {
				t.Fatalf("probe row %d (key %q): grouped build rows %v, want %v", p, key, listed, want)
			}
		}
	}
}

// TestJoinTableRemove checks that a removed key is no longer found while the keys stored past
// it (in its probe run) still are, and that live counts the keys left.
func TestJoinTableRemove(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	form := joinKeyForm{words: 1}
	b := array.NewInt64Builder(mem)
	// Many keys in few slots' worth of table: runs of colliding slots form.
	for i := range 1000 {
		b.Append(int64(i % 400))
	}
	col := b.NewArray()
	b.Release()
	defer col.Release()
	keys, err := newJoinKeys(form, []arrow.Array{col}, col.Len(), nil)
	if err != nil {
		t.Fatal(err)
	}
	table := newJoinTable(keys, form)
	if table.live != 400 {
		t.Fatalf("live %d, want 400", table.live)
	}
	for row := 0; row < 400; row += 2 {
		slot := table.find(keys, row)
		if slot < 0 {
			t.Fatalf("key of row %d not found", row)
		}
		table.remove(slot)
		table.remove(slot) // a second remove changes nothing
	}
	if table.live != 200 {
		t.Fatalf("live %d after removing 200 keys, want 200", table.live)
	}
	for row := range 400 {
		if found := table.find(keys, row) >= 0; found != (row%2 == 1) {
			t.Fatalf("key %d found=%v after removing the even keys", row, found)
		}
	}
}

// A prober whose keys are mostly in the table stops consulting the filter after its trial; one
// whose keys are mostly absent keeps it; both find exactly the keys the table has.
func TestJoinFilterTrial(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	defer func(old int) { joinFilterMinSlots = old }(joinFilterMinSlots)
	joinFilterMinSlots = 0
	ints := func(from, n int) arrow.Array {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		for i := range n {
			b.Append(int64(from + i))
		}
		return b.NewArray()
	}
	form := joinKeyFormOf([]arrow.DataType{arrow.PrimitiveTypes.Int64})
	const n = 3 * joinFilterTrial
	build := ints(0, n)
	defer build.Release()
	bk, err := newJoinKeys(form, []arrow.Array{build}, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	table := newJoinTable(bk, form)
	for _, c := range []struct {
		from    int
		wantOff bool
	}{{n / 2, true}, {10 * n, false}} {
		probe := ints(c.from, 2*joinFilterTrial)
		pk, err := newJoinKeys(form, []arrow.Array{probe}, probe.Len(), &joinKeys{})
		if err != nil {
			t.Fatal(err)
		}
		for r := range pk.n {
			slot := table.find(pk, r)
			if in := c.from+r < n; (slot >= 0) != in || in && table.head(slot) != int32(c.from+r) {
				t.Fatalf("probe %d: slot %d", c.from+r, slot)
			}
		}
		if pk.filterOff != c.wantOff {
			t.Errorf("probes from %d: filter off %v after %d probes (%d turned away)", c.from, pk.filterOff, pk.filterProbes, pk.filterTurnedAway)
		}
		probe.Release()
	}
}
