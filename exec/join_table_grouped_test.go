package exec

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestHashPairsGrouped checks that a large build side with repeated keys lists its rows grouped
// and that the hash join's pairs read from that list are those read by following the chains
// (which TestJoinTableMatchesEncodedKeys checks against the encoded keys): the same left and
// build rows in the same order, NULL keys matching nothing, for every batch limit and for the
// first match only (semi joins).
func TestHashPairsGrouped(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(1))
	column := func(n, distinct int) arrow.Array {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		for range n {
			if rng.Intn(20) == 0 {
				b.AppendNull()
			} else {
				b.Append(int64(rng.Intn(distinct)) << 33)
			}
		}
		return b.NewArray()
	}
	build := column(joinGroupMinRows+1000, 4000)
	defer build.Release()
	probe := column(3000, 5000) // a fifth of the probe keys are absent
	defer probe.Release()
	form := joinKeyFormOf([]arrow.DataType{arrow.PrimitiveTypes.Int64})
	bk, err := newJoinKeys(form, []arrow.Array{build}, build.Len(), nil)
	if err != nil {
		t.Fatal(err)
	}
	table := newJoinTable(bk, form)
	if table.grouped == nil {
		t.Fatalf("a build side of %d rows and %d keys is not grouped", build.Len(), table.live)
	}
	chained := *table
	chained.grouped, chained.groupStart = nil, nil
	pairs := func(tab *joinTable, limit int, firstOnly bool) (li, ri []int32, keyNull []bool) {
		pk, err := newJoinKeys(form, []arrow.Array{probe}, probe.Len(), nil)
		if err != nil {
			t.Fatal(err)
		}
		keyNull = make([]bool, probe.Len())
		h := &hashPairs{table: tab, keys: pk, n: probe.Len(), chain: -1, firstOnly: firstOnly, keyNull: keyNull}
		for range 1 << 30 {
			l, r, done := h.next(limit)
			if len(l) > limit {
				t.Fatalf("%d pairs over the limit %d", len(l), limit)
			}
			li, ri = append(li, l...), append(ri, r...)
			if done {
				return li, ri, keyNull
			}
		}
		t.Fatal("pairs never done")
		return nil, nil, nil
	}
	for _, firstOnly := range []bool{false, true} {
		wantL, wantR, wantNull := pairs(&chained, 1024, firstOnly)
		if len(wantL) == 0 || !slices.Contains(wantNull, true) {
			t.Fatalf("firstOnly=%v: %d pairs, NULL keys %v: the test data pairs nothing or has no NULL", firstOnly, len(wantL), slices.Contains(wantNull, true))
		}
		for _, limit := range []int{1, 7, 1024, 1 << 20} {
			t.Run(fmt.Sprintf("firstOnly=%v/limit=%d", firstOnly, limit), func(t *testing.T) {
				gotL, gotR, gotNull := pairs(table, limit, firstOnly)
				if !slices.Equal(gotL, wantL) || !slices.Equal(gotR, wantR) || !slices.Equal(gotNull, wantNull) {
					t.Fatalf("grouped pairs differ from chained: %d pairs, want %d", len(gotL), len(wantL))
				}
			})
		}
	}
}
