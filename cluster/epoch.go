package cluster

import (
	"errors"
	"math"
	"math/bits"
	"sort"

	"github.com/cachedb/cachedb/internal/errs"
)

// The order of a training epoch over a dataset, and each reader's share of it.
//
// An epoch is one pass over a dataset's rows in a global order that is a pure function of the
// dataset's partition row counts, the seed, the epoch number and the two sizes below; it does
// not depend on the world size, the number of workers or where partitions are held, so a job
// may change its world size, and a partition rebuilt on another node after a loss, without
// changing which row comes at which position.
//
// The order is built so that every stretch of it mixes rows of every partition, and each data
// node can still produce its partitions' rows of a stretch from memory at streaming speed:
//
//  1. Each partition's rows are cut into chunks of ChunkRows consecutive rows. Per epoch the
//     chunks of each partition are permuted ("dealt"), and the dealt rows are cut into windows
//     of WindowRows rows (the partition's last window may be shorter). Within each window the
//     rows are permuted. The result is the partition's sequence for the epoch.
//  2. The epoch is cut into Blocks() blocks of about BlockRows rows. Block b holds, for each
//     partition p in partition order, the run of p's sequence from floor(b·n_p/B) to
//     floor((b+1)·n_p/B) (n_p its rows, B the blocks): every partition's sequence is spread
//     evenly over the whole epoch, and every block draws from every partition in proportion
//     to its size.
//
// So a batch of about a block's rows or more holds rows of every partition, each partition's
// from many random places of it (a window's chunks); and a row's position in the epoch is drawn
// afresh every epoch (its chunk is dealt to a random place in its partition's sequence, its row
// to a random place in its window), so consecutive epochs are close to independent. A data node
// reads its partitions' runs of a stretch a window at a time, as it read whole windows before.
// Without shuffling the epoch is the partitions' rows in order (one block).
//
// That is step 2 of MixBlocks. MixWindows, for readers that cannot merge the streams of several
// nodes, replaces it: the windows of all partitions are permuted together and the epoch is their
// concatenation, so a stretch shorter than a window draws from one partition.
//
// Every permutation is a Fisher–Yates shuffle driven by SplitMix64 keyed by (seed, epoch, what
// is permuted), so every process computes the same order (of one EpochOrderVersion).

// EpochOrderVersion numbers the algorithm above. It is part of a dataset's order key
// (engine.EpochOrderKey), so a job or checkpoint made under another version is refused instead
// of being continued in another order. 3: blocks interleave runs of every partition (step 2),
// where 1 concatenated whole windows of single partitions in a random order (as MixWindows
// does, of smaller windows by default).
const EpochOrderVersion = 3

// Default sizes of the shuffle.
const (
	DefaultChunkRows = 256
	// DefaultWindowRows is small so that a data node reading the current window of every
	// partition it holds at once still picks from cache (16 KiB of each 4-byte column).
	DefaultWindowRows = 4096
	// BlockRows is about how many rows a block of the epoch has (step 2): a stretch of that
	// many rows draws from every partition. It depends on nothing a reader chooses.
	BlockRows = 1024
	// MaxWindowRows bounds a window: a node gathers from a window at a time in memory.
	MaxWindowRows = 1 << 22
	// MaxEpochChunks bounds the chunks of an epoch (rows / chunk_rows, about 8.6 billion rows
	// at the default chunk size): laying out the order holds one entry per chunk.
	MaxEpochChunks = 1 << 25
)

// EpochOrder is the global order of one epoch of a dataset. It is immutable once made, and
// shared by concurrent readers (EpochOrders).
type EpochOrder struct {
	// PartRows are the row counts of the dataset's partitions, in partition order.
	PartRows []int64
	Seed     uint64
	Epoch    int64
	// Shuffle false keeps the dataset's own order: partition 0's rows, then partition 1's, …
	Shuffle bool
	// Mixing says how the partitions' sequences make the epoch (step 2).
	Mixing EpochMixing
	// ChunkRows and WindowRows size the shuffle (see above); WindowRows is rounded down to a
	// multiple of ChunkRows.
	ChunkRows, WindowRows int

	total  int64
	blocks int64
	// dealt holds each partition's chunk numbers in dealt order, laid out once, and shortAt
	// where its short chunk was dealt (shortDealtAt); nil for an epoch of more than
	// maxKeptChunks chunks, whose windows deal them again each time.
	dealt   [][]int32
	shortAt []int64
	// windows (MixWindows) are the windows of every partition in the epoch's order, and
	// windowAt[k] the epoch position of windows[k]'s first row (then the epoch's rows).
	windows  []partWindowRef
	windowAt []int64
}

// partWindowRef is window W of partition P's sequence.
type partWindowRef struct{ P, W int32 }

// EpochMixing says how the partitions' sequences are laid into the epoch (step 2).
type EpochMixing int

const (
	// MixBlocks interleaves runs of every partition in every block of about BlockRows rows:
	// any stretch of the epoch draws from every partition. A reader of a dataset on several
	// nodes reads it as node streams (one per node, rows placed by each batch's runs).
	MixBlocks EpochMixing = iota
	// MixWindows lays the windows of all partitions end to end in a random order: a stretch of
	// the epoch shorter than a window draws from one partition, but each window is read from
	// one node, so a reader gets one ordered endpoint per window or run of windows on the same
	// node (what a client that cannot merge node streams reads).
	MixWindows
)

// ParseEpochMixing reads "blocks" or "windows".
func ParseEpochMixing(s string) (EpochMixing, error) {
	switch s {
	case "blocks":
		return MixBlocks, nil
	case "windows":
		return MixWindows, nil
	}
	return 0, errors.New("want blocks or windows")
}

func (m EpochMixing) String() string {
	if m == MixWindows {
		return "windows"
	}
	return "blocks"
}

// layWindows lays out the MixWindows order: every partition's windows, permuted together.
func (o *EpochOrder) layWindows() {
	for p := range o.PartRows {
		for w := range o.PartitionWindows(p) {
			o.windows = append(o.windows, partWindowRef{P: int32(p), W: int32(w)})
		}
	}
	perm := permutation32(len(o.windows), streamKey(o.Seed, uint64(o.Epoch), keyWindows))
	laid := make([]partWindowRef, len(o.windows))
	o.windowAt = make([]int64, len(o.windows)+1)
	for k, i := range perm {
		laid[k] = o.windows[i]
		o.windowAt[k+1] = o.windowAt[k] + o.windowRows(int(laid[k].P), int(laid[k].W))
	}
	o.windows = laid
}

// windowRows is the row count of window w of partition p's sequence.
func (o *EpochOrder) windowRows(p, w int) int64 {
	win := int64(o.WindowRows)
	return min(win, o.PartRows[p]-int64(w)*win)
}

// windowRuns is Runs of a MixWindows order.
func (o *EpochOrder) windowRuns(g0, g1 int64, fn func(g int64, part int, j, n int64) bool) bool {
	k := sort.Search(len(o.windows), func(k int) bool { return o.windowAt[k+1] > g0 })
	for g := g0; g < g1 && k < len(o.windows); k++ {
		at, end := o.windowAt[k], min(g1, o.windowAt[k+1])
		ref := o.windows[k]
		if !fn(g, int(ref.P), int64(ref.W)*int64(o.WindowRows)+g-at, end-g) {
			return false
		}
		g = end
	}
	return true
}

// blockRows is BlockRows; tests make it smaller, to cut small epochs into many blocks.
var blockRows int64 = BlockRows

// maxKeptChunks bounds the chunks an order keeps dealt (4 bytes each: 8 MiB).
var maxKeptChunks int64 = 1 << 21

// RowRange is the rows [From, To) of a partition.
type RowRange struct{ From, To int64 }

// NewEpochOrder validates the sizes and lays out the epoch.
func NewEpochOrder(partRows []int64, seed uint64, epoch int64, shuffle bool, mixing EpochMixing, chunkRows, windowRows int) (*EpochOrder, error) {
	if chunkRows <= 0 || windowRows <= 0 {
		return nil, errs.Invalidf("chunk_rows (%d) and window_rows (%d) must be positive", chunkRows, windowRows)
	}
	if windowRows > MaxWindowRows {
		return nil, errs.Invalidf("window_rows %d is larger than the largest window, %d", windowRows, MaxWindowRows)
	}
	if chunkRows > windowRows {
		return nil, errs.Invalidf("chunk_rows %d is larger than window_rows %d", chunkRows, windowRows)
	}
	if epoch < 0 {
		return nil, errs.Invalidf("epoch %d is negative", epoch)
	}
	var chunks, total int64
	for p, rows := range partRows {
		if rows < 0 || rows > math.MaxInt64/2-total {
			return nil, errs.Invalidf("partition %d has %d rows", p, rows)
		}
		total += rows
		n := rows/int64(chunkRows) + min(1, rows%int64(chunkRows))
		if n > MaxEpochChunks-chunks {
			return nil, errs.Invalidf("the epoch has more than %d chunks of chunk_rows %d rows; raise chunk_rows", MaxEpochChunks, chunkRows)
		}
		chunks += n
	}
	o := &EpochOrder{PartRows: partRows, Seed: seed, Epoch: epoch, Shuffle: shuffle, Mixing: mixing, ChunkRows: chunkRows, WindowRows: windowRows / chunkRows * chunkRows, total: total, blocks: 1}
	if shuffle {
		switch mixing {
		case MixBlocks:
			o.blocks = max(1, (total+blockRows-1)/blockRows)
		case MixWindows:
			o.layWindows()
		default:
			return nil, errs.Invalidf("unknown epoch mixing %d", mixing)
		}
		if chunks <= maxKeptChunks {
			o.dealt, o.shortAt = make([][]int32, len(partRows)), make([]int64, len(partRows))
			for p := range partRows {
				o.dealt[p] = o.dealChunks(p)
				o.shortAt[p] = o.shortDealtAt(p, o.dealt[p])
			}
		}
	}
	return o, nil
}

// Rows is the number of rows in the epoch: every row of the dataset once.
func (o *EpochOrder) Rows() int64 { return o.total }

// Blocks is the number of blocks the epoch is cut into (step 2).
func (o *EpochOrder) Blocks() int64 { return o.blocks }

// blockCounts sets c[p] to how many of partition p's sequence rows come before block b.
func (o *EpochOrder) blockCounts(b int64, c []int64) []int64 {
	c = c[:0]
	for _, n := range o.PartRows {
		c = append(c, mulDiv(n, b, o.blocks))
	}
	return c
}

// blockStart is the epoch position of block b's first row (Rows for b = Blocks).
func (o *EpochOrder) blockStart(b int64) int64 {
	var s int64
	for _, n := range o.PartRows {
		s += mulDiv(n, b, o.blocks)
	}
	return s
}

// blockOf returns the block holding epoch position g (0 ≤ g < Rows).
func (o *EpochOrder) blockOf(g int64) int64 {
	lo, hi := int64(0), o.blocks // blockStart(lo) ≤ g < blockStart(hi)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if o.blockStart(mid) <= g {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// Runs calls fn with the epoch positions [g0, g1) cut into runs, in order: epoch positions
// [g, g+n) are rows [j, j+n) of partition part's sequence (Window says where those lie). A run
// never crosses a block or a window. It stops when fn returns false, and reports whether fn
// always returned true.
func (o *EpochOrder) Runs(g0, g1 int64, fn func(g int64, part int, j, n int64) bool) bool {
	g0, g1 = max(g0, 0), min(g1, o.total)
	if g0 >= g1 {
		return true
	}
	if o.windows != nil {
		return o.windowRuns(g0, g1, fn)
	}
	b := o.blockOf(g0)
	lo := o.blockCounts(b, make([]int64, 0, len(o.PartRows)))
	hi := o.blockCounts(b+1, make([]int64, 0, len(o.PartRows)))
	at := o.blockStart(b)
	w := int64(o.WindowRows)
	for g := g0; g < g1; {
		for p := range o.PartRows {
			n := hi[p] - lo[p]
			for from := max(g, at); from < min(g1, at+n); {
				j := lo[p] + from - at
				to := min(g1, at+n, from+(j/w+1)*w-j)
				if !fn(from, p, j, to-from) {
					return false
				}
				g, from = to, to
			}
			at += n
			if g >= g1 {
				return true
			}
		}
		b++
		lo, hi = hi, o.blockCounts(b+1, lo)
	}
	return true
}

// PartitionWindows is how many windows partition p's sequence has.
func (o *EpochOrder) PartitionWindows(p int) int {
	w := int64(o.WindowRows)
	return int((o.PartRows[p] + w - 1) / w)
}

// Window returns the window of partition p's sequence that holds its row j, and j's place in it.
func (o *EpochOrder) Window(j int64) (w int, i int64) {
	return int(j / int64(o.WindowRows)), j % int64(o.WindowRows)
}

// Gather says how a node produces window w of partition p: the partition's rows in chunks
// (concatenated in this order: the window's dealt rows), and, when shuffling, the permutation
// of the concatenation: row i of the window is row perm[i] of the concatenated chunks (perm is
// nil when not shuffling). Sequence row j of the partition is row j - w·WindowRows of the
// window that holds it.
func (o *EpochOrder) Gather(p, w int) (chunks []RowRange, perm []int32) {
	win := int64(o.WindowRows)
	d0 := int64(w) * win
	d1 := min(d0+win, o.PartRows[p])
	chunks = o.dealtRanges(p, d0, d1)
	if o.Shuffle && d1 > d0 {
		perm = permutation32(int(d1-d0), streamKey(o.Seed, uint64(o.Epoch), keyRows, uint64(p), uint64(w)))
	}
	return chunks, perm
}

// dealtRanges returns the partition rows of dealt rows [d0, d1) of partition p, as ranges in
// dealt order. Every chunk has ChunkRows rows but the partition's last, which has short rows
// (when the chunk size does not divide the partition) wherever it was dealt.
func (o *EpochOrder) dealtRanges(p int, d0, d1 int64) []RowRange {
	rows, size := o.PartRows[p], int64(o.ChunkRows)
	if !o.Shuffle {
		if d0 >= d1 {
			return nil
		}
		return []RowRange{{d0, d1}}
	}
	var dealt []int32
	var s int64
	if o.dealt != nil {
		dealt, s = o.dealt[p], o.shortAt[p]
	} else {
		dealt = o.dealChunks(p)
		s = o.shortDealtAt(p, dealt)
	}
	short := rows % size
	var out []RowRange
	for d := d0; d < d1; {
		// Dealt chunk k holds dealt rows [start, start+length).
		var k, start int64
		switch {
		case d < s*size:
			k = d / size
			start = k * size
		case d < s*size+short:
			k, start = s, s*size
		default:
			k = s + 1 + (d-s*size-short)/size
			start = s*size + short + (k-s-1)*size
		}
		c := int64(dealt[k])
		length := min(size, rows-c*size)
		to := min(d1, start+length)
		from := c*size + d - start
		out = append(out, RowRange{From: from, To: from + to - d})
		d = to
	}
	return out
}

// shortDealtAt returns where partition p's short chunk (its last, when the chunk size does not
// divide its rows) was dealt in dealt, or len(dealt) when it has none.
func (o *EpochOrder) shortDealtAt(p int, dealt []int32) int64 {
	if o.PartRows[p]%int64(o.ChunkRows) != 0 {
		last := int32(len(dealt) - 1)
		for k, c := range dealt {
			if c == last {
				return int64(k)
			}
		}
	}
	return int64(len(dealt))
}

func (o *EpochOrder) dealChunks(p int) []int32 {
	size := int64(o.ChunkRows)
	n := int((o.PartRows[p] + size - 1) / size)
	return permutation32(n, streamKey(o.Seed, uint64(o.Epoch), keyChunks, uint64(p)))
}

// ShareMode says how an epoch that does not divide evenly among ranks is shared.
type ShareMode int

const (
	// SharesExact gives every row to exactly one rank; shares differ by at most one row.
	SharesExact ShareMode = iota
	// SharesDropLast gives every rank the same number of rows, a whole number of batches when a
	// batch size is set; the rows left over at the end of the epoch order are read by no one
	// this epoch (they differ from epoch to epoch when shuffling).
	SharesDropLast
	// SharesPad gives every rank ceil(rows/world) rows: the shares that run past the end of the
	// epoch order continue from its beginning, so a few rows are read twice.
	SharesPad
)

// ParseShareMode reads "exact", "drop_last" or "pad".
func ParseShareMode(s string) (ShareMode, error) {
	switch s {
	case "", "exact":
		return SharesExact, nil
	case "drop_last":
		return SharesDropLast, nil
	case "pad":
		return SharesPad, nil
	}
	return 0, errs.Invalidf("shares %q is not one of exact, drop_last, pad", s)
}

func (m ShareMode) String() string {
	switch m {
	case SharesDropLast:
		return "drop_last"
	case SharesPad:
		return "pad"
	}
	return "exact"
}

// EpochReader is one reader of an epoch: a DataLoader worker of a rank.
//
// A rank's share is a contiguous stretch of the epoch order (RankRange). Counted from Offset,
// the rank's rows are cut into batches of BatchSize, and the batches into turns of
// WorkerBatches batches (default 1); worker w reads turns w, w+NumWorkers, … So a DataLoader
// that takes one turn from each worker in turn yields the rank's share in order, and a rank that
// consumed Offset rows resumes with its row Offset+1. A turn of many small batches lets a
// worker hand them over at once (one transfer between processes instead of one per batch).
type EpochReader struct {
	WorldSize, Rank    int
	NumWorkers, Worker int
	BatchSize          int
	// WorkerBatches is how many consecutive batches a worker reads per turn (0 or 1: one).
	WorkerBatches int
	// Offset is where the rank resumes: the rows of its share it already consumed. Batches
	// are cut from Offset on.
	Offset int64
	// Start lets one worker resume where it stopped without changing the batches: the worker
	// skips its rows before rank position Start.
	Start  int64
	Shares ShareMode
	// Resumed are the jobs that read this epoch before the reader's job, oldest first, each as
	// far as it got (EpochProgress). The reader's job then shares what they left instead of
	// the whole epoch (see Share).
	Resumed []EpochProgress
}

// EpochProgress is how far an earlier job got through the sequence it shared: the rows of each
// of its ranks' shares consumed, by rank (its world size is len(Offsets)). The job had the
// reader's share mode and batch size. An offset past the end of its rank's share counts as the
// whole share.
type EpochProgress struct {
	Offsets []int64
}

// MaxWorkerBatches bounds EpochReader.WorkerBatches.
const MaxWorkerBatches = 1 << 16

// Limits of Resumed, so that a ticket carrying it stays small and a share is mapped quickly.
const (
	MaxResumedJobs  = 16
	MaxResumedRanks = 1 << 14
)

// Validate checks the reader's numbers against each other.
func (r EpochReader) Validate() error {
	switch {
	case r.WorldSize < 1:
		return errs.Invalidf("world_size %d must be at least 1", r.WorldSize)
	case r.Rank < 0 || r.Rank >= r.WorldSize:
		return errs.Invalidf("rank %d is not in [0, world_size %d)", r.Rank, r.WorldSize)
	case r.NumWorkers < 1:
		return errs.Invalidf("num_workers %d must be at least 1", r.NumWorkers)
	case r.Worker < 0 || r.Worker >= r.NumWorkers:
		return errs.Invalidf("worker %d is not in [0, num_workers %d)", r.Worker, r.NumWorkers)
	case r.BatchSize < 0:
		return errs.Invalidf("batch_size %d is negative", r.BatchSize)
	case r.NumWorkers > 1 && r.BatchSize == 0:
		return errs.Invalidf("num_workers %d needs a batch_size: workers take turns by batch", r.NumWorkers)
	case r.WorkerBatches < 0 || r.WorkerBatches > MaxWorkerBatches:
		return errs.Invalidf("worker_batches %d is not in [1, %d]", r.WorkerBatches, MaxWorkerBatches)
	case r.Offset < 0 || r.Start < 0:
		return errs.Invalidf("offset %d and start %d must not be negative", r.Offset, r.Start)
	case len(r.Resumed) > MaxResumedJobs:
		return errs.Invalidf("resume names %d earlier jobs; at most %d", len(r.Resumed), MaxResumedJobs)
	}
	ranks := 0
	for j, p := range r.Resumed {
		if len(p.Offsets) == 0 {
			return errs.Invalidf("resume: earlier job %d has no ranks", j)
		}
		if ranks += len(p.Offsets); ranks > MaxResumedRanks {
			return errs.Invalidf("resume names more than %d ranks of earlier jobs", MaxResumedRanks)
		}
		for k, o := range p.Offsets {
			if o < 0 {
				return errs.Invalidf("resume: rank %d of earlier job %d consumed %d rows", k, j, o)
			}
		}
	}
	return nil
}

// RankRange returns where the rank's share starts in a sequence of total rows it shares with
// the other ranks (the epoch order, or what earlier jobs left of it: Share), and how many rows
// it has. With SharesPad, positions at or past total wrap to its beginning (Position).
func (r EpochReader) RankRange(total int64) (start, rows int64) {
	w, k := int64(r.WorldSize), int64(r.Rank)
	switch r.Shares {
	case SharesDropLast:
		per := total / w
		if r.BatchSize > 0 {
			per -= per % int64(r.BatchSize)
		}
		return k * per, per
	case SharesPad:
		per := (total + w - 1) / w
		return k * per, per
	}
	start, end := mulDiv(total, k, w), mulDiv(total, k+1, w)
	return start, end - start
}

// CheckShares refuses a read of a whole epoch of total rows that would give every rank nothing
// although the epoch has rows: shares=drop_last with fewer rows per rank than a batch (or than
// one row). An epoch resumed from earlier jobs may well leave too few rows for a batch each: the
// ranks then read nothing, as drop_last says.
func (r EpochReader) CheckShares(total int64) error {
	if r.Shares != SharesDropLast || len(r.Resumed) > 0 || total == 0 {
		return nil
	}
	if _, rows := r.RankRange(total); rows == 0 {
		return errs.Invalidf("shares=drop_last would leave every rank without rows: %d rows among world_size %d is %d each, fewer than batch_size %d; use a smaller batch_size, fewer ranks, or shares=exact or pad",
			total, r.WorldSize, total/int64(r.WorldSize), max(r.BatchSize, 1))
	}
	return nil
}

// Position maps the rank's position t (0-based, within its share starting at start) to the
// position in the sequence of total rows it shares (the epoch order when nothing is Resumed).
func (r EpochReader) Position(start, t, total int64) int64 {
	return position(start, t, total)
}

func position(start, t, total int64) int64 {
	g := start + t
	if g >= total && total > 0 {
		g %= total
	}
	return g
}

// Ranges calls fn with the worker's stretches [t0, t1) of the rank's share (of rankRows rows),
// clipped to [from, to), in increasing order, until fn returns false. Each stretch is one of
// the worker's turns (or the part of it inside [from, to)); without a batch size the worker's
// one stretch is everything from Offset on.
func (r EpochReader) Ranges(rankRows, from, to int64, fn func(t0, t1 int64) bool) {
	from, to = max(from, r.Offset, r.Start), min(to, rankRows)
	if from >= to {
		return
	}
	if r.BatchSize == 0 {
		fn(from, to)
		return
	}
	b, nw := int64(r.BatchSize)*int64(max(r.WorkerBatches, 1)), int64(r.NumWorkers)
	// The first of the worker's turns that ends after from.
	j := (from - r.Offset) / b
	if rem := (j - int64(r.Worker)) % nw; rem != 0 {
		if rem < 0 {
			rem += nw
		}
		j += nw - rem
	}
	for ; ; j += nw {
		t0 := r.Offset + j*b
		if t0 >= to {
			return
		}
		if !fn(max(t0, from), min(t0+b, to)) {
			return
		}
	}
}

// Share is where a reader's rank's share lies in an epoch: Rows positions, the t-th of which
// is epoch position At(t).
//
// Without Resumed jobs the rank shares the epoch order with the other ranks of its job
// (RankRange). A job that resumes the epoch on another world size shares instead what the
// earlier jobs left: for each earlier job, oldest first, the rows of its ranks' shares not
// consumed, rank 0's first, each in share order, concatenated. So the rows no earlier job
// consumed are read exactly once (with SharesExact), in equal shares, and in the order the
// earlier ranks would have read them.
type Share struct {
	// jobs are the earlier jobs, oldest first; total, start and rows place the rank's share in
	// the sequence the last of them left (the epoch order without them).
	jobs               []shareJob
	total, start, rows int64
}

// shareJob is one earlier job as Share maps through it: each rank's share of the sequence the
// job shared (total rows), the rows it consumed of it, and ends[k], where the rows rank k left
// end in the sequence the job left.
type shareJob struct {
	total                 int64
	starts, rows, offsets []int64
	ends                  []int64
}

// Share returns where the rank's share lies in an epoch of total rows.
func (r EpochReader) Share(total int64) Share {
	s := Share{total: total}
	for _, p := range r.Resumed {
		job := shareJob{total: s.total}
		earlier := r
		earlier.WorldSize, earlier.Resumed = len(p.Offsets), nil
		var left int64
		for k, o := range p.Offsets {
			earlier.Rank = k
			start, rows := earlier.RankRange(s.total)
			o = min(o, rows)
			left += rows - o
			job.starts, job.rows, job.offsets = append(job.starts, start), append(job.rows, rows), append(job.offsets, o)
			job.ends = append(job.ends, left)
		}
		s.jobs = append(s.jobs, job)
		s.total = left
	}
	s.start, s.rows = r.RankRange(s.total)
	return s
}

// Rows is how many rows the share has.
func (s Share) Rows() int64 { return s.rows }

// At returns the epoch position of share position t (0 ≤ t < Rows) and how many positions from
// t on follow it contiguously: share positions t+i are epoch positions g+i for i < run.
func (s Share) At(t int64) (g, run int64) {
	p := position(s.start, t, s.total)
	run = min(s.rows-t, s.total-p)
	for j := len(s.jobs) - 1; j >= 0; j-- {
		job := &s.jobs[j]
		k := sort.Search(len(job.ends), func(i int) bool { return job.ends[i] > p })
		left := job.rows[k] - job.offsets[k]
		q := position(job.starts[k], job.offsets[k]+p-(job.ends[k]-left), job.total)
		run = min(run, job.ends[k]-p, job.total-q)
		p = q
	}
	return p, run
}

// Stretches calls fn with the reader's rows of its share within [from, to), cut where a run of
// the epoch ends (Runs) or the share's positions stop being contiguous in the epoch: the share
// positions [t0, t1), which are rows [j, j+t1-t0) of partition part's sequence and lie in one
// window of it. In share order, until fn returns false.
func (o *EpochOrder) Stretches(r EpochReader, from, to int64, fn func(t0, t1 int64, part int, j int64) bool) {
	share := r.Share(o.total)
	r.Ranges(share.Rows(), from, to, func(t0, t1 int64) bool {
		for t := t0; t < t1; {
			g, run := share.At(t)
			end := min(t1, t+run)
			if !o.Runs(g, g+end-t, func(gg int64, p int, j, n int64) bool {
				u := t + gg - g
				return fn(u, u+n, p, j)
			}) {
				return false
			}
			t = end
		}
		return true
	})
}

// mulDiv returns a*b/c rounded down, without overflow for a, b, c ≥ 0 and a*b/c < 2^63.
func mulDiv(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	q, _ := bits.Div64(hi, lo, uint64(c))
	return int64(q)
}

// Keys that separate the random streams of one (seed, epoch).
const (
	keyWindows = iota + 1 // the windows' order (version 1 and MixWindows)
	keyChunks
	keyRows
)

// streamKey folds its parts into one 64-bit state for a splitMix stream.
func streamKey(parts ...uint64) uint64 {
	var k uint64 = 0x243f6a8885a308d3
	for _, p := range parts {
		k = splitMix(k ^ p)
	}
	return k
}

// goldenGamma is SplitMix64's increment (Steele, Lea and Flood).
const goldenGamma = 0x9e3779b97f4a7c15

// splitMix is one SplitMix64 step from state x.
func splitMix(x uint64) uint64 {
	x += goldenGamma
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// randomStream draws uniform integers below a bound from a SplitMix64 sequence.
type randomStream struct{ state uint64 }

func (r *randomStream) next() uint64 {
	v := splitMix(r.state)
	r.state += goldenGamma
	return v
}

// below returns a uniform integer in [0, n) (Lemire's multiply-and-reject).
func (r *randomStream) below(n uint64) uint64 {
	hi, lo := bits.Mul64(r.next(), n)
	if lo < n {
		threshold := -n % n
		for lo < threshold {
			hi, lo = bits.Mul64(r.next(), n)
		}
	}
	return hi
}

// permutation32 returns a uniformly random permutation of [0, n) (Fisher–Yates).
func permutation32(n int, key uint64) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(i)
	}
	r := randomStream{state: key}
	for i := n - 1; i > 0; i-- {
		j := int32(r.below(uint64(i + 1)))
		p[i], p[j] = p[j], p[i]
	}
	return p
}
