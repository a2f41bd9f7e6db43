// Command planning measures how planning time grows with the size of a statement. For each
// shape a hostile client might send (thousands of scalar subqueries, a long AND / OR chain, a
// long UNION ALL, a huge IN list, deep parentheses and nested expressions, a long CASE) it times
// the whole path of a statement through an in-process engine — parse, bind, optimize, physical
// planning and running it over a one-row table — and the distributed planning of the head, at
// size n and 10n, and prints the ratios of time and of bytes allocated (about 10 for linear
// growth; on a loaded machine trust the allocation ratio over the time ratio). It writes the
// figures as JSON. It is a benchmark, never a test: nothing here asserts a speed.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"time"

	"github.com/cachedb/cachedb/engine"
)

// shape builds a statement of size n over table t(a BIGINT).
type shape struct {
	name  string
	n     int // the base size; the benchmark also runs 10n
	build func(n int) string
}

func join(n int, sep string, term func(i int) string) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(term(i))
	}
	return b.String()
}

var shapes = []shape{
	{"scalar_subqueries", 1000, func(n int) string {
		return "SELECT " + join(n, ", ", func(int) string { return "(SELECT 1)" })
	}},
	{"and_chain", 1000, func(n int) string {
		return "SELECT a FROM t WHERE " + join(n, " AND ", func(i int) string { return fmt.Sprintf("a = %d", i) })
	}},
	{"or_chain", 1000, func(n int) string {
		return "SELECT a FROM t WHERE " + join(n, " OR ", func(i int) string { return fmt.Sprintf("a = %d", i) })
	}},
	{"union_all", 1000, func(n int) string {
		return join(n, " UNION ALL ", func(i int) string { return fmt.Sprintf("SELECT %d", i) })
	}},
	{"in_list", 100000, func(n int) string {
		return "SELECT a FROM t WHERE a IN (" + join(n, ",", func(i int) string { return fmt.Sprint(i) }) + ")"
	}},
	{"nested_parens", 400, func(n int) string {
		return "SELECT " + strings.Repeat("(", n) + "a" + strings.Repeat(")", n) + " FROM t"
	}},
	{"nested_plus", 200, func(n int) string {
		return "SELECT " + strings.Repeat("(a + ", n) + "1" + strings.Repeat(")", n) + " FROM t"
	}},
	{"nested_subqueries", 6, func(n int) string {
		return strings.Repeat("SELECT (", n) + "SELECT a FROM t" + strings.Repeat(")", n)
	}},
	{"case_list", 1000, func(n int) string {
		return "SELECT CASE " + join(n, " ", func(i int) string { return fmt.Sprintf("WHEN a = %d THEN %d", i, i) }) + " END FROM t"
	}},
}

// measurement is one shape at one size.
type measurement struct {
	N         int     `json:"n"`
	Bytes     int     `json:"bytes"`
	ExecuteS  float64 `json:"execute_s"`             // bind + optimize + physical planning + run
	AllocMB   float64 `json:"execute_alloc_mb"`      // bytes allocated by one such run, in MB
	DistS     float64 `json:"distribute_s"`          // bind + optimize + distributed planning
	Err       string  `json:"error,omitempty"`       // the statement's error, if it failed
	TimedOut  bool    `json:"timed_out,omitempty"`   // did not finish within -timeout
	Unplanned bool    `json:"not_planned,omitempty"` // skipped after a smaller size timed out
}

type shapeResult struct {
	Shape string        `json:"shape"`
	Runs  []measurement `json:"runs"`
	// Ratio is the time at 10n over the time at n (execute_s); linear growth gives about 10.
	Ratio float64 `json:"ratio_10n_vs_n,omitempty"`
	// AllocRatio is the same for the bytes allocated: a measure of work that does not depend on
	// the load of the machine.
	AllocRatio float64 `json:"alloc_ratio_10n_vs_n,omitempty"`
}

type report struct {
	Benchmark string        `json:"benchmark"`
	When      string        `json:"when"`
	GoMaxProc int           `json:"gomaxprocs"`
	Runs      int           `json:"runs"`
	Shapes    []shapeResult `json:"shapes"`
}

func main() {
	runs := flag.Int("runs", 3, "timed runs per size; the median is reported")
	timeout := flag.Duration("timeout", 90*time.Second, "give up on a statement after this long")
	only := flag.String("shapes", "", "comma-separated shapes to run (default all)")
	scale := flag.Int("scale", 1, "multiply every shape's base size by this")
	results := flag.String("results", "bench/results/planning.json", "where to write the figures (\"\" for nowhere)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the timed runs to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fail(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fail(err)
		}
		defer pprof.StopCPUProfile()
	}
	rep, err := run(*runs, *timeout, *only, *scale)
	if err != nil {
		fail(err)
	}
	if *results != "" {
		buf, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(*results, append(buf, '\n'), 0o644); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "planning:", err)
	os.Exit(1)
}

func run(runs int, timeout time.Duration, only string, scale int) (*report, error) {
	ctx := context.Background()
	e, err := engine.New(engine.Config{NoDemo: true, Partitions: 2})
	if err != nil {
		return nil, err
	}
	for _, s := range []string{"CREATE TABLE t (a BIGINT)", "INSERT INTO t VALUES (1)"} {
		if _, err := e.Execute(ctx, s, nil); err != nil {
			return nil, err
		}
	}
	rep := &report{Benchmark: "planning", When: time.Now().UTC().Format(time.RFC3339), GoMaxProc: runtime.GOMAXPROCS(0), Runs: runs}
	fmt.Printf("%-18s %9s %10s %12s %12s %10s  %s\n", "shape", "n", "bytes", "execute s", "distribute s", "alloc MB", "")
	for _, sh := range shapes {
		if only != "" && !contains(strings.Split(only, ","), sh.name) {
			continue
		}
		res := shapeResult{Shape: sh.name}
		gaveUp := false
		for _, n := range []int{sh.n * scale, 10 * sh.n * scale} {
			text := sh.build(n)
			m := measurement{N: n, Bytes: len(text)}
			if gaveUp {
				m.Unplanned = true
			} else {
				m.ExecuteS, m.Err, m.TimedOut = timeMedian(runs, timeout, func(ctx context.Context) error { return execute(ctx, e, text) })
				if !m.TimedOut && m.Err == "" {
					m.AllocMB = allocatedMB(func() { _ = execute(context.Background(), e, text) })
				}
				if !m.TimedOut && m.Err == "" {
					m.DistS, _, _ = timeMedian(runs, timeout, func(ctx context.Context) error {
						_, err := e.Distribute(ctx, text, 2)
						return err
					})
				}
				gaveUp = m.TimedOut
			}
			note := m.Err
			if m.TimedOut {
				note = "timed out"
			} else if m.Unplanned {
				note = "not run"
			}
			fmt.Printf("%-18s %9d %10d %12.4f %12.4f %10.1f  %s\n", sh.name, n, m.Bytes, m.ExecuteS, m.DistS, m.AllocMB, firstLine(note))
			res.Runs = append(res.Runs, m)
		}
		if a, b := res.Runs[0], res.Runs[1]; a.ExecuteS > 0 && b.ExecuteS > 0 {
			res.Ratio = b.ExecuteS / a.ExecuteS
			res.AllocRatio = b.AllocMB / a.AllocMB
			fmt.Printf("%-18s %9s %10s %12.1f %12s %10.1f  (ratio 10n / n)\n", sh.name, "", "", res.Ratio, "", res.AllocRatio)
		}
		rep.Shapes = append(rep.Shapes, res)
	}
	return rep, nil
}

// execute runs text to completion, reading every row.
func execute(ctx context.Context, e *engine.Engine, text string) error {
	res, err := e.Execute(ctx, text, nil)
	if err != nil {
		return err
	}
	if res.Reader != nil {
		defer res.Reader.Release()
		for res.Reader.Next() {
		}
		return res.Reader.Err()
	}
	return nil
}

// timeMedian runs f runs times (stopping at the first error or time-out) and returns the median
// time in seconds. A run that does not finish in timeout is abandoned: its goroutine keeps the
// CPU until it ends, so later figures of that process are not to be trusted.
func timeMedian(runs int, timeout time.Duration, f func(context.Context) error) (float64, string, bool) {
	var times []float64
	for i := 0; i < runs; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		runtime.GC() // no collection owed by an earlier run
		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- f(ctx) }()
		var err error
		select {
		case err = <-done:
		case <-time.After(timeout + time.Second):
			err = context.DeadlineExceeded
		}
		cancel()
		d := time.Since(start).Seconds()
		if errors.Is(err, context.DeadlineExceeded) {
			return d, "", true
		}
		if err != nil {
			return d, err.Error(), false
		}
		times = append(times, d)
	}
	sort.Float64s(times)
	return times[len(times)/2], "", false
}

// allocatedMB returns the megabytes allocated while f ran.
func allocatedMB(f func()) float64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return float64(after.TotalAlloc-before.TotalAlloc) / 1e6
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	if len(s) > 80 {
		s = s[:80]
	}
	l, _, _ := strings.Cut(s, "\n")
	return l
}
