package exec

import (
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// TestReplicateGivesEveryPartitionAllRows: each partition of a Replicate yields every row of
// every input partition, and a partitioned hash join with it joins each left partition with the
// whole right side.
func TestReplicateGivesEveryPartitionAllRows(t *testing.T) {
	tc := newTestContext(t, 0)
	schema := schemaOf("k", opInt64, "v", opString)
	right := newSource(t, schema,
		[]arrow.RecordBatch{batchOf(t, tc.Alloc, schema, []any{1, "a"}, []any{2, "b"})},
		[]arrow.RecordBatch{batchOf(t, tc.Alloc, schema, []any{3, "c"})})
	rep := NewReplicate(right, 3)
	if rep.Partitions() != 3 {
		t.Fatalf("%d partitions, want 3", rep.Partitions())
	}
	// All rows, three times over: once per partition.
	got := collectRows(t, rep, tc)
	want := sorted("1|a", "1|a", "1|a", "2|b", "2|b", "2|b", "3|c", "3|c", "3|c")
	if !slices.Equal(sorted(got...), want) {
		t.Errorf("rows %q, want %q", got, want)
	}

	lschema := schemaOf("id", opInt64)
	left := newSource(t, lschema,
		[]arrow.RecordBatch{batchOf(t, tc.Alloc, lschema, []any{1}, []any{3})},
		[]arrow.RecordBatch{batchOf(t, tc.Alloc, lschema, []any{2}, []any{4})},
		[]arrow.RecordBatch{batchOf(t, tc.Alloc, lschema, []any{3})})
	join, err := NewPartitionedHashJoin(left, rep, InnerJoin, []Expr{intCol(0, "id")}, []Expr{intCol(0, "k")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got = collectRows(t, join, tc)
	want = sorted("1|1|a", "3|3|c", "2|2|b", "3|3|c")
	if !slices.Equal(sorted(got...), want) {
		t.Errorf("join rows %q, want %q", got, want)
	}
}
