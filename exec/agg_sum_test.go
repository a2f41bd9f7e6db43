package exec

import (
	"math"
	"math/big"
	"math/rand"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Decimal SUM and AVG states equal the exact sums and counts of their groups (NULL for a group
// that saw only NULLs) when the values mix small ones, ones at the int64 edges whose partial
// sums overflow int64, and ones beyond int64, negative and positive, over several batches;
// batches without NULLs are summed in lanes (sumLanes), the others row by row.
func TestDecimalSumMatchesExactSums(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dt := &arrow.Decimal128Type{Precision: 38, Scale: 2}
	rng := rand.New(rand.NewSource(3))
	const groups = 5 // group 4 sees only NULLs
	for _, c := range []struct{ avg, nulls bool }{{false, true}, {true, true}, {false, false}, {true, false}} {
		avg := c.avg
		def := must(aggSumDef(dt))
		if avg {
			def = must(aggAvgDef(dt))
		}
		acc := def.newAcc()
		acc.grow(groups)
		want := make([]*big.Int, groups)
		counts := make([]int64, groups)
		for g := range want {
			want[g] = new(big.Int)
		}
		for batch := range 4 {
			n := 200 + 50*batch
			b := array.NewDecimal128Builder(mem, dt)
			ids := make([]uint32, n)
			for i := range ids {
				g := uint32(rng.Intn(groups))
				ids[i] = g
				if c.nulls && (g == groups-1 || rng.Intn(8) == 0) {
					b.AppendNull()
					continue
				}
				var v decimal128.Num
				switch rng.Intn(6) {
				case 0:
					v = decimal128.FromI64([]int64{math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1}[rng.Intn(4)])
				case 1:
					v = decimal128.New(int64(rng.Intn(5))-2, rng.Uint64()) // beyond int64 unless the high word is the sign
				default:
					v = decimal128.FromI64(rng.Int63n(2_000_001) - 1_000_000)
				}
				b.Append(v)
				want[g].Add(want[g], v.BigInt())
				counts[g]++
			}
			in := b.NewArray()
			b.Release()
			if err := acc.update(ids, []arrow.Array{in}); err != nil {
				t.Fatal(err)
			}
			in.Release()
		}
		states, err := acc.state(mem)
		if err != nil {
			t.Fatal(err)
		}
		sums := states[0].(*array.Decimal128)
		for g := range groups {
			if counts[g] == 0 {
				if sums.IsValid(g) {
					t.Errorf("avg=%v group %d saw only NULLs, sum %s", avg, g, sums.Value(g).BigInt())
				}
				continue
			}
			if got := sums.Value(g).BigInt(); got.Cmp(want[g]) != 0 {
				t.Errorf("avg=%v group %d: sum %s, want %s", avg, g, got, want[g])
			}
			if avg {
				if got := states[1].(*array.Int64).Value(g); got != counts[g] {
					t.Errorf("group %d: count %d, want %d", g, got, counts[g])
				}
			}
		}
		releaseArrays(states)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
