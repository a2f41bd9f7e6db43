package exec

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestCommonType(t *testing.T) {
	date := arrow.FixedWidthTypes.Date32
	ts := arrow.FixedWidthTypes.Timestamp_us
	cases := []struct {
		in   []arrow.DataType
		want arrow.DataType
	}{
		{[]arrow.DataType{i64, i64}, i64},
		{[]arrow.DataType{null, i64}, i64},
		{[]arrow.DataType{null, null}, null},
		{[]arrow.DataType{}, null},
		{[]arrow.DataType{i64, f64}, f64},
		{[]arrow.DataType{i64, str}, str},
		{[]arrow.DataType{dec(5, 2), f64}, f64},
		{[]arrow.DataType{dec(5, 2), dec(10, 4)}, dec(10, 4)},
		{[]arrow.DataType{dec(5, 2), i64}, dec(21, 2)},
		{[]arrow.DataType{dec(38, 10), i64}, dec(38, 10)},
		{[]arrow.DataType{bln, bln}, bln},
		{[]arrow.DataType{bln, i64}, i64},
		{[]arrow.DataType{date, ts}, ts},
		{[]arrow.DataType{date, str}, str},
		{[]arrow.DataType{date, i64}, str},
	}
	for _, c := range cases {
		got, err := CommonType(c.in...)
		if err != nil {
			t.Errorf("CommonType(%v): %v", c.in, err)
			continue
		}
		if !arrow.TypeEqual(got, c.want) {
			t.Errorf("CommonType(%v) = %s, want %s", c.in, got, c.want)
		}
	}
	if _, err := CommonType(i64, arrow.ListOf(i64)); err == nil {
		t.Errorf("CommonType with a list: want an error")
	}
}
