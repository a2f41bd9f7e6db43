package exec

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestStoreArrayIsStrict(t *testing.T) {
	f64 := arrow.PrimitiveTypes.Float64
	date := arrow.FixedWidthTypes.Date32
	for _, c := range []struct {
		from    arrow.DataType
		js      string
		to      arrow.DataType
		want    string // the stored values, or the error's text
		wantErr bool
	}{
		{str, `[" 12 ", "-3", "2.5", null, "9223372036854775807"]`, i64, "12,-3,3,NULL,9223372036854775807", false},
		{str, `["7", "x"]`, i64, "Incorrect integer value: 'x' for column 'c' at row 11", true},
		{str, `["", "1"]`, i64, "Incorrect integer value: '' for column 'c' at row 10", true},
		{str, `["12abc"]`, i64, "Data truncated for column 'c' at row 10", true},
		{str, `["9223372036854775808"]`, i64, "Out of range value for column 'c' at row 10", true},
		{str, `["-9223372036854775808"]`, i64, "-9223372036854775808", false},
		{str, `["x"]`, f64, "Data truncated for column 'c' at row 10", true},
		{str, `["1e400"]`, f64, "Out of range value for column 'c' at row 10", true},
		{str, `["1.5e3"]`, f64, "1500", false},
		{str, `["x"]`, dec(5, 2), "Incorrect decimal value: 'x' for column 'c' at row 10", true},
		{str, `["999.99", "-999.994"]`, dec(5, 2), "999.99,-999.99", false},
		{str, `["999.995"]`, dec(5, 2), "Out of range value for column 'c' at row 10", true},
		{str, `["2020-01-02", "x"]`, date, "Incorrect date value: 'x' for column 'c' at row 11", true},
		{str, `["2020-01-02 10:00:00"]`, arrow.FixedWidthTypes.Timestamp_us, "2020-01-02 10:00:00", false},
		{str, `["2020-13-02"]`, arrow.FixedWidthTypes.Timestamp_us, "Incorrect datetime value: '2020-13-02' for column 'c' at row 10", true},
		{f64, `[1e30]`, i64, "Out of range value for column 'c' at row 10", true},
		{f64, `[-2.5]`, i64, "-2", false}, // a double is stored rounded half to even (rint), as MySQL does
		{i64, `[1000]`, dec(5, 2), "Out of range value for column 'c' at row 10", true},
		{dec(38, 2), `["99999999999999999999999.99"]`, i64, "Out of range value for column 'c' at row 10", true},
		{i64, `[42]`, str, "42", false},
	} {
		mem := newMem(t)
		a := arr(t, mem, c.from, c.js)
		out, err := StoreArray(context.Background(), &TaskContext{Alloc: mem}, a, c.to, "c", 10)
		switch {
		case c.wantErr && (err == nil || err.Error() != c.want):
			t.Errorf("%s %s -> %s: error %v, want %q", c.from, c.js, c.to, err, c.want)
		case !c.wantErr && err != nil:
			t.Errorf("%s %s -> %s: %v", c.from, c.js, c.to, err)
		case !c.wantErr:
			if got := renderArray(out); !strings.EqualFold(got, c.want) {
				t.Errorf("%s %s -> %s = %s, want %s", c.from, c.js, c.to, got, c.want)
			}
			out.Release()
		}
		a.Release()
		mem.AssertSize(t, 0)
	}
}
