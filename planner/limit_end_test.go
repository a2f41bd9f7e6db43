package planner

import (
	"math"
	"testing"
)

func TestLimitEndSaturates(t *testing.T) {
	for _, c := range []struct{ offset, count, want int64 }{
		{2, 3, 5},
		{0, math.MaxInt64, math.MaxInt64},
		{3, math.MaxInt64, math.MaxInt64},
		{math.MaxInt64, 5, math.MaxInt64},
	} {
		if got := (&Limit{Offset: c.offset, Count: c.count}).End(); got != c.want {
			t.Errorf("End(offset %d, count %d) = %d, want %d", c.offset, c.count, got, c.want)
		}
	}
}
