package engine

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/sqlgen"
)

// `make randomized-long` sets these; `go test` runs the fixed seeds below briefly.
var (
	randomizedSeed     = flag.Int64("randomized.seed", 0, "first seed of TestRandomizedOracles (0: the fixed seeds)")
	randomizedDuration = flag.Duration("randomized.duration", 0, "run TestRandomizedOracles over consecutive seeds this long")
)

// checksPerSchema oracle checks run over each random schema before a new one is made.
const checksPerSchema = 100

// TestRandomizedOracles generates random tables and queries and checks the engine against
// itself with ternary logic partitioning, NoREC, ORDER BY/LIMIT slicing and rewrites
// (internal/sqlgen), and every query against a twin engine that plans it differently.
// A failure prints the seed, the schema and the contradicting queries; a seed reproduces it.
func TestRandomizedOracles(t *testing.T) {
	seeds := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
	deadline := time.Time{}
	if *randomizedSeed != 0 || *randomizedDuration > 0 {
		first := *randomizedSeed
		if first == 0 {
			first = time.Now().UnixNano() % 1_000_000
		}
		seeds = []int64{first}
		if *randomizedDuration > 0 {
			deadline = time.Now().Add(*randomizedDuration)
		}
	}
	var total sqlgen.Stats
	failures := 0
	for i := 0; ; i++ {
		var seed int64
		if i < len(seeds) {
			seed = seeds[i]
		} else if !deadline.IsZero() && time.Now().Before(deadline) {
			seed = seeds[len(seeds)-1] + int64(i-len(seeds)+1)
		} else {
			break
		}
		st, f := runRandomizedSeed(t, seed)
		merge(&total, st)
		if f != nil {
			failures++
			t.Errorf("seed %d: %v", seed, f)
			if failures >= 10 {
				break
			}
		}
	}
	t.Logf("%d checks, %d queries, %d checks abandoned on a user-facing error", total.Checks, total.Queries, total.Skipped)
	logCounts(t, "unsupported", total.Unsupported)
	logCounts(t, "error", total.Errors)
}

// runRandomizedSeed builds the schema of seed in a fresh engine and runs checksPerSchema checks;
// it stops at the first failure, which it returns with the schema's statements.
func runRandomizedSeed(t *testing.T, seed int64) (sqlgen.Stats, error) {
	r := rand.New(rand.NewSource(seed))
	schema := sqlgen.RandomSchema(r)
	// The twin plans the same queries in one partition, whole batches and without pushdown.
	e, err := New(Config{NoDemo: true, BatchSize: 1 + r.Intn(4), Partitions: 2 + r.Intn(3)})
	if err != nil {
		t.Fatal(err)
	}
	twin, err := New(Config{NoDemo: true, Partitions: 1, NoPushdown: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, s := range schema.Statements() {
		for _, eng := range []*Engine{e, twin} {
			if _, err := eng.Execute(ctx, s, nil); err != nil {
				t.Fatalf("seed %d: %s: %v", seed, s, err)
			}
		}
	}
	c := &sqlgen.Checker{
		Run:  func(sql string) ([]string, error) { return runQuery(ctx, e, sql) },
		Twin: func(sql string) ([]string, error) { return runQuery(ctx, twin, sql) },
	}
	g := sqlgen.NewGen(r, schema)
	for i := 0; i < checksPerSchema; i++ {
		if f := c.Check(g); f != nil {
			return c.Stats, fmt.Errorf("%v\nschema:\n  %s", f, joinLines(schema.Statements()))
		}
	}
	return c.Stats, nil
}

// runQuery runs sql to the end; a panic is an internal error.
func runQuery(ctx context.Context, e *Engine, sql string) (rows []string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = errs.Internalf("panic: %v", p)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	res, err := e.Execute(ctx, sql, nil)
	if err != nil {
		return nil, err
	}
	defer res.Reader.Release()
	return sqlgen.Render(res.Reader)
}

func merge(total *sqlgen.Stats, s sqlgen.Stats) {
	total.Checks += s.Checks
	total.Queries += s.Queries
	total.Skipped += s.Skipped
	for _, m := range []struct {
		dst *map[string]int
		src map[string]int
	}{{&total.Unsupported, s.Unsupported}, {&total.Errors, s.Errors}} {
		if *m.dst == nil {
			*m.dst = map[string]int{}
		}
		for k, v := range m.src {
			(*m.dst)[k] += v
		}
	}
}

func logCounts(t *testing.T, what string, m map[string]int) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	for i, k := range keys {
		if i == 15 {
			break
		}
		t.Logf("%5d %s: %s", m[k], what, k)
	}
}

func joinLines(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += ";\n  "
		}
		out += s
	}
	return out
}
