package exec

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

var sortTestSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "d", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// sortTestInput is rows (id, k, s, d, f) over two partitions; ids are 0..n-1.
func sortTestInput(n, parts, perBatch int, seed int64) [][]string {
	rng := rand.New(rand.NewSource(seed))
	out := make([][]string, parts)
	var rows []string
	flush := func(p int) {
		if len(rows) > 0 {
			out[p] = append(out[p], "["+strings.Join(rows, ",")+"]")
			rows = nil
		}
	}
	for i := 0; i < n; i++ {
		p := i * parts / n
		k := "null"
		if rng.Intn(5) > 0 {
			k = fmt.Sprint(rng.Intn(7) - 3)
		}
		s := "null"
		if rng.Intn(5) > 0 {
			s = fmt.Sprintf("%q", []string{"a", "B", "b", "ab", ""}[rng.Intn(5)])
		}
		rows = append(rows, fmt.Sprintf(`{"id":%d,"k":%s,"s":%s,"d":"%d.%02d","f":%v}`, i, k, s, rng.Intn(5)-2, rng.Intn(3)*50, float64(rng.Intn(9)-4)/2))
		if len(rows) == perBatch || (i+1)*parts/n != p {
			flush(p)
		}
	}
	flush(parts - 1)
	return out
}

func TestSortOrder(t *testing.T) {
	src := &aggTestSource{schema: sortTestSchema, parts: [][]string{{
		`[{"id":0,"k":2,"s":"b"},{"id":1,"k":null,"s":"a"},{"id":2,"k":-1,"s":null}]`,
		`[{"id":3,"k":2,"s":"B"},{"id":4,"k":null,"s":"ab"},{"id":5,"k":-1,"s":"a"}]`,
	}}}
	col := func(n string) Expr { return aggCol(sortTestSchema, n) }
	tests := []struct {
		name string
		keys []SortKey
		want string // ids in order
	}{
		{"int asc nulls first, stable", []SortKey{{Expr: col("k")}}, "1 4 2 5 0 3"},
		{"int desc nulls last, stable", []SortKey{{Expr: col("k"), Desc: true}}, "0 3 2 5 1 4"},
		{"string binary", []SortKey{{Expr: col("s")}}, "2 3 1 5 4 0"},
		{"two keys", []SortKey{{Expr: col("k"), Desc: true}, {Expr: col("s")}}, "3 0 2 5 1 4"},
	}
	for _, tt := range tests {
		for _, fetch := range []int64{0, 2} {
			t.Run(fmt.Sprintf("%s fetch=%d", tt.name, fetch), func(t *testing.T) {
				tc, mem := aggTestContext(t, 4)
				defer mem.AssertSize(t, 0)
				op := NewSort(src, tt.keys, fetch)
				var ids []string
				for _, r := range aggTestRows(t, op, tc) {
					ids = append(ids, strings.SplitN(r, "|", 2)[0])
				}
				want := strings.Fields(tt.want)
				if fetch > 0 {
					want = want[:fetch]
				}
				aggEqual(t, ids, want)
			})
		}
	}
}

// TestSortTopKEqualsSortLimit compares top-k against a full sort followed by a Limit, over
// several partitions and batch sizes.
func TestSortTopKEqualsSortLimit(t *testing.T) {
	keys := []SortKey{
		{Expr: aggCol(sortTestSchema, "k")},
		{Expr: aggCol(sortTestSchema, "d"), Desc: true},
		{Expr: aggCol(sortTestSchema, "f")},
		{Expr: aggCol(sortTestSchema, "s"), Desc: true},
		{Expr: aggCol(sortTestSchema, "id")},
	}
	for _, fetch := range []int64{1, 3, 10, 57, 500} {
		for _, batch := range []int{1, 7, 64} {
			t.Run(fmt.Sprintf("fetch=%d batch=%d", fetch, batch), func(t *testing.T) {
				tc, mem := aggTestContext(t, batch)
				defer mem.AssertSize(t, 0)
				src := &aggTestSource{schema: sortTestSchema, parts: sortTestInput(300, 3, 13, fetch)}
				topk := aggTestRows(t, NewSort(src, keys, fetch), tc)
				limited := aggTestRows(t, NewLimit(NewSort(src, keys, 0), 0, fetch), tc)
				if int64(len(topk)) != min(fetch, 300) {
					t.Fatalf("top-k returned %d rows", len(topk))
				}
				aggEqual(t, topk, limited)
			})
		}
	}
}

func TestSortString(t *testing.T) {
	src := &aggTestSource{schema: sortTestSchema}
	keys := []SortKey{{Expr: aggCol(sortTestSchema, "k"), Desc: true}, {Expr: aggCol(sortTestSchema, "s")}}
	if got := NewSort(src, keys, 10).String(); got != "Sort(keys=[k DESC, s], fetch=10)" {
		t.Errorf("String() = %q", got)
	}
	if got := NewSort(src, keys, 0).String(); got != "Sort(keys=[k DESC, s])" {
		t.Errorf("String() = %q", got)
	}
}

// A sort is stable: rows of equal keys keep their input order, in runs large enough that the
// sort of a run is no insertion sort, over one partition and over several merged.
func TestSortStableOverLargeRuns(t *testing.T) {
	for _, parts := range []int{1, 3} {
		t.Run(fmt.Sprintf("parts=%d", parts), func(t *testing.T) {
			tc, mem := aggTestContext(t, 1000)
			defer mem.AssertSize(t, 0)
			src := &aggTestSource{schema: sortTestSchema, parts: sortTestInput(3000, parts, 500, 7)}
			keys := []SortKey{{Expr: aggCol(sortTestSchema, "k"), Desc: true}, {Expr: aggCol(sortTestSchema, "s")}}
			rows := aggTestRows(t, NewSort(src, keys, 0), tc)
			if len(rows) != 3000 {
				t.Fatalf("%d rows, want 3000", len(rows))
			}
			lastID := map[string]int{}
			for _, r := range rows {
				f := strings.SplitN(r, "|", 4)
				var id int
				fmt.Sscan(f[0], &id)
				key := f[1] + "|" + f[2]
				if last, ok := lastID[key]; ok && id < last {
					t.Fatalf("row %d after row %d of the same keys %s", id, last, key)
				}
				lastID[key] = id
			}
		})
	}
}
