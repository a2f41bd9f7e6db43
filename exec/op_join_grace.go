package exec

import (
	"context"
	"hash/maphash"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/mempool"
	"github.com/cachedb/cachedb/internal/stream"
)

// Grace hash join
//
// When the right side of a hash join does not fit in the query's memory, its rows are
// partitioned by a hash of their join keys (cast to the key types, row-key encoded, as the hash
// table compares them) into graceParts spill files. Each left partition's stream then
// partitions its own rows the same way and joins the pairs of partitions one at a time: the
// right partition is loaded and hashed, and the left partition streamed through it with the
// same pairJoiner as the in-memory join. Equal keys land in equal partitions, so every
// candidate pair of a left row lies in its partition and outer, semi and anti semantics carry
// over unchanged. NULL keys never match: right rows with one are dropped (noting that one was
// seen, which NOT IN needs), left rows with one go to partition 0, whose joiner treats them as
// the in-memory join does. NOT IN also sees the whole right side's row count.
//
// A right partition that still does not fit is split again, both sides, by a hash salted with
// the level (up to graceMaxLevel levels: keys too duplicated to ever split apart fail the query
// with the pool's errs.ResourceExhausted error).

// graceParts is how many partitions a grace hash join splits both sides into.
const graceParts = 16

// graceMaxLevel is how many times a partition pair may be split again.
const graceMaxLevel = 3

// graceSeed hashes join keys to partitions; both sides of one join use it, within one process.
var graceSeed = maphash.MakeSeed()

// graceBuild is a right side partitioned into spill files.
type graceBuild struct {
	files      *spillFiles
	parts      [graceParts]*spillRun // nil: no rows
	rows       int64                 // right rows, NULL keys included
	hasNullKey bool
	// turn, when not nil, lets one of the left partitions sharing this build hold a loaded
	// partition pair at a time (see HashJoin.nodeShared): the build did not fit, and each
	// partition loading its own pairs at once would need that many times the memory, and as
	// many spilling consumers would each get that much less of it (mempool's fair share).
	// turnRes reserves the pair of the turn's holder; the build frees it.
	turn    chan struct{}
	turnRes *mempool.Reservation
}

// takeTurns makes the partitions sharing g take turns loading its pairs, reserved from tc.
func (g *graceBuild) takeTurns(tc *TaskContext) {
	g.turn = make(chan struct{}, 1)
	g.turnRes = tc.Reserve(hashJoinConsumer)
}

// graceWriter partitions the rows of one side of a join into spill files.
type graceWriter struct {
	tc      *TaskContext
	files   *spillFiles
	schema  *arrow.Schema
	keys    []Expr
	types   []arrow.DataType
	build   bool // right side: rows with a NULL key are dropped; left side: they go to partition 0
	level   int  // salts the hash, so that a partition split again spreads over new partitions
	writers [graceParts]*spillWriter
	g       graceBuild
}

func (j *HashJoin) newGraceWriter(tc *TaskContext, files *spillFiles, schema *arrow.Schema, keys []Expr, build bool) *graceWriter {
	return &graceWriter{tc: tc, files: files, schema: schema, keys: keys, types: j.keyTypes, build: build, g: graceBuild{files: files}}
}

// add writes the rows of b to their partitions (the caller keeps b).
func (w *graceWriter) add(ctx context.Context, b arrow.RecordBatch) error {
	keys, err := evalKeys(ctx, w.tc, b, w.keys, w.types)
	if err != nil {
		return err
	}
	defer releaseAll(keys)
	enc, err := NewRowKeyEncoder(keys)
	if err != nil {
		return err
	}
	w.g.rows += b.NumRows()
	var idx [graceParts][]int32
	var buf []byte
	for row := range int(b.NumRows()) {
		if enc.HasNull(row) {
			if w.build {
				w.g.hasNullKey = true
			} else {
				idx[0] = append(idx[0], int32(row))
			}
			continue
		}
		buf = append(enc.Append(buf[:0], row), byte(w.level))
		p := maphash.Bytes(graceSeed, buf) % graceParts
		idx[p] = append(idx[p], int32(row))
	}
	for p, rows := range idx {
		if len(rows) == 0 {
			continue
		}
		if w.writers[p] == nil {
			if w.writers[p], err = w.files.create(w.schema, w.tc.Alloc); err != nil {
				return err
			}
		}
		taken, err := takeBatchRows(ctx, w.tc, b, rows)
		if err != nil {
			return err
		}
		part := array.NewRecordBatch(w.schema, taken.Columns(), taken.NumRows())
		taken.Release()
		err = w.writers[p].write(part)
		part.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// finish closes the partition files.
func (w *graceWriter) finish() (*graceBuild, error) {
	for p, wr := range w.writers {
		if wr == nil {
			continue
		}
		run, err := wr.finish()
		w.writers[p] = nil
		if err != nil {
			w.abort()
			return nil, err
		}
		w.g.parts[p] = run
	}
	g := w.g
	return &g, nil
}

// abort closes and removes every partition file.
func (w *graceWriter) abort() {
	for p, wr := range w.writers {
		if wr != nil {
			wr.abort()
			w.writers[p] = nil
		}
	}
	w.files.removeAll()
}

// graceJoin returns the stream of one left partition joined with a partitioned right side;
// releasing it releases left and calls releaseBuild.
func (j *HashJoin) graceJoin(ctx context.Context, tc *TaskContext, left array.RecordReader, build *graceBuild, releaseBuild func()) array.RecordReader {
	s := &graceStream{ctx: ctx, tc: tc, j: j, left: left, build: build, releaseBuild: releaseBuild,
		files: newSpillFiles(ctx, tc, "join"), res: build.turnRes}
	if s.res == nil {
		s.res = tc.Reserve(hashJoinConsumer)
	}
	return stream.Pull(ctx, j.schema, s.next, s.release)
}

type graceStream struct {
	ctx          context.Context
	tc           *TaskContext
	j            *HashJoin
	left         array.RecordReader
	build        *graceBuild
	releaseBuild func()
	files        *spillFiles          // the left partitions and the pairs split again
	res          *mempool.Reservation // the build's turnRes, used only while holding the turn
	started      bool
	queue        []gracePair // partition pairs still to join, in order
	cur          *joinStream
	curClose     func()
	turnHeld     bool // this stream holds build.turn
}

// gracePair is a right and a left partition of equal key hashes (right nil: no rows).
type gracePair struct {
	build, probe *spillRun
	level        int
}

func (s *graceStream) next() (arrow.RecordBatch, error) {
	if !s.started {
		s.started = true
		if err := s.partitionLeft(); err != nil {
			return nil, err
		}
	}
	for {
		if s.cur != nil {
			b, err := s.cur.pull()
			if err != nil || b != nil {
				return b, err
			}
			s.closeCur()
		}
		if len(s.queue) == 0 {
			return nil, nil
		}
		pair := s.queue[0]
		s.queue = s.queue[1:]
		if err := s.takeTurn(); err != nil {
			return nil, err
		}
		err := s.openPair(pair)
		if err != nil {
			s.giveTurn()
		}
		if isExhausted(err) && pair.level < graceMaxLevel {
			err = s.split(pair)
		}
		if err != nil {
			return nil, err
		}
	}
}

// partitionLeft writes the whole left partition into partition files, releases it, and queues
// the pairs that have left rows (every join kind's output is driven by left rows).
func (s *graceStream) partitionLeft() error {
	w := s.j.newGraceWriter(s.tc, s.files, s.j.left.Schema(), s.j.leftKeys, false)
	for {
		b, err := nextNonEmpty(s.left)
		if err == nil && b != nil {
			err = w.add(s.ctx, b)
			b.Release()
		}
		if err != nil {
			w.abort()
			return err
		}
		if b == nil {
			break
		}
	}
	s.left.Release()
	s.left = nil
	probe, err := w.finish()
	if err != nil {
		return err
	}
	for p, run := range probe.parts {
		if run != nil {
			s.queue = append(s.queue, gracePair{build: s.build.parts[p], probe: run})
		}
	}
	return nil
}

// split partitions both runs of pair again, one level down, and queues the new pairs first.
func (s *graceStream) split(pair gracePair) error {
	parts := func(run *spillRun, schema *arrow.Schema, keys []Expr, build bool) (*graceBuild, error) {
		w := s.j.newGraceWriter(s.tc, s.files, schema, keys, build)
		w.level = pair.level + 1
		if run == nil {
			return w.finish()
		}
		rdr, err := run.open(s.tc.Alloc)
		if err != nil {
			return nil, err
		}
		defer rdr.close()
		for {
			b, err := rdr.next()
			if err == nil && b != nil {
				err = w.add(s.ctx, b)
				b.Release()
			}
			if err != nil {
				w.abort()
				return nil, err
			}
			if b == nil {
				return w.finish()
			}
		}
	}
	build, err := parts(pair.build, s.j.right.Schema(), s.j.rightKeys, true)
	if err != nil {
		return err
	}
	probe, err := parts(pair.probe, s.j.left.Schema(), s.j.leftKeys, false)
	if err != nil {
		return err
	}
	var pairs []gracePair
	for p, run := range probe.parts {
		if run != nil {
			pairs = append(pairs, gracePair{build: build.parts[p], probe: run, level: pair.level + 1})
		}
	}
	s.queue = append(pairs, s.queue...)
	return nil
}

// openPair loads and hashes the right partition of pair and starts streaming its left
// partition through it.
func (s *graceStream) openPair(pair gracePair) error {
	var batches []arrow.RecordBatch
	defer func() { releaseBatches(batches) }()
	if pair.build != nil {
		rdr, err := pair.build.open(s.tc.Alloc)
		if err != nil {
			return err
		}
		defer rdr.close()
		for {
			b, err := rdr.next()
			if err != nil {
				return err
			}
			if b == nil {
				break
			}
			batches = append(batches, b)
			if err := s.res.TryGrow(hashBuildBytes(b)); err != nil {
				s.res.Shrink(s.res.Size())
				return err
			}
		}
	}
	build, err := s.j.hashBatches(s.ctx, s.tc, batches, s.res)
	if err != nil {
		s.res.Shrink(s.res.Size())
		return err
	}
	left, err := pair.probe.open(s.tc.Alloc)
	if err != nil {
		build.batch.Release()
		s.res.Shrink(s.res.Size())
		return err
	}
	leftRdr := stream.Pull(s.ctx, s.j.left.Schema(), left.next, left.close)
	js := s.j.probe(s.ctx, s.tc, leftRdr, build.batch, build.table)
	js.joiner.rightHasNullKey = s.build.hasNullKey
	js.joiner.rightRows = s.build.rows
	s.cur = js
	s.curClose = js.close(func() {
		build.batch.Release()
		s.res.Shrink(s.res.Size())
	})
	return nil
}

func (s *graceStream) closeCur() {
	if s.cur != nil {
		s.curClose()
		s.cur, s.curClose = nil, nil
	}
	s.giveTurn()
}

// takeTurn waits until this stream may load a partition pair of its build (graceBuild.turn).
func (s *graceStream) takeTurn() error {
	if s.build.turn == nil || s.turnHeld {
		return nil
	}
	select {
	case s.build.turn <- struct{}{}:
		s.turnHeld = true
		return nil
	case <-s.ctx.Done():
		return stream.Stopped(s.ctx)
	}
}

// giveTurn lets another stream sharing the build load its pair.
func (s *graceStream) giveTurn() {
	if s.turnHeld {
		<-s.build.turn
		s.turnHeld = false
	}
}

func (s *graceStream) release() {
	s.closeCur()
	if s.left != nil {
		s.left.Release()
		s.left = nil
	}
	s.files.removeAll()
	if s.res != s.build.turnRes {
		s.res.Free()
	}
	s.releaseBuild()
}
