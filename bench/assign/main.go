// Command assign benchmarks how the head divides a query's scan tasks among data nodes.
//
// It generates a deterministic, skewed set of Iceberg data files (log-normal sizes around
// 128 MiB, a tail of small files of a few MiB in recent uncompacted partitions, a few files of
// about 1 GiB) and the same data as row-group tasks of about 128 MiB. Over 100 nodes it times
// exec.AssignShares (largest first, each task to the least-loaded node: what the head does with
// unlocated scan tasks and how a dataset's tasks are cut into partitions) and, in the same run,
// two baselines: round-robin (task i to node i mod nodes) and a contiguous split (equal counts
// of consecutive tasks). For each it reports the median time and how evenly the bytes are
// spread: max/mean and min/mean load per node, coefficient of variation, and the largest load
// over the lower bound max(largest task, total/nodes). A scaling table times AssignShares at
// 10k, 100k and 1M tasks over 100 and 1,000 nodes. It prints tables and writes the figures as
// JSON. It is a benchmark, never a test: nothing here asserts a speed.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

type config struct {
	files, nodes, runs int
	scalingTasks       []int
	scalingNodes       []int
	seed               uint64
	results            string
}

// report is the JSON result file.
type report struct {
	Benchmark string       `json:"benchmark"`
	When      string       `json:"when"`
	GoVersion string       `json:"go_version"`
	GOOS      string       `json:"goos"`
	GOARCH    string       `json:"goarch"`
	CPUs      int          `json:"cpus"`
	Runs      int          `json:"runs"`
	Shape     shape        `json:"shape"`
	Workload  workload     `json:"workload"`
	Cases     []caseResult `json:"cases"`
	// Ratios are of the largest node load (what the slowest node reads, so what the scan stage
	// waits for): a baseline's over largest-first's, per granularity.
	Ratios  map[string]float64 `json:"ratios"`
	Scaling []scalingResult    `json:"scaling"`
}

type workload struct {
	Files          int     `json:"files"`
	RowGroupTasks  int     `json:"row_group_tasks"`
	TotalBytes     int64   `json:"total_bytes"`
	SmallFiles     int     `json:"files_under_16mib"`
	HugeFiles      int     `json:"files_over_512mib"`
	MedianFileMiB  float64 `json:"median_file_mib"`
	MeanFileMiB    float64 `json:"mean_file_mib"`
	LargestFileMiB float64 `json:"largest_file_mib"`
}

type caseResult struct {
	Granularity string           `json:"granularity"`
	Tasks       int              `json:"tasks"`
	Nodes       int              `json:"nodes"`
	Strategies  []strategyResult `json:"strategies"`
}

type strategyResult struct {
	Strategy string    `json:"strategy"`
	What     string    `json:"what"`
	RunsS    []float64 `json:"runs_s"`
	MedianS  float64   `json:"median_s"`
	Balance  balance   `json:"balance"`
}

type scalingResult struct {
	Tasks   int       `json:"tasks"`
	Nodes   int       `json:"nodes"`
	RunsS   []float64 `json:"runs_s"`
	MedianS float64   `json:"median_s"`
	// MaxOverMean is largest-first's; RoundRobinMaxOverMean the baseline's on the same tasks.
	MaxOverMean           float64 `json:"max_over_mean"`
	MaxOverBound          float64 `json:"max_over_lower_bound"`
	RoundRobinMaxOverMean float64 `json:"round_robin_max_over_mean"`
}

func main() {
	var c config
	var tasks, nodes string
	flag.IntVar(&c.files, "files", 100_000, "data files to generate")
	flag.IntVar(&c.nodes, "nodes", 100, "data nodes to divide the tasks among")
	flag.IntVar(&c.runs, "runs", 5, "timed runs per assignment; the median is reported")
	flag.StringVar(&tasks, "scaling-tasks", "10000,100000,1000000", "task counts of the scaling table (empty: none)")
	flag.StringVar(&nodes, "scaling-nodes", "100,1000", "node counts of the scaling table")
	flag.Uint64Var(&c.seed, "seed", 42, "generator seed")
	flag.StringVar(&c.results, "results", "bench/results/assign.json", "where to write the figures")
	flag.Parse()
	var err error
	if c.scalingTasks, err = ints(tasks); err == nil {
		c.scalingNodes, err = ints(nodes)
	}
	if err == nil && (c.files < 1 || c.nodes < 1 || c.runs < 1) {
		err = fmt.Errorf("-files, -nodes and -runs must be positive")
	}
	if err == nil {
		err = run(c)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "assign:", err)
		os.Exit(1)
	}
}

func ints(list string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive count", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func run(c config) error {
	r := report{
		Benchmark: "assign", GoVersion: runtime.Version(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH,
		CPUs: runtime.NumCPU(), Runs: c.runs, Shape: defaultShape(c.files, c.seed),
		Ratios: map[string]float64{},
	}
	files := r.Shape.fileSizes()
	groups := r.Shape.rowGroups(files)
	r.Workload = describe(files, groups)
	w := r.Workload
	fmt.Printf("%d files, %.2f TiB: median %.1f MiB, mean %.1f MiB, largest %.0f MiB; %d under 16 MiB, %d over 512 MiB; %d row-group tasks\n\n",
		w.Files, float64(w.TotalBytes)/float64(1<<40), w.MedianFileMiB, w.MeanFileMiB, w.LargestFileMiB, w.SmallFiles, w.HugeFiles, w.RowGroupTasks)

	fmt.Printf("%-10s %-14s %7s %5s %10s %9s %9s %9s %9s %10s %10s\n",
		"tasks", "strategy", "count", "nodes", "median ms", "max/mean", "min/mean", "cv", "max/bound", "bound/mean", "tasks/node")
	for _, g := range []struct {
		name  string
		sizes []int64
	}{{"file", files}, {"row-group", groups}} {
		cr := caseResult{Granularity: g.name, Tasks: len(g.sizes), Nodes: c.nodes}
		for _, s := range strategies {
			runs, shares := timeRuns(c.runs, func() [][]int { return s.assign(g.sizes, c.nodes) })
			b, ok := measure(g.sizes, shares)
			if !ok {
				return fmt.Errorf("%s over %s tasks does not assign every task exactly once", s.name, g.name)
			}
			sr := strategyResult{Strategy: s.name, What: s.what, RunsS: runs, MedianS: median(runs), Balance: b}
			cr.Strategies = append(cr.Strategies, sr)
			fmt.Printf("%-10s %-14s %7d %5d %10.3f %9.6f %9.6f %9.6f %9.6f %10.6f %5d-%d\n",
				g.name, s.name, b.Tasks, b.Nodes, sr.MedianS*1e3, b.MaxOverMean, b.MinOverMean, b.CV, b.MaxOverBound, b.BoundOverMn, b.MinTasks, b.MaxTasks)
		}
		lf := cr.Strategies[0].Balance
		for _, sr := range cr.Strategies[1:] {
			key := fmt.Sprintf("max_load_%s_vs_largest_first_%s", under(sr.Strategy), under(g.name))
			r.Ratios[key] = float64(sr.Balance.MaxBytes) / float64(lf.MaxBytes)
		}
		r.Cases = append(r.Cases, cr)
	}
	r.Ratios["max_load_largest_first_row_group_vs_file"] =
		float64(r.Cases[1].Strategies[0].Balance.MaxBytes) / float64(r.Cases[0].Strategies[0].Balance.MaxBytes)
	fmt.Println()
	keys := make([]string, 0, len(r.Ratios))
	for k := range r.Ratios {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Printf("%-58s %.4f\n", k, r.Ratios[k])
	}

	if len(c.scalingTasks) > 0 && len(c.scalingNodes) > 0 {
		fmt.Printf("\nscaling of exec.AssignShares (file-sized tasks from the same generator)\n")
		fmt.Printf("%10s %6s %10s %9s %9s %12s\n", "tasks", "nodes", "median ms", "max/mean", "max/bound", "rr max/mean")
		for _, n := range c.scalingTasks {
			sizes := defaultShape(n, c.seed).fileSizes()
			for _, k := range c.scalingNodes {
				runs, shares := timeRuns(c.runs, func() [][]int { return strategies[0].assign(sizes, k) })
				b, ok := measure(sizes, shares)
				rr, ok2 := measure(sizes, roundRobin(sizes, k))
				if !ok || !ok2 {
					return fmt.Errorf("%d tasks over %d nodes: not every task assigned exactly once", n, k)
				}
				sr := scalingResult{Tasks: n, Nodes: k, RunsS: runs, MedianS: median(runs),
					MaxOverMean: b.MaxOverMean, MaxOverBound: b.MaxOverBound, RoundRobinMaxOverMean: rr.MaxOverMean}
				r.Scaling = append(r.Scaling, sr)
				fmt.Printf("%10d %6d %10.3f %9.6f %9.6f %12.6f\n", n, k, sr.MedianS*1e3, sr.MaxOverMean, sr.MaxOverBound, sr.RoundRobinMaxOverMean)
			}
		}
	}

	r.When = time.Now().UTC().Format(time.RFC3339)
	if c.results == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(c.results), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.results, append(data, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Printf("\nwrote %s\n", c.results)
	return nil
}

// timeRuns runs f n times after a garbage collection each, and returns the wall times in
// seconds and the last result.
func timeRuns(n int, f func() [][]int) ([]float64, [][]int) {
	runs := make([]float64, n)
	var out [][]int
	for i := range runs {
		runtime.GC()
		began := time.Now()
		out = f()
		runs[i] = time.Since(began).Seconds()
	}
	return runs, out
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func under(s string) string { return strings.ReplaceAll(s, "-", "_") }

func describe(files, groups []int64) workload {
	w := workload{Files: len(files), RowGroupTasks: len(groups)}
	for _, f := range files {
		w.TotalBytes += f
		if f < 16*mib {
			w.SmallFiles++
		}
		if f > 512*mib {
			w.HugeFiles++
		}
	}
	sorted := slices.Clone(files)
	slices.Sort(sorted)
	m := float64(mib)
	w.MedianFileMiB = float64(sorted[len(sorted)/2]) / m
	w.MeanFileMiB = float64(w.TotalBytes) / float64(len(files)) / m
	w.LargestFileMiB = float64(sorted[len(sorted)-1]) / m
	return w
}
