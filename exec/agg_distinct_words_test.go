package exec

import (
	"math/rand"
	"testing"
)

// A distinctWordSet reports a key new exactly when a Go map of the same keys has not held it,
// through many doublings, with keys that differ only in the group, the low or the high word, and
// zero keys (which look like empty slots).
func TestDistinctWordSetMatchesMap(t *testing.T) {
	type key struct {
		group  uint32
		lo, hi uint64
	}
	rng := rand.New(rand.NewSource(1))
	var set distinctWordSet
	seen := map[key]bool{}
	news := 0
	for range 200_000 {
		k := key{group: uint32(rng.Intn(50)), lo: uint64(rng.Intn(3000))}
		switch rng.Intn(4) {
		case 0:
			k.hi = uint64(rng.Intn(2)) << 63
		case 1:
			k.lo <<= 40
		case 2:
			k = key{}
		}
		isNew := set.add(k.group, k.lo, k.hi)
		if isNew == seen[k] {
			t.Fatalf("key %+v: new %v, but the map had it: %v", k, isNew, seen[k])
		}
		if isNew {
			news++
		}
		seen[k] = true
	}
	if set.count != len(seen) || news != len(seen) {
		t.Fatalf("count %d, %d new, want %d", set.count, news, len(seen))
	}
	if len(set.slots) < 2*set.count || set.bytes() != int64(len(set.slots))*distinctWordSlotBytes {
		t.Fatalf("%d slots for %d keys, %d bytes", len(set.slots), set.count, set.bytes())
	}
}
