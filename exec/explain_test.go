package exec

import (
	"regexp"
	"testing"
)

func TestFormatPlanIndentsChildren(t *testing.T) {
	tc := newTestContext(t, 0)
	left := rowsSource(t, tc, joinLeftSchema, joinLeftRows...)
	right := rowsSource(t, tc, joinRightSchema, joinRightRows...)
	join, err := NewHashJoin(left, right, InnerJoin, []Expr{intCol(0, "k")}, []Expr{intCol(0, "k")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := FormatPlan(NewCoalesce(join))
	want := "Coalesce: 1 partitions\n" +
		"  HashJoin: inner on k = k\n" +
		"    Source: 1 partitions\n" +
		"    Source: 1 partitions\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestInstrumentCountsRows(t *testing.T) {
	tc := newTestContext(t, 2)
	src := Instrument(rowsSource(t, tc, joinLeftSchema, joinLeftRows...))
	filter := Instrument(NewFilter(src, cmpTest(">", intCol(1, "v"), NewLiteral(scalarInt(15)))))
	if Instrument(filter) != filter {
		t.Error("instrumenting twice wraps twice")
	}
	if rows := collectRows(t, filter, tc); len(rows) != 4 {
		t.Fatalf("got %d rows, want 4", len(rows))
	}
	if m := src.(*Analyzed).Metrics(); m.Rows != 5 || m.Batches != 1 || m.Bytes == 0 {
		t.Errorf("source metrics %+v, want 5 rows in 1 batch", m)
	}
	if m := filter.(*Analyzed).Metrics(); m.Rows != 4 || m.Batches != 1 {
		t.Errorf("filter metrics %+v, want 4 rows in 1 batch", m)
	}
	line := regexp.MustCompile(`^Filter: \(v > 15\)  rows=4 batches=1 bytes=\d+ time=\S+\n  Source: 1 partitions  rows=5 batches=1 bytes=\d+ time=\S+\n$`)
	if got := FormatAnalyzedPlan(filter); !line.MatchString(got) {
		t.Errorf("unexpected EXPLAIN ANALYZE text:\n%s", got)
	}
}
