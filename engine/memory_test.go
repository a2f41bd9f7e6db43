package engine

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/mempool"
)

// selfJoinSQL joins the demo table with itself on a 5-valued column (200,000 rows) and orders
// the result totally, so that any two runs agree row for row.
const selfJoinSQL = "SELECT a.id, b.id, a.category FROM demo a JOIN demo b ON a.category = b.category ORDER BY a.id, b.id DESC"

// digest runs sql and returns its row count and a hash of its rows in order.
func digest(e *Engine, sql string) (int, uint64, error) {
	r, err := e.Execute(context.Background(), sql, nil)
	if err != nil {
		return 0, 0, err
	}
	defer r.Reader.Release()
	h := fnv.New64a()
	n := 0
	for r.Reader.Next() {
		b := r.Reader.RecordBatch()
		for i := 0; i < int(b.NumRows()); i++ {
			for c := 0; c < int(b.NumCols()); c++ {
				fmt.Fprintf(h, "%s|", valueString(b.Column(c), i))
			}
			n++
		}
	}
	return n, h.Sum64(), r.Reader.Err()
}

// TestSelfJoinUnderMemoryLimit runs a large self-join with ORDER BY under pools too small to
// hold its sort: it either returns exactly the unlimited rows (spilling) or fails with
// ResourceExhausted; either way it leaves no memory, reservation or spill file behind, and the
// engine answers the next query.
func TestSelfJoinUnderMemoryLimit(t *testing.T) {
	free, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	wantRows, wantSum, err := digest(free, selfJoinSQL)
	if err != nil {
		t.Fatal(err)
	}
	if wantRows != DemoRows*DemoRows/5 {
		t.Fatalf("unlimited self-join returned %d rows", wantRows)
	}
	for _, limit := range []int64{2 << 20, 1 << 20, 64 << 10} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			pool := mempool.New(limit)
			dir := t.TempDir()
			e, err := New(Config{Alloc: mem, Pool: pool, SpillDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			before := mem.CurrentAlloc()
			n, sum, err := digest(e, selfJoinSQL)
			switch {
			case err == nil:
				if n != wantRows || sum != wantSum {
					t.Fatalf("%d rows (digest %x), want %d (%x)", n, sum, wantRows, wantSum)
				}
				if pool.Stats().Refusals == 0 {
					t.Fatal("the query never hit the limit")
				}
				plan := strings.Join(rows(t, e, "EXPLAIN ANALYZE "+selfJoinSQL), "\n")
				if !regexp.MustCompile(`(?m)Sort\(.*spilled=[1-9]`).MatchString(plan) {
					t.Errorf("EXPLAIN ANALYZE shows no spilled bytes on the sort:\n%s", plan)
				}
			case errs.CategoryOf(err) != errs.ResourceExhausted:
				t.Fatalf("query failed with %v, want ResourceExhausted", err)
			}
			t.Logf("limit %d: %d rows, err %v, refusals %d", limit, n, err, pool.Stats().Refusals)
			if got := mem.CurrentAlloc(); got != before {
				t.Errorf("%d bytes allocated after the query, %d before", got, before)
			}
			if r := pool.Stats().Reserved; r != 0 {
				t.Errorf("%d bytes still reserved", r)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("%d spill files left", len(entries))
			}
			if got := rows(t, e, "SELECT count(*) FROM demo WHERE label = 1"); fmt.Sprint(got) != "[500]" {
				t.Errorf("next query returned %v", got)
			}
		})
	}
}
