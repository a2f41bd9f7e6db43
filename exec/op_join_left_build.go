package exec

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/mempool"
	"github.com/cachedb/cachedb/internal/stream"
)

// LeftBuildHashJoin is a semi, anti or null-aware anti equi-join that hashes its left (preserved)
// side instead of its right one: the planner picks it when the left side is estimated smaller,
// e.g. a few thousand filtered rows tested against a large subquery.
//
// The first Execute of an execution materializes every left partition and hashes them on the left
// keys; then the whole right side streams through the table once, marking the left rows that
// have a match (with a residual condition, the pairs are evaluated as HashJoin does: a pair
// whose condition is NULL marks its left row unknown, which NOT IN drops). Partition p then emits
// the rows of left partition p that the join kind keeps, in their order, so the output (rows,
// partitions and order within a partition) is the one HashJoin gives. Keys compare as HashJoin's
// (cast to common types; a NULL key never matches); NOT IN keeps HashJoin's rules: every left row
// when the right side is empty, none when a right key is NULL, else the unmatched rows whose key
// is not NULL.
//
// Memory: the left rows and their table are reserved from the query's memory before they are
// held. When a reservation is refused (the estimate was wrong, or memory is short), the join
// gives back what it read and falls back to the right-build HashJoin of the same inputs, which
// executes the left side again and spills its right side if that does not fit either.
type LeftBuildHashJoin struct {
	left, right         Operator
	kind                JoinKind
	leftKeys, rightKeys []Expr
	keyTypes            []arrow.DataType
	residual            Expr
	builds              sharedBuilds[*leftBuild]
	fallback            *HashJoin
}

// leftBuildConsumer reserves the left rows and hash table of a LeftBuildHashJoin. It counts as
// spillable: refused, the join moves to the right-build join, which spills.
var leftBuildConsumer = mempool.Consumer{Name: "hash join (build=left)", Spillable: true}

// NewLeftBuildHashJoin returns a semi, anti or null-aware anti join of left and right on
// leftKeys[i] = rightKeys[i] and residual (nil for none) that builds its hash table on left.
func NewLeftBuildHashJoin(left, right Operator, kind JoinKind, leftKeys, rightKeys []Expr, residual Expr) (*LeftBuildHashJoin, error) {
	if !kind.leftOnly() {
		return nil, errs.Internalf("a left-build hash join is semi or anti, not %s", kind)
	}
	if len(leftKeys) == 0 || len(leftKeys) != len(rightKeys) {
		return nil, errs.Internalf("hash join needs matching key lists, got %d left and %d right keys", len(leftKeys), len(rightKeys))
	}
	keyTypes, err := JoinKeyTypes(leftKeys, rightKeys)
	if err != nil {
		return nil, err
	}
	fallback, err := NewHashJoin(left, right, kind, leftKeys, rightKeys, residual)
	if err != nil {
		return nil, err
	}
	return &LeftBuildHashJoin{
		left: left, right: right, kind: kind,
		leftKeys: leftKeys, rightKeys: rightKeys, keyTypes: keyTypes, residual: residual,
		fallback: fallback.(*HashJoin),
	}, nil
}

func (j *LeftBuildHashJoin) Schema() *arrow.Schema { return j.left.Schema() }
func (j *LeftBuildHashJoin) Children() []Operator  { return []Operator{j.left, j.right} }
func (j *LeftBuildHashJoin) Partitions() int       { return j.left.Partitions() }

func (j *LeftBuildHashJoin) String() string {
	conds := make([]string, len(j.leftKeys))
	for i := range j.leftKeys {
		conds[i] = fmt.Sprintf("%s = %s", j.leftKeys[i], j.rightKeys[i])
	}
	s := fmt.Sprintf("HashJoin: %s build=left on %s", j.kind, strings.Join(conds, " AND "))
	if j.residual != nil {
		s += fmt.Sprintf(" residual %s", j.residual)
	}
	return s
}

// leftBuild is the left side of one execution, all partitions in one batch, with the decision of
// the join for each of its rows; or, with fallback, the note that it did not fit.
type leftBuild struct {
	batch    arrow.RecordBatch
	offsets  []int64 // partition p's rows are [offsets[p], offsets[p+1])
	keep     []bool
	res      *mempool.Reservation
	fallback bool
}

func (b *leftBuild) release() {
	if b == nil {
		return
	}
	if b.batch != nil {
		b.batch.Release()
	}
	if b.res != nil {
		b.res.Free()
	}
}

func (j *LeftBuildHashJoin) Execute(ctx context.Context, partition int, tc *TaskContext) (array.RecordReader, error) {
	if partition < 0 || partition >= j.Partitions() {
		return nil, errs.Internalf("left-build hash join has %d partitions, asked for %d", j.Partitions(), partition)
	}
	build, release, err := j.builds.acquire(ctx, tc, j.Partitions(), func(ctx context.Context) (*leftBuild, error) {
		return j.buildAndProbe(ctx, tc)
	})
	if err != nil {
		return nil, err
	}
	if build.fallback {
		release()
		return j.fallback.Execute(ctx, partition, tc)
	}
	row, end := build.offsets[partition], build.offsets[partition+1]
	pull := func() (arrow.RecordBatch, error) {
		var idx []int32
		for ; row < end && len(idx) < tc.RowsPerBatch(); row++ {
			if build.keep[row] {
				idx = append(idx, int32(row))
			}
		}
		if len(idx) == 0 {
			return nil, nil
		}
		return takeBatchRows(ctx, tc, build.batch, idx)
	}
	return stream.Pull(ctx, j.Schema(), pull, release), nil
}

// buildAndProbe materializes and hashes the left side, streams the right side through it and
// decides every left row; when the left side's memory is refused it returns a fallback build.
func (j *LeftBuildHashJoin) buildAndProbe(ctx context.Context, tc *TaskContext) (*leftBuild, error) {
	b := &leftBuild{res: tc.Reserve(leftBuildConsumer)}
	parts, err := j.collectLeft(ctx, tc, b.res)
	if err != nil {
		b.res.Free()
		if isExhausted(err) {
			return &leftBuild{fallback: true}, nil
		}
		return nil, err
	}
	var all []arrow.RecordBatch
	b.offsets = make([]int64, len(parts)+1)
	for p, part := range parts {
		all = append(all, part...)
		b.offsets[p+1] = b.offsets[p] + batchRows(part)
	}
	b.batch, err = concatBatches(tc, j.left.Schema(), all)
	releaseBatches(all)
	if err != nil {
		b.res.Free()
		return nil, err
	}
	b.res.Shrink(batchesBytes(all))
	if err := j.probe(ctx, tc, b); err != nil {
		b.release()
		return nil, err
	}
	return b, nil
}

// collectLeft executes every left partition concurrently (sharing a private copy of tc, as
// Coalesce does, so a Repartition below sees one run) and returns each one's non-empty batches,
// reserved by res at hashBuildBytes each.
func (j *LeftBuildHashJoin) collectLeft(ctx context.Context, tc *TaskContext, res *mempool.Reservation) ([][]arrow.RecordBatch, error) {
	runTC := *tc
	return collectPartitions(ctx, j.left, &runTC, res, hashBuildBytes, "left-build hash join")
}

func batchRows(bs []arrow.RecordBatch) int64 {
	n := int64(0)
	for _, b := range bs {
		n += b.NumRows()
	}
	return n
}

// probe hashes b.batch on the left keys, streams the right side through the table and fills
// b.keep with the join kind's decision for every left row.
func (j *LeftBuildHashJoin) probe(ctx context.Context, tc *TaskContext, b *leftBuild) error {
	if b.batch.NumRows() == 0 {
		return nil // no left row to decide: the right side need not run
	}
	// The joiner's "left batch" is the whole build: it evaluates the residual over left ++ right
	// pairs and records per left row whether a pair matched or gave NULL, as in HashJoin.
	joiner := newPairJoiner(j.kind, j.residual, j.left.Schema(), j.right.Schema(), b.batch)
	joiner.rightRows = 0
	joiner.begin(b.batch)
	table, err := j.hashLeft(ctx, tc, b.batch, joiner.leftKeyNull)
	if err != nil {
		return err
	}
	rdr, err := executeMerged(ctx, j.right, tc)
	if err != nil {
		return err
	}
	defer rdr.Release()
	// Without a residual every row of a matched key is decided, so the key leaves the table; a
	// semi or anti join whose table empties needs no more right rows.
	exists := joiner.existsOnly()
	decided := func(l int32) bool {
		return joiner.matched[l] || (j.kind == NullAwareAntiJoin && joiner.unknown[l])
	}
	scratch := &joinKeys{}
	for {
		if exists && table.live == 0 && j.kind != NullAwareAntiJoin {
			break
		}
		if j.kind == NullAwareAntiJoin && joiner.rightHasNullKey {
			break // NOT IN with a NULL on the right keeps no row
		}
		rb, err := nextNonEmpty(rdr)
		if err != nil {
			return err
		}
		if rb == nil {
			break
		}
		err = j.probeBatch(ctx, tc, joiner, rb, table, exists, decided, scratch)
		rb.Release()
		if err != nil {
			return err
		}
	}
	b.keep = make([]bool, b.batch.NumRows())
	if keep := joiner.keepLeft(); keep != nil {
		for i := range b.keep {
			b.keep[i] = keep(i)
		}
	}
	return nil
}

// probeBatch adds the candidate pairs of the right rows of rb to joiner.
func (j *LeftBuildHashJoin) probeBatch(ctx context.Context, tc *TaskContext, joiner *pairJoiner, rb arrow.RecordBatch,
	table *joinTable, exists bool, decided func(int32) bool, scratch *joinKeys) error {
	cols, err := evalKeys(ctx, tc, rb, j.rightKeys, j.keyTypes)
	if err != nil {
		return err
	}
	defer releaseAll(cols)
	keys, err := newJoinKeys(table.form, cols, int(rb.NumRows()), scratch)
	if err != nil {
		return err
	}
	joiner.right = rb
	defer func() { joiner.right = nil }()
	joiner.rightRows += rb.NumRows()
	var li, ri []int32
	flush := func() error {
		if len(li) == 0 {
			return nil
		}
		out, err := joiner.add(ctx, tc, li, ri)
		if out != nil {
			out.Release()
		}
		li, ri = li[:0], ri[:0]
		return err
	}
	next := table.next
	for r := range int(rb.NumRows()) {
		if keys.null != nil && keys.null[r] {
			joiner.rightHasNullKey = true
			continue
		}
		slot := table.find(keys, r)
		if slot < 0 {
			continue
		}
		if exists {
			for l := table.head(slot); l >= 0; l = next[l] {
				joiner.matched[l] = true
			}
			table.remove(slot)
			continue
		}
		for l := table.head(slot); l >= 0; l = next[l] {
			if decided(l) {
				continue
			}
			li, ri = append(li, l), append(ri, int32(r))
			if len(li) >= tc.RowsPerBatch() {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}

// hashLeft hashes the left rows with no NULL key on the left keys and sets keyNull[i] for the
// rows with a NULL key.
func (j *LeftBuildHashJoin) hashLeft(ctx context.Context, tc *TaskContext, batch arrow.RecordBatch, keyNull []bool) (*joinTable, error) {
	cols, err := evalKeys(ctx, tc, batch, j.leftKeys, j.keyTypes)
	if err != nil {
		return nil, err
	}
	defer releaseAll(cols)
	form := joinKeyFormOf(j.keyTypes)
	keys, err := newJoinKeys(form, cols, int(batch.NumRows()), nil)
	if err != nil {
		return nil, err
	}
	if keys.null != nil {
		copy(keyNull, keys.null)
	}
	return newJoinTable(keys, form), nil
}
