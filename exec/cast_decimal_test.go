package exec

import (
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// A decimal converts to the double nearest to its exact value, the one its text parses to.
func TestDecimalToFloat64IsCorrectlyRounded(t *testing.T) {
	for _, tt := range []struct {
		unscaled string
		scale    int32
	}{
		{"33", 1}, {"7707", 2}, {"-7708", 2}, {"1", 2}, {"123456789012345678", 9},
		{"99999999999999999999999999999999999999", 38}, {"12345678901234567890123456789", 5},
		{"-3", 0}, {"5", -3}, {"0", 4}, {"30000000000000001", 16},
	} {
		n, err := decimal128.FromString(tt.unscaled, 38, 0)
		if err != nil {
			t.Fatal(err)
		}
		text := n.ToString(tt.scale)
		want, err := strconv.ParseFloat(text, 64)
		if err != nil {
			t.Fatal(err)
		}
		if got := decimalToFloat64(n, tt.scale); got != want {
			t.Errorf("%s: got %v, want %v", text, got, want)
		}
	}
}
