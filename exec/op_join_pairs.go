package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// pairSource enumerates the candidate (left row, right row) pairs of one left batch, at most
// limit at a time; done reports that no pair is left.
type pairSource interface {
	next(limit int) (leftRows, rightRows []int32, done bool)
	release()
}

// pairJoiner turns candidate pairs into join output, shared by the hash and nested-loop joins.
// For one left batch at a time it evaluates the condition (nil: every candidate matches) over
// the left ++ right rows of each chunk of candidates, emits the matching pairs (inner and left
// joins), and remembers per left row whether some pair matched or gave NULL, so that finish can
// emit the left-only rows (unmatched rows of a left join, semi and anti join output).
type pairJoiner struct {
	kind       JoinKind
	cond       Expr
	schema     *arrow.Schema // output schema
	pairSchema *arrow.Schema // schema of candidate rows: output schema for inner / left
	right      arrow.RecordBatch

	// rightHasNullKey and leftKeyNull carry the hash join's NULL-key facts for NOT IN, and
	// rightRows the number of right rows (all of them, when right is one grace partition).
	rightHasNullKey bool
	rightRows       int64
	leftKeyNull     []bool

	left    arrow.RecordBatch
	matched []bool
	unknown []bool
}

func newPairJoiner(kind JoinKind, cond Expr, left, right *arrow.Schema, build arrow.RecordBatch) *pairJoiner {
	out, pairs := joinSchemas(kind, left, right)
	return &pairJoiner{kind: kind, cond: cond, schema: out, pairSchema: pairs, right: build, rightRows: build.NumRows()}
}

// begin starts a left batch (retained by the caller for the duration).
func (j *pairJoiner) begin(left arrow.RecordBatch) {
	n := int(left.NumRows())
	j.left = left
	j.matched = make([]bool, n)
	j.unknown = make([]bool, n)
	j.leftKeyNull = make([]bool, n)
}

// existsOnly reports whether a single candidate per left row decides the output, so that a
// pair source need not enumerate duplicates.
func (j *pairJoiner) existsOnly() bool {
	return j.cond == nil && j.kind.leftOnly()
}

// add processes a chunk of candidate pairs; for inner and left joins it returns the matching
// joined rows (nil when none).
func (j *pairJoiner) add(ctx context.Context, tc *TaskContext, li, ri []int32) (arrow.RecordBatch, error) {
	if j.existsOnly() {
		for _, l := range li {
			j.matched[l] = true
		}
		return nil, nil
	}
	cand, err := j.gather(ctx, tc, li, ri)
	if err != nil {
		return nil, err
	}
	defer cand.Release()
	if j.cond == nil {
		for _, l := range li {
			j.matched[l] = true
		}
		cand.Retain()
		return cand, nil
	}
	res, err := j.cond.Eval(ctx, tc, cand)
	if err != nil {
		return nil, err
	}
	defer res.Release()
	mask, err := PredicateToFilter(ctx, tc, res)
	if err != nil {
		return nil, err
	}
	defer mask.Release()
	for k, l := range li {
		switch {
		case mask.IsValid(k) && mask.Value(k):
			j.matched[l] = true
		case res.IsNull(k):
			j.unknown[l] = true
		}
	}
	if j.kind.leftOnly() {
		return nil, nil
	}
	return filterByMask(ctx, tc, cand, mask)
}

// gather builds the left ++ right rows of the pairs.
func (j *pairJoiner) gather(ctx context.Context, tc *TaskContext, li, ri []int32) (arrow.RecordBatch, error) {
	lcols, err := takeColumns(ctx, tc, j.left.Columns(), li)
	if err != nil {
		return nil, err
	}
	defer releaseAll(lcols)
	rcols, err := takeColumns(ctx, tc, j.right.Columns(), ri)
	if err != nil {
		return nil, err
	}
	defer releaseAll(rcols)
	cols := append(append(make([]arrow.Array, 0, len(lcols)+len(rcols)), lcols...), rcols...)
	return array.NewRecordBatch(j.pairSchema, cols, int64(len(li))), nil
}

// finish returns the left-only output of the current left batch (nil when none) and ends it.
func (j *pairJoiner) finish(ctx context.Context, tc *TaskContext) (arrow.RecordBatch, error) {
	defer func() { j.left, j.matched, j.unknown, j.leftKeyNull = nil, nil, nil, nil }()
	n := int(j.left.NumRows())
	switch j.kind {
	case InnerJoin:
		return nil, nil
	case LeftJoin:
		return j.padUnmatched(ctx, tc)
	}
	keep := j.keepLeft()
	if keep == nil {
		return nil, nil
	}
	idx := rowsWhere(n, keep)
	switch len(idx) {
	case 0:
		return nil, nil
	case n:
		return array.NewRecordBatch(j.schema, j.left.Columns(), j.left.NumRows()), nil
	}
	return takeBatchRows(ctx, tc, j.left, idx)
}

// keepLeft returns, for a semi, anti or null-aware anti join whose candidate pairs have all been
// added, whether left row i is output; nil when no row is.
func (j *pairJoiner) keepLeft() func(int) bool {
	switch j.kind {
	case SemiJoin:
		return func(i int) bool { return j.matched[i] }
	case AntiJoin:
		return func(i int) bool { return !j.matched[i] }
	case NullAwareAntiJoin:
		if j.rightRows == 0 {
			return func(int) bool { return true }
		} else if j.rightHasNullKey {
			return nil
		}
		return func(i int) bool { return !j.matched[i] && !j.unknown[i] && !j.leftKeyNull[i] }
	}
	return nil
}

// padUnmatched returns the unmatched left rows with NULL right columns.
func (j *pairJoiner) padUnmatched(ctx context.Context, tc *TaskContext) (arrow.RecordBatch, error) {
	idx := rowsWhere(int(j.left.NumRows()), func(i int) bool { return !j.matched[i] })
	if len(idx) == 0 {
		return nil, nil
	}
	cols, err := takeColumns(ctx, tc, j.left.Columns(), idx)
	if err != nil {
		return nil, err
	}
	defer func() { releaseAll(cols) }()
	for _, f := range j.right.Schema().Fields() {
		cols = append(cols, array.MakeArrayOfNull(tc.Alloc, f.Type, len(idx)))
	}
	return array.NewRecordBatch(j.schema, cols, int64(len(idx))), nil
}

// joinStream is the per-partition stream of a join: it reads left batches, enumerates their
// candidate pairs in chunks of at most the batch size, and emits what the joiner produces.
type joinStream struct {
	ctx       context.Context
	tc        *TaskContext
	left      array.RecordReader
	joiner    *pairJoiner
	newSource func(left arrow.RecordBatch) (pairSource, error)

	cur     arrow.RecordBatch
	source  pairSource
	pending bool // the current batch still has pairs to enumerate

	// tail is left-only output not yet emitted, and tailAt its next row: it is emitted in
	// slices of at most RowsPerBatch rows.
	tail   arrow.RecordBatch
	tailAt int64
}

func (s *joinStream) pull() (arrow.RecordBatch, error) {
	for {
		if s.tail != nil {
			return s.nextTailSlice(), nil
		}
		if s.cur == nil {
			b, err := nextNonEmpty(s.left)
			if b == nil || err != nil {
				return nil, err
			}
			s.cur = b
			s.joiner.begin(b)
			src, err := s.newSource(b)
			if err != nil {
				s.endBatch()
				return nil, err
			}
			s.source, s.pending = src, true
		}
		if s.pending {
			li, ri, done := s.source.next(s.tc.RowsPerBatch())
			s.pending = !done
			if len(li) == 0 {
				continue
			}
			out, err := s.joiner.add(s.ctx, s.tc, li, ri)
			if err != nil || out != nil {
				return out, err
			}
			continue
		}
		out, err := s.joiner.finish(s.ctx, s.tc)
		s.endBatch()
		if err != nil {
			return nil, err
		}
		s.tail, s.tailAt = out, 0
	}
}

// nextTailSlice returns the next slice of the pending left-only output.
func (s *joinStream) nextTailSlice() arrow.RecordBatch {
	n := s.tail.NumRows()
	end := min(s.tailAt+int64(s.tc.RowsPerBatch()), n)
	if s.tailAt == 0 && end == n {
		out := s.tail
		s.tail = nil
		return out
	}
	out := s.tail.NewSlice(s.tailAt, end)
	s.tailAt = end
	if end == n {
		s.tail.Release()
		s.tail = nil
	}
	return out
}

func (s *joinStream) endBatch() {
	if s.source != nil {
		s.source.release()
		s.source = nil
	}
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
}

// close releases everything the stream holds; releaseBuild lets go of the right side.
func (s *joinStream) close(releaseBuild func()) func() {
	return func() {
		s.endBatch()
		if s.tail != nil {
			s.tail.Release()
			s.tail = nil
		}
		s.left.Release()
		releaseBuild()
	}
}
