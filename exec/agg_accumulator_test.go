package exec

import (
	"testing"
	"unsafe"
)

// aggGrow keeps the values it has, fills the new ones, and grown group by group to a million
// groups reallocates a few times, not at every quarter.
func TestAggGrowDoubles(t *testing.T) {
	var s []int64
	moves := 0
	for n := 1; n <= 1_000_000; n++ {
		before := unsafe.SliceData(s)
		s = aggGrow(s, n, -1)
		if unsafe.SliceData(s) != before {
			moves++
		}
		s[n-1] = int64(n)
	}
	if moves > 16 {
		t.Errorf("growing to a million groups one by one reallocated %d times", moves)
	}
	for i, v := range s {
		if v != int64(i+1) {
			t.Fatalf("group %d holds %d after growing", i, v)
		}
	}
	s = aggGrow(s[:10], 20, 7)
	if len(s) != 20 || s[9] != 10 || s[10] != 7 || s[19] != 7 {
		t.Errorf("regrown within capacity: %v", s)
	}
	if got := aggGrow(s, 5, 0); len(got) != 20 {
		t.Errorf("asked for fewer groups than held: %d groups", len(got))
	}
}
