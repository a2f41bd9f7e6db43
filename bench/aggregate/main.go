// Command aggregate benchmarks a filtered GROUP BY in cachedb against DuckDB on the same rows.
//
// It generates a deterministic table t(k int64 ~1000 keys, v float64, x int64, s string of 8
// values), writes it as Parquet and loads the same batches into an in-process engine, then times
//
//	SELECT k, count(*), sum(v), avg(x) FROM t WHERE x > THRESHOLD GROUP BY k
//
// in cachedb (over its in-memory table) and, in the same run, in DuckDB (the Python package,
// duckdb_aggregate.py) both over the Parquet file and over an in-memory table loaded from it.
// It checks that all answers agree (row count and checksums), prints a table of best and median
// times, rows/s and the throughput ratio cachedb/DuckDB, and writes the figures as JSON.
// It is a benchmark, never a test: nothing here asserts a speed.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/cachedb/cachedb/engine"
)

type config struct {
	rows, batchRows, runs, threshold, partitions int
	seed                                         uint64
	outDir, results, python                      string
	cpuProfile                                   string
	cachedbOnly                                  bool
}

func main() {
	var c config
	flag.IntVar(&c.rows, "rows", 10_000_000, "rows to generate")
	flag.IntVar(&c.batchRows, "batch-rows", 65_536, "rows per generated batch")
	flag.IntVar(&c.runs, "runs", 5, "timed runs per system; best and median are reported")
	flag.IntVar(&c.threshold, "threshold", 900_000, "the query keeps rows with x > threshold (x is uniform in [0, 1e6))")
	flag.IntVar(&c.partitions, "partitions", runtime.NumCPU(), "engine partitions (DuckDB gets as many threads)")
	flag.Uint64Var(&c.seed, "seed", 42, "generator seed")
	flag.StringVar(&c.outDir, "out", "bench/out", "directory for the generated Parquet file")
	flag.StringVar(&c.results, "results", "bench/results/aggregate.json", "where to write the figures")
	flag.StringVar(&c.python, "python", "python3", "Python with the duckdb package (scripts/venv.sh)")
	flag.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of cachedb's timed runs to this file")
	flag.BoolVar(&c.cachedbOnly, "cachedb-only", false, "time cachedb only: no DuckDB, no results file")
	flag.Parse()
	if err := run(context.Background(), c); err != nil {
		fmt.Fprintln(os.Stderr, "aggregate:", err)
		os.Exit(1)
	}
}

// duckdbResult is what duckdb_aggregate.py prints.
type duckdbResult struct {
	Version string  `json:"duckdb_version"`
	Threads int     `json:"threads"`
	LoadS   float64 `json:"load_s"`
	Parquet struct {
		timing
		Checksum checksum `json:"checksum"`
	} `json:"parquet"`
	Memory struct {
		timing
		Checksum checksum `json:"checksum"`
	} `json:"memory"`
}

// report is the JSON result file.
type report struct {
	Benchmark  string       `json:"benchmark"`
	When       string       `json:"when"`
	Query      string       `json:"query"`
	Rows       int          `json:"rows"`
	Seed       uint64       `json:"seed"`
	Partitions int          `json:"partitions"`
	GoVersion  string       `json:"go_version"`
	CPUs       int          `json:"cpus"`
	Cachedb    systemResult `json:"cachedb"`
	DuckDB     struct {
		Version string       `json:"version"`
		LoadS   float64      `json:"load_s"`
		Parquet systemResult `json:"parquet"`
		Memory  systemResult `json:"memory"`
	} `json:"duckdb"`
	// RatioVsDuckDBMemory and RatioVsDuckDBParquet are cachedb's throughput divided by
	// DuckDB's, on best times: above 1 means cachedb was faster.
	RatioVsDuckDBMemory  float64 `json:"ratio_cachedb_vs_duckdb_memory"`
	RatioVsDuckDBParquet float64 `json:"ratio_cachedb_vs_duckdb_parquet"`
	AnswersAgree         bool    `json:"answers_agree"`
}

type systemResult struct {
	timing
	RowsPerSec float64  `json:"rows_per_s"`
	Checksum   checksum `json:"checksum"`
}

func run(ctx context.Context, c config) error {
	query := fmt.Sprintf("SELECT k, count(*), sum(v), avg(x) FROM t WHERE x > %d GROUP BY k", c.threshold)
	if err := os.MkdirAll(c.outDir, 0o755); err != nil {
		return err
	}
	parquetPath, err := filepath.Abs(filepath.Join(c.outDir, fmt.Sprintf("aggregate-%d-%d.parquet", c.rows, c.seed)))
	if err != nil {
		return err
	}
	eng, err := engine.New(engine.Config{NoDemo: true, Partitions: c.partitions})
	if err != nil {
		return fmt.Errorf("starting engine: %w", err)
	}
	began := time.Now()
	gen := generator{rows: c.rows, batchRows: c.batchRows, seed: c.seed}
	if err := load(ctx, eng, gen, parquetPath); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "generated %d rows into the engine and %s in %.1fs\n", c.rows, parquetPath, time.Since(began).Seconds())

	stopProfile, err := startCPUProfile(c.cpuProfile)
	if err != nil {
		return err
	}
	engTiming, engSum, err := timeEngine(ctx, eng, query, c.runs)
	stopProfile()
	if err != nil {
		return err
	}
	if c.cachedbOnly {
		fmt.Printf("cachedb (memory): best %.3f s, median %.3f s, runs %.3f, %d groups\n",
			engTiming.Best, engTiming.Median, engTiming.Runs, engSum.Rows)
		return nil
	}
	duck, err := runDuckDB(c, parquetPath)
	if err != nil {
		return err
	}

	var r report
	r.Benchmark, r.Query, r.Rows, r.Seed, r.Partitions = "aggregate", query, c.rows, c.seed, c.partitions
	r.When, r.GoVersion, r.CPUs = time.Now().UTC().Format(time.RFC3339), runtime.Version(), runtime.NumCPU()
	perSec := func(t timing) float64 { return float64(c.rows) / t.Best }
	r.Cachedb = systemResult{timing: engTiming, RowsPerSec: perSec(engTiming), Checksum: engSum}
	r.DuckDB.Version, r.DuckDB.LoadS = duck.Version, duck.LoadS
	r.DuckDB.Parquet = systemResult{timing: duck.Parquet.timing, RowsPerSec: perSec(duck.Parquet.timing), Checksum: duck.Parquet.Checksum}
	r.DuckDB.Memory = systemResult{timing: duck.Memory.timing, RowsPerSec: perSec(duck.Memory.timing), Checksum: duck.Memory.Checksum}
	r.RatioVsDuckDBMemory = r.Cachedb.RowsPerSec / r.DuckDB.Memory.RowsPerSec
	r.RatioVsDuckDBParquet = r.Cachedb.RowsPerSec / r.DuckDB.Parquet.RowsPerSec
	r.AnswersAgree = engSum.agrees(duck.Parquet.Checksum) && engSum.agrees(duck.Memory.Checksum)

	printTable(r)
	if err := writeJSON(c.results, r); err != nil {
		return err
	}
	if !r.AnswersAgree {
		return fmt.Errorf("answers differ: cachedb %+v, DuckDB parquet %+v, DuckDB memory %+v",
			engSum, duck.Parquet.Checksum, duck.Memory.Checksum)
	}
	return nil
}

// startCPUProfile starts a CPU profile into path (nothing when path is empty) and returns the
// function that stops it.
func startCPUProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("creating CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting CPU profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

func runDuckDB(c config, parquetPath string) (duckdbResult, error) {
	var res duckdbResult
	script := filepath.Join("bench", "aggregate", "duckdb_aggregate.py")
	cmd := exec.Command(c.python, script, parquetPath, fmt.Sprint(c.runs), fmt.Sprint(c.threshold), fmt.Sprint(c.partitions))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return res, fmt.Errorf("running %s with %s (is duckdb installed? see scripts/venv.sh): %w", script, c.python, err)
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return res, fmt.Errorf("reading DuckDB results %q: %w", out, err)
	}
	return res, nil
}

func printTable(r report) {
	fmt.Printf("%s over %d rows (%d CPUs, %d partitions / DuckDB threads)\n", r.Query, r.Rows, r.CPUs, r.Partitions)
	fmt.Printf("%-24s %10s %10s %14s %16s\n", "system", "best s", "median s", "rows/s", "cachedb/system")
	line := func(name string, s systemResult) {
		fmt.Printf("%-24s %10.3f %10.3f %14.0f %16.2f\n", name, s.Best, s.Median, s.RowsPerSec, r.Cachedb.RowsPerSec/s.RowsPerSec)
	}
	line("cachedb (memory)", r.Cachedb)
	line("duckdb "+r.DuckDB.Version+" (memory)", r.DuckDB.Memory)
	line("duckdb "+r.DuckDB.Version+" (parquet)", r.DuckDB.Parquet)
	fmt.Printf("answers agree: %v (%d groups)\n", r.AnswersAgree, r.Cachedb.Checksum.Rows)
}

func writeJSON(path string, r report) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
