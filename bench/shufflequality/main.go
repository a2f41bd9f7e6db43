// Command shufflequality measures how close the training-read shuffle (cluster.EpochOrder) is
// to a uniform one, on synthetic datasets of any size (no cluster: the order is computed with
// the same code the head and the data nodes use).
//
// For each dataset size it prints and writes (bench/results/shuffle_quality.json):
//   - files and partitions per batch: the mean number of distinct data files (and partitions)
//     among the rows of a batch of batch_size consecutive epoch positions, against the expected
//     number in a uniform sample of batch_size rows;
//   - the Spearman rank correlation of the rows' positions between consecutive epochs (0 for
//     independent shuffles; the sampling spread is about 1/sqrt(rows));
//   - the same-rank fraction: per rank, the share of its rows (shares=exact) that are on the
//     same rank in the next epoch, at several world sizes (1/world_size for independent
//     shuffles).
//
// Nothing is asserted: "within" says whether a figure is inside the bounds the shuffle aims at
// (files per batch ≥ 90 % of uniform; |rho| ≤ 0.05; same-rank within ±0.05 of 1/world_size).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cachedb/cachedb/cluster"
)

type sizeResult struct {
	Rows       int64 `json:"rows"`
	Partitions int   `json:"partitions"`
	Files      int   `json:"files"`
	Windows    int   `json:"windows"`
	Blocks     int64 `json:"blocks"`
	BatchSize  int64 `json:"batch_size"`
	// Per batch, mean over the batches of epoch 0 (whole batches only).
	FilesPerBatch        float64 `json:"files_per_batch"`
	FilesPerBatchUniform float64 `json:"files_per_batch_uniform"`
	PartsPerBatch        float64 `json:"partitions_per_batch"`
	PartsPerBatchUniform float64 `json:"partitions_per_batch_uniform"`
	// Spearman over consecutive epoch pairs.
	Spearman []float64 `json:"spearman"`
	// SameRank[world] lists min and max over ranks and epoch pairs.
	SameRank map[string][2]float64 `json:"same_rank_min_max"`
	Within   map[string]bool       `json:"within"`
	Seconds  float64               `json:"seconds"`
}

type report struct {
	Seed              uint64       `json:"seed"`
	Epochs            int          `json:"epochs"`
	Mixing            string       `json:"mixing"`
	ChunkRows         int          `json:"chunk_rows"`
	WindowRows        int          `json:"window_rows"`
	PartitionsSetting int          `json:"partitions"`
	FilesPerPartition int          `json:"files_per_partition"`
	WorldSizes        []int        `json:"world_sizes"`
	Sizes             []sizeResult `json:"sizes"`
}

func main() {
	sizes := flag.String("rows", "10000,1000000,100000000", "dataset sizes in rows, comma-separated")
	parts := flag.Int("partitions", 8, "partitions per dataset")
	filesPer := flag.Int("files-per-partition", 2, "data files each partition is made from")
	batch := flag.Int64("batch-size", 1000, "rows per batch")
	epochs := flag.Int("epochs", 5, "epochs measured (epochs-1 consecutive pairs)")
	seed := flag.Uint64("seed", 0, "shuffle seed")
	chunk := flag.Int("chunk-rows", cluster.DefaultChunkRows, "chunk_rows of the shuffle")
	window := flag.Int("window-rows", cluster.DefaultWindowRows, "window_rows of the shuffle")
	mixingName := flag.String("mixing", "blocks", "how partitions are mixed: blocks or windows")
	worlds := flag.String("world-sizes", "2,3,5", "world sizes for the same-rank fraction")
	out := flag.String("out", "bench/results/shuffle_quality.json", "where to write the results (\"\" for nowhere)")
	flag.Parse()

	mixing, err := cluster.ParseEpochMixing(*mixingName)
	if err != nil {
		fail(fmt.Errorf("-mixing %q: %w", *mixingName, err))
	}
	rep := report{Seed: *seed, Epochs: *epochs, Mixing: mixing.String(), ChunkRows: *chunk, WindowRows: *window, PartitionsSetting: *parts, FilesPerPartition: *filesPer}
	for _, w := range strings.Split(*worlds, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n < 1 {
			fail(fmt.Errorf("bad world size %q", w))
		}
		rep.WorldSizes = append(rep.WorldSizes, n)
	}
	fmt.Printf("shuffle quality: mixing %s, chunk_rows %d, window_rows %d, %d partitions × %d files, batch %d, seed %d, %d epochs\n",
		mixing, *chunk, *window, *parts, *filesPer, *batch, *seed, *epochs)
	for _, s := range strings.Split(*sizes, ",") {
		rows, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || rows < 2 || rows > math.MaxUint32 {
			fail(fmt.Errorf("bad dataset size %q (2 to 2^32-1 rows)", s))
		}
		res, err := measure(newDataset(rows, *parts, *filesPer), rep, *batch)
		if err != nil {
			fail(err)
		}
		print(res, rep.WorldSizes)
		rep.Sizes = append(rep.Sizes, res)
	}
	if *out != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
			fail(err)
		}
		if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
			fail(err)
		}
		fmt.Println("wrote", *out)
	}
}

// measure computes the figures of one dataset over rep.Epochs epochs.
func measure(d dataset, rep report, batch int64) (sizeResult, error) {
	began := time.Now()
	res := sizeResult{Rows: d.rows, Partitions: len(d.partRows), Files: len(d.partRows) * d.filesPer, BatchSize: batch,
		SameRank: map[string][2]float64{}, Within: map[string]bool{}}
	prev, cur := make([]uint32, d.rows), make([]uint32, d.rows)
	files := newDistinctCounter(res.Files, batch)
	partsSeen := newDistinctCounter(res.Partitions, batch)
	for e := range rep.Epochs {
		mixing, _ := cluster.ParseEpochMixing(rep.Mixing)
		o, err := cluster.NewEpochOrder(d.partRows, rep.Seed, int64(e), true, mixing, rep.ChunkRows, rep.WindowRows)
		if err != nil {
			return res, err
		}
		var visit func(g int64, part, file int)
		if e == 0 {
			for p := range d.partRows {
				res.Windows += o.PartitionWindows(p)
			}
			res.Blocks = o.Blocks()
			visit = func(g int64, part, file int) {
				files.add(g, file)
				partsSeen.add(g, part)
			}
		}
		epochPositions(o, d, cur, visit)
		if e > 0 {
			res.Spearman = append(res.Spearman, spearman(prev, cur))
			for _, w := range rep.WorldSizes {
				key := strconv.Itoa(w)
				mm, ok := res.SameRank[key]
				if !ok {
					mm = [2]float64{math.Inf(1), math.Inf(-1)}
				}
				for _, f := range sameRank(prev, cur, w) {
					mm[0], mm[1] = min(mm[0], f), max(mm[1], f)
				}
				res.SameRank[key] = mm
			}
		}
		prev, cur = cur, prev
	}
	res.FilesPerBatch, res.PartsPerBatch = files.mean(), partsSeen.mean()
	res.FilesPerBatchUniform = uniformDistinct(d.fileRows(), batch)
	res.PartsPerBatchUniform = uniformDistinct(d.partRows, batch)
	res.Within["files_per_batch"] = res.FilesPerBatch >= 0.9*res.FilesPerBatchUniform
	rho := true
	for _, r := range res.Spearman {
		rho = rho && math.Abs(r) <= 0.05
	}
	res.Within["spearman"] = rho
	for _, w := range rep.WorldSizes {
		mm, want := res.SameRank[strconv.Itoa(w)], 1/float64(w)
		res.Within["same_rank_"+strconv.Itoa(w)] = mm[0] >= want-0.05 && mm[1] <= want+0.05
	}
	res.Seconds = time.Since(began).Seconds()
	return res, nil
}

func print(r sizeResult, worlds []int) {
	mark := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "OUT"
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range r.Spearman {
		lo, hi = min(lo, s), max(hi, s)
	}
	fmt.Printf("\n%d rows, %d partitions, %d files, %d windows, %d blocks (%.1fs)\n", r.Rows, r.Partitions, r.Files, r.Windows, r.Blocks, r.Seconds)
	fmt.Printf("  files per batch       %6.2f   uniform %6.2f   (%.0f%%) %s\n", r.FilesPerBatch, r.FilesPerBatchUniform,
		100*r.FilesPerBatch/r.FilesPerBatchUniform, mark(r.Within["files_per_batch"]))
	fmt.Printf("  partitions per batch  %6.2f   uniform %6.2f\n", r.PartsPerBatch, r.PartsPerBatchUniform)
	fmt.Printf("  spearman epoch→epoch  %+.3f … %+.3f   want |rho| ≤ 0.05 %s\n", lo, hi, mark(r.Within["spearman"]))
	for _, w := range worlds {
		mm := r.SameRank[strconv.Itoa(w)]
		fmt.Printf("  same rank, world %d    %.3f … %.3f   want %.3f ± 0.05 %s\n", w, mm[0], mm[1], 1/float64(w),
			mark(r.Within["same_rank_"+strconv.Itoa(w)]))
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "shufflequality:", err)
	os.Exit(2)
}
