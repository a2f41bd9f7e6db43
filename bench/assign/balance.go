package main

import (
	"math"
	"slices"

	"github.com/cachedb/cachedb/exec"
)

// strategy assigns tasks with the given sizes to nodes and returns each node's task indexes.
type strategy struct {
	name, what string
	assign     func(sizes []int64, nodes int) [][]int
}

var strategies = []strategy{
	{"largest-first", "exec.AssignShares: largest task first, each to the least-loaded node", exec.AssignShares},
	{"round-robin", "task i to node i mod nodes, in manifest order", roundRobin},
	{"contiguous", "equal counts of consecutive tasks per node, in manifest order", contiguous},
}

func roundRobin(sizes []int64, nodes int) [][]int {
	out := make([][]int, nodes)
	for i := range sizes {
		out[i%nodes] = append(out[i%nodes], i)
	}
	return out
}

// contiguous gives node k the tasks [k*n/nodes, (k+1)*n/nodes): counts differ by at most one.
func contiguous(sizes []int64, nodes int) [][]int {
	n := len(sizes)
	out := make([][]int, nodes)
	for k := range nodes {
		lo, hi := k*n/nodes, (k+1)*n/nodes
		out[k] = make([]int, 0, hi-lo)
		for i := lo; i < hi; i++ {
			out[k] = append(out[k], i)
		}
	}
	return out
}

// balance describes how evenly an assignment spreads bytes. Ratios are to the mean load
// (total bytes / nodes); the lower bound on any assignment's largest load is
// max(largest task, mean).
type balance struct {
	Tasks        int     `json:"tasks"`
	Nodes        int     `json:"nodes"`
	TotalBytes   int64   `json:"total_bytes"`
	MeanBytes    float64 `json:"mean_bytes"`
	MaxBytes     int64   `json:"max_bytes"`
	MinBytes     int64   `json:"min_bytes"`
	LargestTask  int64   `json:"largest_task_bytes"`
	LowerBound   float64 `json:"lower_bound_bytes"`
	MaxOverMean  float64 `json:"max_over_mean"`
	MinOverMean  float64 `json:"min_over_mean"`
	CV           float64 `json:"cv"`
	MaxOverBound float64 `json:"max_over_lower_bound"`
	BoundOverMn  float64 `json:"lower_bound_over_mean"`
	MaxTasks     int     `json:"max_tasks_per_node"`
	MinTasks     int     `json:"min_tasks_per_node"`
}

// measure checks that shares name every task exactly once and computes their balance. It
// returns ok false when a task is missing or repeated.
func measure(sizes []int64, shares [][]int) (balance, bool) {
	b := balance{Tasks: len(sizes), Nodes: len(shares)}
	seen := make([]bool, len(sizes))
	loads := make([]int64, len(shares))
	b.MinTasks = math.MaxInt
	for k, share := range shares {
		for _, t := range share {
			if t < 0 || t >= len(sizes) || seen[t] {
				return b, false
			}
			seen[t] = true
			loads[k] += sizes[t]
		}
		b.MaxTasks = max(b.MaxTasks, len(share))
		b.MinTasks = min(b.MinTasks, len(share))
	}
	if slices.Contains(seen, false) || len(shares) == 0 {
		return b, false
	}
	for _, s := range sizes {
		b.TotalBytes += s
		b.LargestTask = max(b.LargestTask, s)
	}
	b.MeanBytes = float64(b.TotalBytes) / float64(len(shares))
	b.MaxBytes, b.MinBytes = slices.Max(loads), slices.Min(loads)
	var ss float64
	for _, l := range loads {
		d := float64(l) - b.MeanBytes
		ss += d * d
	}
	b.LowerBound = max(float64(b.LargestTask), b.MeanBytes)
	if b.MeanBytes > 0 {
		b.MaxOverMean = float64(b.MaxBytes) / b.MeanBytes
		b.MinOverMean = float64(b.MinBytes) / b.MeanBytes
		b.CV = math.Sqrt(ss/float64(len(loads))) / b.MeanBytes
		b.MaxOverBound = float64(b.MaxBytes) / b.LowerBound
		b.BoundOverMn = b.LowerBound / b.MeanBytes
	}
	return b, true
}
