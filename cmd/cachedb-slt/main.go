// Command cachedb-slt runs sqllogictest files against cachedb through its Flight SQL server,
// the way a client sees it: for every file it starts a fresh `cachedb serve` on a loopback port,
// runs the file's records through the ADBC Flight SQL driver, and stops the server.
//
// Usage:
//
//	cachedb-slt [flags] [FILE|DIR ...]
//
// FILE and DIR are taken relative to --dir (or the working directory); none means all of --dir.
// It prints one line per file and a total, optionally writes the report as text and JSON
// (--results) and every failing record (--failures), and exits with status 1 when the pass rate
// is below --min-pass, 2 on bad usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cachedb/cachedb/internal/slt"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

type config struct {
	binary       string
	workers      int
	dir          string
	engine       string
	include      string
	exclude      string
	parallel     int
	queryTimeout time.Duration
	fileTimeout  time.Duration
	results      string
	failures     string
	minPass      float64
	quiet        bool
}

func parseFlags(args []string) (config, []string, error) {
	root := repoRoot()
	var c config
	fs := flag.NewFlagSet("cachedb-slt", flag.ContinueOnError)
	fs.StringVar(&c.binary, "cachedb", filepath.Join(root, "bin", "cachedb"), "the cachedb binary to start for each file")
	fs.IntVar(&c.workers, "workers", 0, "in-process data nodes each server runs (cachedb serve --workers)")
	fs.StringVar(&c.dir, "dir", filepath.Join(root, "..", "shared", "slt"), "directory holding the test files")
	fs.StringVar(&c.engine, "engine", "mysql", "engine label matched by skipif / onlyif")
	fs.StringVar(&c.include, "run", "", "only run files whose name matches this regular expression")
	fs.StringVar(&c.exclude, "skip", "", "skip files whose name matches this regular expression")
	fs.IntVar(&c.parallel, "parallel", 1, "number of files run at once, each with its own server")
	fs.DurationVar(&c.queryTimeout, "query-timeout", 10*time.Second, "limit for one statement or query (a query that times out is retried once on a new connection)")
	fs.DurationVar(&c.fileTimeout, "file-timeout", 15*time.Minute, "limit for one file, server start included")
	fs.StringVar(&c.results, "results", "", "write the report to `BASE`.txt and BASE.json")
	fs.StringVar(&c.failures, "failures", "", "write every failing record (location, SQL, expected, got) to `FILE`")
	fs.Float64Var(&c.minPass, "min-pass", 0, "exit with status 1 when the pass rate (percent) is below this")
	fs.BoolVar(&c.quiet, "q", false, "print only files with failures and the totals")
	if err := fs.Parse(args); err != nil {
		return c, nil, err
	}
	if c.parallel < 1 {
		return c, nil, errors.New("--parallel must be at least 1")
	}
	return c, fs.Args(), nil
}

func run(args []string) int {
	cfg, selectors, err := parseFlags(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(os.Stderr, "cachedb-slt:", err)
		return 2
	}
	include, exclude, err := compileFilters(cfg.include, cfg.exclude)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cachedb-slt:", err)
		return 2
	}
	if _, err := os.Stat(cfg.binary); err != nil {
		fmt.Fprintf(os.Stderr, "cachedb-slt: cachedb binary %s not found (build it with `make build`)\n", cfg.binary)
		return 2
	}
	files, err := slt.FindFiles(cfg.dir, selectors, include, exclude)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cachedb-slt:", err)
		return 2
	}
	if len(files) == 0 {
		fmt.Fprintln(os.Stderr, "cachedb-slt: no test files selected")
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	started := time.Now()
	start := slt.StartServers(slt.ServerConfig{Binary: cfg.binary, RPCTimeout: cfg.queryTimeout, ExtraArgs: workerArgs(cfg.workers)})
	opts := slt.Options{Engine: cfg.engine, QueryTimeout: cfg.queryTimeout, FileTimeout: cfg.fileTimeout}
	results := slt.RunFiles(ctx, files, start, opts, cfg.parallel, func(f slt.FileResult) {
		if !cfg.quiet || f.Fail > 0 || f.Error != "" {
			fmt.Println(slt.FileLine(f))
		}
	})
	summary := slt.Summarize(cfg.engine, started, results)
	fmt.Print(slt.TotalLines(summary))

	if cfg.results != "" {
		if err := slt.WriteResults(cfg.results, summary); err != nil {
			fmt.Fprintln(os.Stderr, "cachedb-slt:", err)
			return 1
		}
	}
	if cfg.failures != "" {
		if err := writeFailures(cfg.failures, results); err != nil {
			fmt.Fprintln(os.Stderr, "cachedb-slt:", err)
			return 1
		}
	}
	if summary.PassPercent < cfg.minPass {
		fmt.Fprintf(os.Stderr, "cachedb-slt: pass rate %.2f%% is below the required %.2f%%\n", summary.PassPercent, cfg.minPass)
		return 1
	}
	return 0
}

func compileFilters(include, exclude string) (*regexp.Regexp, *regexp.Regexp, error) {
	var in, ex *regexp.Regexp
	var err error
	if include != "" {
		if in, err = regexp.Compile(include); err != nil {
			return nil, nil, fmt.Errorf("--run: %w", err)
		}
	}
	if exclude != "" {
		if ex, err = regexp.Compile(exclude); err != nil {
			return nil, nil, fmt.Errorf("--skip: %w", err)
		}
	}
	return in, ex, nil
}

func writeFailures(path string, results []slt.FileResult) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating failures file: %w", err)
	}
	if err := slt.WriteFailures(f, results); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// repoRoot is the nearest directory at or above the working directory whose go.mod declares
// this module; the working directory when there is none.
func repoRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			strings.Contains(string(data), "module github.com/cachedb/cachedb\n") {
			return dir
		}
		if filepath.Dir(dir) == dir {
			return wd
		}
	}
}

// workerArgs are the serve flags that start n in-process data nodes (none for 0).
func workerArgs(n int) []string {
	if n <= 0 {
		return nil
	}
	return []string{"--workers", strconv.Itoa(n)}
}
