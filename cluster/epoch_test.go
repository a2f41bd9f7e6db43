package cluster

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cachedb/cachedb/internal/errs"
)

// rowID names one dataset row: (partition, row within the partition).
type rowID struct {
	part int
	row  int64
}

// epochRows resolves every epoch position to the dataset row it reads, through Runs and Gather
// exactly as a data node does.
func epochRows(t *testing.T, o *EpochOrder) []rowID {
	t.Helper()
	out := make([]rowID, 0, o.Rows())
	seq := sequenceRows(t, o)
	o.Runs(0, o.Rows(), func(g int64, p int, j, n int64) bool {
		if g != int64(len(out)) || j+n > int64(len(seq[p])) {
			t.Fatalf("run at %d of partition %d rows [%d, %d) after %d positions", g, p, j, j+n, len(out))
		}
		if w0, _ := o.Window(j); w0 != int(((j + n - 1) / int64(o.WindowRows))) {
			t.Fatalf("run at %d of partition %d rows [%d, %d) crosses a window", g, p, j, j+n)
		}
		for _, r := range seq[p][j : j+n] {
			out = append(out, rowID{p, r})
		}
		return true
	})
	if int64(len(out)) != o.Rows() {
		t.Fatalf("runs cover %d positions of %d", len(out), o.Rows())
	}
	return out
}

// sequenceRows returns each partition's sequence (step 1 of the order): the partition rows in
// sequence order, window by window through Gather.
func sequenceRows(t *testing.T, o *EpochOrder) [][]int64 {
	t.Helper()
	seq := make([][]int64, len(o.PartRows))
	for p := range o.PartRows {
		for w := range o.PartitionWindows(p) {
			chunks, perm := o.Gather(p, w)
			var concat []int64
			for _, c := range chunks {
				for r := c.From; r < c.To; r++ {
					concat = append(concat, r)
				}
			}
			if want := min(int64(o.WindowRows), o.PartRows[p]-int64(w*o.WindowRows)); int64(len(concat)) != want {
				t.Fatalf("partition %d window %d gathers %d rows, want %d", p, w, len(concat), want)
			}
			for i := range concat {
				j := i
				if perm != nil {
					j = int(perm[i])
				}
				seq[p] = append(seq[p], concat[j])
			}
		}
	}
	return seq
}

// stretchRows is what o.Stretches gives reader r over its whole share: the rows, in order; each
// stretch must lie in one window.
func stretchRows(t *testing.T, o *EpochOrder, r EpochReader, seq [][]int64, rows int64) []rowID {
	t.Helper()
	var out []rowID
	o.Stretches(r, 0, rows, func(t0, t1 int64, p int, j int64) bool {
		if w0, _ := o.Window(j); w0 != int((j+t1-t0-1)/int64(o.WindowRows)) {
			t.Fatalf("stretch [%d, %d) of partition %d from %d crosses a window", t0, t1, p, j)
		}
		for _, r := range seq[p][j : j+t1-t0] {
			out = append(out, rowID{p, r})
		}
		return true
	})
	return out
}

// rankSequence is what a DataLoader over the rank's workers yields: one batch from each worker
// in turn (workers that have run out are skipped), as epoch positions.
func rankSequence(r EpochReader, total int64) []int64 {
	share := r.Share(total)
	rows := share.Rows()
	perWorker := make([][][]int64, r.NumWorkers)
	for w := range perWorker {
		wr := r
		wr.Worker = w
		wr.Ranges(rows, 0, rows, func(t0, t1 int64) bool {
			var batch []int64
			for t := t0; t < t1; t++ {
				g, _ := share.At(t)
				batch = append(batch, g)
			}
			perWorker[w] = append(perWorker[w], batch)
			return true
		})
	}
	var seq []int64
	for i := 0; ; i++ {
		any := false
		for w := range perWorker {
			if i < len(perWorker[w]) {
				seq = append(seq, perWorker[w][i]...)
				any = true
			}
		}
		if !any {
			return seq
		}
	}
}

// randomCase draws partition row counts that do not divide evenly, with empty partitions now and
// then, and small shuffle sizes so that windows and chunks have ragged ends.
func randomCase(rng *rand.Rand) (parts []int64, chunk, window int) {
	parts = make([]int64, 1+rng.IntN(6))
	for i := range parts {
		if rng.IntN(5) > 0 {
			parts[i] = int64(rng.IntN(400))
		}
	}
	chunk = 1 + rng.IntN(16)
	window = chunk * (1 + rng.IntN(8))
	return parts, chunk, window + rng.IntN(chunk)
}

// The six guarantees of training reads, as properties of the epoch order and the readers'
// shares, over many random combinations of dataset shape, seed, epoch, world size, workers,
// batch size and share mode.
func TestEpochReadsProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	defer func(n int64) { blockRows = n }(blockRows)
	for c := range 300 {
		parts, chunk, window := randomCase(rng)
		// Blocks of a few to a hundred rows, so that the small epochs have from one to hundreds.
		blockRows = int64(1 + rng.IntN(100))
		seed, epoch := rng.Uint64(), int64(rng.IntN(5))
		world, workers, batch := 1+rng.IntN(5), 1+rng.IntN(4), 1+rng.IntN(9)
		name := fmt.Sprintf("case %d parts=%v chunk=%d window=%d block=%d seed=%d epoch=%d world=%d workers=%d batch=%d", c, parts, chunk, window, blockRows, seed, epoch, world, workers, batch)

		o, err := NewEpochOrder(parts, seed, epoch, true, MixBlocks, chunk, window)
		if err != nil {
			t.Fatal(name, err)
		}
		rows := epochRows(t, o)
		seqRows := sequenceRows(t, o)
		var total int64
		for _, n := range parts {
			total += n
		}
		// The epoch order is a permutation of the dataset's rows.
		seen := map[rowID]bool{}
		for _, id := range rows {
			if id.row < 0 || id.row >= parts[id.part] || seen[id] {
				t.Fatalf("%s: row %v out of range or twice", name, id)
			}
			seen[id] = true
		}
		if int64(len(seen)) != total {
			t.Fatalf("%s: epoch has %d distinct rows, dataset %d", name, len(seen), total)
		}

		for _, mode := range []ShareMode{SharesExact, SharesDropLast, SharesPad} {
			count := map[int64]int{}
			var shares []int64
			for rank := range world {
				// Workers take turns of one to three batches, depending on the case.
				r := EpochReader{WorldSize: world, Rank: rank, NumWorkers: workers, BatchSize: batch, WorkerBatches: 1 + int(total%3), Shares: mode}
				if err := r.Validate(); err != nil {
					t.Fatal(name, err)
				}
				seq := rankSequence(r, total)
				start, n := r.RankRange(total)
				// Stretches cut worker 0's rows at runs' and windows' ends without changing them.
				var viaRanges []rowID
				r.Ranges(n, 0, n, func(t0, t1 int64) bool {
					for t := t0; t < t1; t++ {
						viaRanges = append(viaRanges, rows[r.Position(start, t, total)])
					}
					return true
				})
				if viaStretches := stretchRows(t, o, r, seqRows, n); !slices.Equal(viaStretches, viaRanges) {
					t.Fatalf("%s %v rank %d: stretches give %v, ranges %v", name, mode, rank, viaStretches, viaRanges)
				}
				// Workers in turn yield the rank's share in order.
				for i, g := range seq {
					if want := r.Position(start, int64(i), total); g != want {
						t.Fatalf("%s %v rank %d: position %d is %d, want %d", name, mode, rank, i, g, want)
					}
				}
				if int64(len(seq)) != n {
					t.Fatalf("%s %v rank %d: %d rows, share %d", name, mode, rank, len(seq), n)
				}
				shares = append(shares, n)
				for _, g := range seq {
					count[g]++
				}
				// Resume: offset k continues with the share's row k+1, for every k.
				k := int64(rng.IntN(int(n) + 1))
				r.Offset = k
				if rest := rankSequence(r, total); !slices.Equal(rest, seq[k:]) {
					t.Fatalf("%s %v rank %d: resume at %d gives %v, want %v", name, mode, rank, k, rest, seq[k:])
				}
			}
			lo, hi := slices.Min(shares), slices.Max(shares)
			switch mode {
			case SharesExact:
				// Exactly once, shares within one row of each other.
				if hi-lo > 1 || int64(len(count)) != total {
					t.Fatalf("%s exact: shares %v, %d distinct of %d", name, shares, len(count), total)
				}
				for g, k := range count {
					if k != 1 {
						t.Fatalf("%s exact: position %d read %d times", name, g, k)
					}
				}
			case SharesDropLast:
				// Equal whole batches; at most once; what is left out is less than a batch per rank.
				if hi != lo || lo%int64(batch) != 0 || total-int64(len(count)) >= int64(world)*int64(batch)+int64(world) {
					t.Fatalf("%s drop_last: shares %v, %d of %d read", name, shares, len(count), total)
				}
				for g, k := range count {
					if k != 1 {
						t.Fatalf("%s drop_last: position %d read %d times", name, g, k)
					}
				}
			case SharesPad:
				// Equal shares; every row at least once.
				if hi != lo || (total > 0 && int64(len(count)) != total) {
					t.Fatalf("%s pad: shares %v, %d of %d read", name, shares, len(count), total)
				}
			}
		}
	}
}

// The order is a pure function of its inputs: rebuilt from the same numbers it is the same, and
// it does not depend on the reader (so a different world size reads the same order).
func TestEpochOrderIsDeterministic(t *testing.T) {
	parts := []int64{1000, 0, 333, 2048, 7}
	a, _ := NewEpochOrder(parts, 42, 3, true, MixBlocks, 16, 128)
	b, _ := NewEpochOrder(slices.Clone(parts), 42, 3, true, MixBlocks, 16, 128)
	if !slices.Equal(epochRows(t, a), epochRows(t, b)) {
		t.Fatal("the same inputs gave two orders")
	}
	// Pinned: a change to the order would change every job's data order, so it must be deliberate.
	small, _ := NewEpochOrder([]int64{5, 3}, 7, 1, true, MixBlocks, 2, 4)
	got := fmt.Sprint(epochRows(t, small))
	const want = "[{0 0} {0 3} {0 2} {0 1} {0 4} {1 2} {1 0} {1 1}]"
	if got != want {
		t.Fatalf("order of a small dataset changed: %s, was %s", got, want)
	}
	// The same in blocks of 3 rows: each block takes a run of each partition's sequence.
	defer func(n int64) { blockRows = n }(blockRows)
	blockRows = 3
	small, _ = NewEpochOrder([]int64{5, 3}, 7, 1, true, MixBlocks, 2, 4)
	got = fmt.Sprint(epochRows(t, small))
	const inBlocks = "[{0 0} {1 2} {0 3} {0 2} {1 0} {0 1} {0 4} {1 1}]"
	if got != inBlocks {
		t.Fatalf("order of a small dataset in blocks of 3 changed: %s, was %s", got, inBlocks)
	}
}

// Different epochs give different orders across partitions, not a rotation of one order, and
// a window's rows come from several places of its partition.
func TestEpochsDifferAcrossPartitions(t *testing.T) {
	parts := []int64{5000, 5000, 5000, 5000}
	o0, _ := NewEpochOrder(parts, 9, 0, true, MixBlocks, 64, 1024)
	o1, _ := NewEpochOrder(parts, 9, 1, true, MixBlocks, 64, 1024)
	e0, e1 := epochRows(t, o0), epochRows(t, o1)
	if slices.Equal(e0, e1) {
		t.Fatal("epochs 0 and 1 have the same order")
	}
	// Not a rotation: the successor of each row differs in most cases.
	next := map[rowID]rowID{}
	for i := 0; i+1 < len(e0); i++ {
		next[e0[i]] = e0[i+1]
	}
	same := 0
	for i := 0; i+1 < len(e1); i++ {
		if next[e1[i]] == e1[i+1] {
			same++
		}
	}
	if same > len(e1)/100 {
		t.Fatalf("%d of %d successors kept between epochs", same, len(e1))
	}
	// The first half of the epoch (10 windows) draws from most partitions.
	from := map[int]bool{}
	for _, id := range e1[:len(e1)/2] {
		from[id.part] = true
	}
	if len(from) < 3 {
		t.Fatalf("the first half of epoch 1 reads partitions %v only", from)
	}
	// Rows are mixed inside a window: a batch of 64 spans many chunks of 64.
	chunksInBatch := map[int64]bool{}
	for _, id := range e1[:64] {
		chunksInBatch[id.row/64] = true
	}
	if len(chunksInBatch) < 10 {
		t.Fatalf("a batch of 64 reads %d chunks", len(chunksInBatch))
	}
	// Without shuffling, the dataset's own order.
	plain, _ := NewEpochOrder([]int64{3, 2}, 9, 4, false, MixBlocks, 2, 2)
	if got := fmt.Sprint(epochRows(t, plain)); got != "[{0 0} {0 1} {0 2} {1 0} {1 1}]" {
		t.Fatalf("unshuffled order %s", got)
	}
}

func TestEpochInputsAreValidated(t *testing.T) {
	if _, err := NewEpochOrder([]int64{1}, 0, 0, true, MixBlocks, 0, 10); err == nil {
		t.Error("chunk_rows 0 accepted")
	}
	if _, err := NewEpochOrder([]int64{1}, 0, 0, true, MixBlocks, 20, 10); err == nil {
		t.Error("chunk larger than window accepted")
	}
	if _, err := NewEpochOrder([]int64{1}, 0, -1, true, MixBlocks, 1, 10); err == nil {
		t.Error("negative epoch accepted")
	}
	bad := []EpochReader{
		{WorldSize: 0, NumWorkers: 1},
		{WorldSize: 2, Rank: 2, NumWorkers: 1},
		{WorldSize: 1, NumWorkers: 2, Worker: 0},
		{WorldSize: 1, NumWorkers: 2, Worker: 2, BatchSize: 4},
		{WorldSize: 1, NumWorkers: 1, Offset: -1},
	}
	for _, r := range bad {
		if r.Validate() == nil {
			t.Errorf("%+v accepted", r)
		}
	}
	if _, err := ParseShareMode("some"); err == nil {
		t.Error("unknown share mode accepted")
	}
}

func TestEpochOrderRefusesMoreChunksThanItCanLayOut(t *testing.T) {
	for _, parts := range [][]int64{{MaxEpochChunks + 1}, {1 << 62}, {math.MaxInt64}, {MaxEpochChunks, math.MaxInt64}, {MaxEpochChunks / 2, MaxEpochChunks/2 + 1}} {
		if _, err := NewEpochOrder(parts, 1, 0, true, MixBlocks, 1, 1); errs.CategoryOf(err) != errs.InvalidInput {
			t.Errorf("partition rows %v in chunks of 1: %v, want invalid input", parts, err)
		}
	}
	if _, err := NewEpochOrder([]int64{math.MaxInt64}, 1, 0, false, MixBlocks, MaxWindowRows, MaxWindowRows); errs.CategoryOf(err) != errs.InvalidInput {
		t.Errorf("%d rows in chunks of %d: %v, want invalid input", int64(math.MaxInt64), MaxWindowRows, err)
	}
}

// leftBy lists, explicitly, what a job of len(offsets) ranks (offsets: rows each consumed of its
// share) left of the sequence seq it shared: each rank's rows not consumed, rank by rank.
func leftBy(r EpochReader, seq []int64, offsets []int64) []int64 {
	var left []int64
	r.WorldSize, r.Resumed = len(offsets), nil
	for k, o := range offsets {
		r.Rank = k
		start, rows := r.RankRange(int64(len(seq)))
		for t := o; t < rows; t++ {
			left = append(left, seq[r.Position(start, t, int64(len(seq)))])
		}
	}
	return left
}

// A job resumed on another world size (after one or two earlier jobs, each stopped part way
// with its ranks at different offsets, some past the end of their shares) shares exactly the
// rows the earlier jobs left: with SharesExact each once, in shares within one row of each
// other, in the order the earlier ranks would have read them; with drop_last in equal whole
// batches, leaving out less than a batch per rank; with pad in equal shares covering them all.
// Workers, offsets and Stretches work on the new shares as on a whole epoch's.
func TestEpochResumeOnAnotherWorldSize(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for c := range 300 {
		parts, chunk, window := randomCase(rng)
		o, err := NewEpochOrder(parts, rng.Uint64(), int64(rng.IntN(3)), true, MixBlocks, chunk, window)
		if err != nil {
			t.Fatal(err)
		}
		mode := []ShareMode{SharesExact, SharesDropLast, SharesPad}[rng.IntN(3)]
		batch := 1 + rng.IntN(9)
		base := EpochReader{NumWorkers: 1, BatchSize: batch, Shares: mode}
		// The explicit sequences: the epoch, then what each earlier job left of the previous one.
		seq := make([]int64, o.Rows())
		for i := range seq {
			seq[i] = int64(i)
		}
		var resumed []EpochProgress
		for range 1 + rng.IntN(2) {
			world := 1 + rng.IntN(4)
			offsets := make([]int64, world)
			r := base
			r.WorldSize = world
			for k := range offsets {
				r.Rank = k
				_, rows := r.RankRange(int64(len(seq)))
				offsets[k] = int64(rng.IntN(int(rows) + 3))
			}
			resumed = append(resumed, EpochProgress{Offsets: offsets})
			seq = leftBy(base, seq, offsets)
		}
		world, workers := 1+rng.IntN(4), 1+rng.IntN(3)
		name := fmt.Sprintf("case %d parts=%v chunk=%d window=%d mode=%v batch=%d resumed=%v world=%d workers=%d", c, parts, chunk, window, mode, batch, resumed, world, workers)
		var all []int64
		var shares []int64
		for rank := range world {
			r := EpochReader{WorldSize: world, Rank: rank, NumWorkers: workers, BatchSize: batch, Shares: mode, Resumed: resumed}
			if err := r.Validate(); err != nil {
				t.Fatal(name, err)
			}
			got := rankSequence(r, o.Rows())
			// The rank's share of the explicit sequence, in order.
			start, rows := r.RankRange(int64(len(seq)))
			var want []int64
			for t := range rows {
				want = append(want, seq[r.Position(start, t, int64(len(seq)))])
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s rank %d: read %v, want %v", name, rank, got, want)
			}
			// Stretches stay inside windows and give the same rows.
			var worker0 []rowID
			w0 := r
			w0.Worker = 0
			share := r.Share(o.Rows())
			epoch := epochRows(t, o)
			w0.Ranges(share.Rows(), 0, share.Rows(), func(t0, t1 int64) bool {
				for t := t0; t < t1; t++ {
					g, _ := share.At(t)
					worker0 = append(worker0, epoch[g])
				}
				return true
			})
			if viaStretches := stretchRows(t, o, w0, sequenceRows(t, o), share.Rows()); !slices.Equal(viaStretches, worker0) {
				t.Fatalf("%s rank %d: stretches give %v, positions %v", name, rank, viaStretches, worker0)
			}
			// The new job resumes within its own shares as any job does.
			if k := int64(rng.IntN(int(rows) + 1)); true {
				r.Offset = k
				if rest := rankSequence(r, o.Rows()); !slices.Equal(rest, got[k:]) {
					t.Fatalf("%s rank %d: offset %d gives %v, want %v", name, rank, k, rest, got[k:])
				}
			}
			all = append(all, got...)
			shares = append(shares, rows)
		}
		lo, hi := slices.Min(shares), slices.Max(shares)
		switch mode {
		case SharesExact:
			if !slices.Equal(all, seq) || hi-lo > 1 {
				t.Fatalf("%s: the ranks read %v in shares %v, want %v once", name, all, shares, seq)
			}
		case SharesDropLast:
			if hi != lo || lo%int64(batch) != 0 || !slices.Equal(all, seq[:len(all)]) || len(seq)-len(all) >= world*(batch+1) {
				t.Fatalf("%s: drop_last read %d of %d rows in shares %v", name, len(all), len(seq), shares)
			}
		case SharesPad:
			if hi != lo || len(all) < len(seq) || !slices.Equal(all[:len(seq)], seq) {
				t.Fatalf("%s: pad read %v in shares %v, want %v", name, all, shares, seq)
			}
		}
	}
}

// drop_last that would give every rank nothing of an epoch with rows is refused; a resumed
// epoch whose remainder is too small for a batch each is not.
func TestDropLastThatEmptiesAnEpochIsRefused(t *testing.T) {
	r := EpochReader{WorldSize: 4, NumWorkers: 1, BatchSize: 100, Shares: SharesDropLast}
	if err := r.CheckShares(399); errs.CategoryOf(err) != errs.InvalidInput {
		t.Errorf("399 rows, 4 ranks, batches of 100: %v", err)
	}
	for _, ok := range []EpochReader{
		{WorldSize: 4, NumWorkers: 1, BatchSize: 100, Shares: SharesDropLast},
		{WorldSize: 4, NumWorkers: 1, BatchSize: 100, Shares: SharesExact},
		{WorldSize: 4, NumWorkers: 1, BatchSize: 100, Shares: SharesDropLast, Resumed: []EpochProgress{{Offsets: []int64{50}}}},
	} {
		total := int64(399)
		if ok.Shares == SharesDropLast && ok.Resumed == nil {
			total = 400
		}
		if err := ok.CheckShares(total); err != nil {
			t.Errorf("%+v over %d rows: %v", ok, total, err)
		}
	}
	if err := (EpochReader{WorldSize: 3, NumWorkers: 1, Shares: SharesDropLast}).CheckShares(2); err == nil {
		t.Error("drop_last of 2 rows among 3 ranks without batches accepted")
	}
}

func TestWorkersTakeTurnsOfSeveralBatches(t *testing.T) {
	r := EpochReader{WorldSize: 1, NumWorkers: 2, Worker: 1, BatchSize: 2, WorkerBatches: 3, Offset: 1}
	var got [][2]int64
	r.Ranges(20, 0, 20, func(t0, t1 int64) bool {
		got = append(got, [2]int64{t0, t1})
		return true
	})
	// Turns of 3 batches of 2 rows from offset 1: worker 0 has [1, 7) and [13, 19).
	if want := [][2]int64{{7, 13}, {19, 20}}; !slices.Equal(got, want) {
		t.Errorf("worker 1's turns: %v, want %v", got, want)
	}
	if err := (EpochReader{WorldSize: 1, NumWorkers: 1, WorkerBatches: MaxWorkerBatches + 1}).Validate(); err == nil {
		t.Error("worker_batches past its bound was accepted")
	}
}

// An order mixed by windows lays whole windows of single partitions end to end, every row once,
// in an order that changes with the epoch and differs from the order mixed by blocks; a
// stretch shorter than a window draws from one partition.
func TestEpochOrderMixedByWindows(t *testing.T) {
	partRows := []int64{1000, 700, 1, 0, 333}
	o, err := NewEpochOrder(partRows, 9, 2, true, MixWindows, 16, 128)
	if err != nil {
		t.Fatal(err)
	}
	rows := epochRows(t, o)
	seen := map[rowID]bool{}
	for _, r := range rows {
		if seen[r] {
			t.Fatalf("row %v twice", r)
		}
		seen[r] = true
	}
	var windows int
	o.Runs(0, o.Rows(), func(g int64, p int, j, n int64) bool {
		w, i := o.Window(j)
		if i != 0 || n != o.windowRows(p, w) {
			t.Fatalf("run at %d: rows [%d, %d) of partition %d, not a whole window", g, j, j+n, p)
		}
		windows++
		return true
	})
	want := 0
	for p := range partRows {
		want += o.PartitionWindows(p)
	}
	if windows != want {
		t.Fatalf("%d windows laid out, want %d", windows, want)
	}
	// Runs asked for part of a window give that part.
	var got []rowID
	seq := sequenceRows(t, o)
	o.Runs(200, 300, func(g int64, p int, j, n int64) bool {
		for _, r := range seq[p][j : j+n] {
			got = append(got, rowID{p, r})
		}
		return true
	})
	if !slices.Equal(got, rows[200:300]) {
		t.Fatal("runs of positions [200, 300) differ from the whole epoch's")
	}
	next, _ := NewEpochOrder(partRows, 9, 3, true, MixWindows, 16, 128)
	blocks, _ := NewEpochOrder(partRows, 9, 2, true, MixBlocks, 16, 128)
	if slices.Equal(epochRows(t, next), rows) || slices.Equal(epochRows(t, blocks), rows) {
		t.Fatal("the next epoch, or mixing by blocks, gives the same order")
	}
	if _, err := NewEpochOrder(partRows, 9, 2, true, EpochMixing(7), 16, 128); errs.CategoryOf(err) != errs.InvalidInput {
		t.Fatalf("an unknown mixing: %v", err)
	}
	if m, err := ParseEpochMixing("windows"); err != nil || m != MixWindows || m.String() != "windows" || MixBlocks.String() != "blocks" {
		t.Fatalf("ParseEpochMixing(windows) = %v, %v", m, err)
	}
	if _, err := ParseEpochMixing("rows"); err == nil {
		t.Fatal("ParseEpochMixing(rows) succeeded")
	}
}
