package main

import (
	"math"
	"math/rand/v2"
)

const (
	kib = int64(1) << 10
	mib = int64(1) << 20
	gib = int64(1) << 30
)

// shape fixes the synthetic table: how many files, how their sizes are drawn, and the
// row-group target they are written with.
type shape struct {
	Files int `json:"files"`
	// RecentFraction of the files, listed last, belong to recent partitions that have not been
	// compacted yet: SmallInRecent of those are small files of a few MiB.
	RecentFraction float64 `json:"recent_fraction"`
	SmallInRecent  float64 `json:"small_in_recent"`
	// HugeFraction of the compacted files are about 1 GiB (backfills, unsplit rewrites).
	HugeFraction float64 `json:"huge_fraction"`
	// Compacted files are log-normal around MedianMiB with SigmaLog (of the natural log).
	MedianMiB float64 `json:"median_mib"`
	SigmaLog  float64 `json:"sigma_log"`
	// Small files are log-normal around SmallMedianMiB with SmallSigmaLog.
	SmallMedianMiB float64 `json:"small_median_mib"`
	SmallSigmaLog  float64 `json:"small_sigma_log"`
	// RowGroupMiB is the writer's row-group target; a row group's bytes vary ±RowGroupJitter
	// around it (compressed sizes differ from group to group).
	RowGroupMiB    float64 `json:"row_group_mib"`
	RowGroupJitter float64 `json:"row_group_jitter"`
	Seed           uint64  `json:"seed"`
}

func defaultShape(files int, seed uint64) shape {
	return shape{
		Files:          files,
		RecentFraction: 0.10,
		SmallInRecent:  0.80,
		HugeFraction:   0.003,
		MedianMiB:      128,
		SigmaLog:       0.35,
		SmallMedianMiB: 4,
		SmallSigmaLog:  0.7,
		RowGroupMiB:    128,
		RowGroupJitter: 0.15,
		Seed:           seed,
	}
}

// fileSizes returns the data files' sizes in bytes, in manifest order: the compacted history
// first, then the recent partitions with their small files. The result is a pure function of
// the shape.
func (s shape) fileSizes() []int64 {
	rng := rand.New(rand.NewPCG(s.Seed, 0x5eed_f11e))
	sizes := make([]int64, s.Files)
	recentFrom := s.Files - int(math.Round(float64(s.Files)*s.RecentFraction))
	for i := range sizes {
		switch {
		case i >= recentFrom && rng.Float64() < s.SmallInRecent:
			sizes[i] = logNormal(rng, s.SmallMedianMiB, s.SmallSigmaLog, 256*kib, 32*mib)
		case i < recentFrom && rng.Float64() < s.HugeFraction:
			sizes[i] = int64((0.75 + 0.5*rng.Float64()) * float64(gib))
		default:
			sizes[i] = logNormal(rng, s.MedianMiB, s.SigmaLog, 8*mib, 768*mib)
		}
	}
	return sizes
}

// logNormal draws exp(N(ln median, sigma)) MiB, clamped to [lo, hi] bytes.
func logNormal(rng *rand.Rand, medianMiB, sigma float64, lo, hi int64) int64 {
	v := int64(medianMiB * math.Exp(sigma*rng.NormFloat64()) * float64(mib))
	return min(max(v, lo), hi)
}

// rowGroups splits every file into row-group tasks, file by file in order: full groups of
// RowGroupMiB ± jitter and a last group with the remainder. A file no larger than 1 + jitter
// groups stays one task. The tasks of a file sum to the file's size.
func (s shape) rowGroups(files []int64) []int64 {
	rng := rand.New(rand.NewPCG(s.Seed, 0x0_2046_9209))
	target := s.RowGroupMiB * float64(mib)
	whole := int64(target * (1 + s.RowGroupJitter))
	tasks := make([]int64, 0, len(files)*2)
	for _, size := range files {
		if size <= whole {
			tasks = append(tasks, size)
			continue
		}
		for left := size; left > 0; {
			g := int64(target * (1 - s.RowGroupJitter + 2*s.RowGroupJitter*rng.Float64()))
			g = min(g, left)
			tasks = append(tasks, g)
			left -= g
		}
	}
	return tasks
}
