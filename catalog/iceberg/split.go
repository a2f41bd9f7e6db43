package iceberg

// DefaultSplitBytes is the size a scan task aims at (Config.SplitBytes): a file, or a run of
// row groups left after pruning, that reads more is cut into several tasks at row-group
// boundaries. Tasks are what a query's partitions and a dataset's partitions are made of, and
// what the head spreads over data nodes by bytes, so a table of a few large files still divides
// evenly over many nodes. 16 MiB keeps a task a few hundred milliseconds of Parquet decoding,
// big enough that opening a file per task (one footer read, served from the file's tail fetch)
// stays a small share of it; Trino's initial splits (32 MiB) and Spark's file partitions
// (128 MiB) are larger because their tasks are scheduled per core, not spread over nodes.
const DefaultSplitBytes = 16 << 20

// splitBytes is the catalog's target task size; 0 when splitting is off.
func (c *Catalog) splitBytes() int64 {
	switch n := c.cfg.SplitBytes; {
	case n < 0:
		return 0
	case n == 0:
		return DefaultSplitBytes
	default:
		return n
	}
}

// splitTasks cuts every task reading more than target bytes into tasks of whole consecutive row
// groups of about target bytes each, in file order. Row-group boundaries come from the data
// file's split offsets (from the manifest: no read), which iceberg-go also selects ranges by; a
// file without valid split offsets, or with one row group in the range, keeps its task. The
// result depends only on the tasks and target, so every process plans the same tasks.
func splitTasks(tasks []prunedTask, target int64) []prunedTask {
	if target <= 0 {
		return tasks
	}
	var out []prunedTask
	for _, pt := range tasks {
		out = append(out, splitTask(pt, target)...)
	}
	return out
}

func splitTask(pt prunedTask, target int64) []prunedTask {
	task := pt.task
	size := task.File.FileSizeBytes()
	offsets := task.File.SplitOffsets()
	if !validSplitOffsets(offsets, size) {
		return []prunedTask{pt}
	}
	start, end := task.Start, task.Start+task.Length
	if task.Length <= 0 {
		start, end = 0, size
	}
	if end-start <= target {
		return []prunedTask{pt}
	}
	// The row groups the task reads: those whose offset lies in its range (a range from 0
	// holds the first group, as iceberg-go's own splits start there).
	var groups []int
	for g, off := range offsets {
		if (off >= start && off < end) || (g == 0 && start == 0) {
			groups = append(groups, g)
		}
	}
	if len(groups) < 2 {
		return []prunedTask{pt}
	}
	groupEnd := func(g int) int64 {
		if g+1 < len(offsets) {
			return min(offsets[g+1], end)
		}
		return end
	}
	var out []prunedTask
	from := start
	first := 0
	for i, g := range groups {
		last := i == len(groups)-1
		to := groupEnd(g)
		if to-from < target && !last {
			continue
		}
		if last {
			to = end
		}
		nt := task
		nt.Start, nt.Length = from, to-from
		part := prunedTask{task: nt, groups: int64(i - first + 1), bytes: -1, tested: pt.tested}
		if pt.bytes >= 0 && end > start {
			part.bytes = pt.bytes * (to - from) / (end - start)
		}
		out = append(out, part)
		from, first = to, i+1
	}
	return out
}

// validSplitOffsets reports whether offsets can cut a file of size bytes: ascending and inside
// the file.
func validSplitOffsets(offsets []int64, size int64) bool {
	if len(offsets) == 0 || size <= 0 {
		return false
	}
	for i, o := range offsets {
		if o < 0 || o >= size || (i > 0 && o <= offsets[i-1]) {
			return false
		}
	}
	return true
}
