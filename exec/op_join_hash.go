package exec

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/util"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/mempool"
	"github.com/cachedb/cachedb/internal/stream"
)

// HashJoin is an equi-join: it materializes the right side (all its partitions) into a hash
// table on the right keys, then streams each left partition through it. It has the left side's
// partitions; the partitions executed with one TaskContext share one build (see sharedBuilds).
//
// Keys: both sides' key values are cast to a common type per key (int 1 matches decimal 1.0; a
// string compared with a number compares as float64, as MySQL does), and a NULL key never
// matches. The residual condition, when not nil, is evaluated over the left ++ right row of each
// candidate pair. Output columns follow JoinKind; candidate pairs are processed in chunks of at
// most TaskContext.RowsPerBatch, so output batches stay bounded even for heavily duplicated keys.
type HashJoin struct {
	left, right         Operator
	kind                JoinKind
	leftKeys, rightKeys []Expr
	keyTypes            []arrow.DataType
	residual            Expr
	schema              *arrow.Schema
	builds              sharedBuilds[joinBuild]
	// partitioned joins partition p of left with partition p of right only: both sides are
	// hash-partitioned alike on the keys (see NewPartitionedHashJoin).
	partitioned bool
	// replicated, when not nil, is where the left partitions run: a data node shares one build
	// among the partitions it runs (see NewReplicatedHashJoin).
	replicated *Placement
	// perExecution keeps one build per execution in a process (TaskContext.Cache) instead of
	// sharing it among the partitions until all have claimed it (NewBroadcastHashJoin).
	perExecution bool
}

// NewHashJoin returns a hash join of kind over left and right on leftKeys[i] = rightKeys[i] (each
// evaluated against its own side) and residual (nil for none).
func NewHashJoin(left, right Operator, kind JoinKind, leftKeys, rightKeys []Expr, residual Expr) (Operator, error) {
	if !kind.valid() {
		return nil, errs.Internalf("unknown join kind %d", int(kind))
	}
	if len(leftKeys) == 0 || len(leftKeys) != len(rightKeys) {
		return nil, errs.Internalf("hash join needs matching key lists, got %d left and %d right keys", len(leftKeys), len(rightKeys))
	}
	keyTypes, err := JoinKeyTypes(leftKeys, rightKeys)
	if err != nil {
		return nil, err
	}
	out, _ := joinSchemas(kind, left.Schema(), right.Schema())
	return &HashJoin{
		left: left, right: right, kind: kind,
		leftKeys: leftKeys, rightKeys: rightKeys, keyTypes: keyTypes,
		residual: residual, schema: out,
	}, nil
}

// NewPartitionedHashJoin returns a hash join whose partition p joins partition p of left with
// partition p of right only. It is correct when both sides are partitioned by a hash of their
// keys cast to KeyTypes (equal keys in equal partitions), as a distributed plan's shuffles do.
// A null-aware anti join is not partitioned: it must see every right row's key.
func NewPartitionedHashJoin(left, right Operator, kind JoinKind, leftKeys, rightKeys []Expr, residual Expr) (Operator, error) {
	if kind == NullAwareAntiJoin {
		return nil, errs.Internalf("a null-aware anti join cannot be partitioned")
	}
	if left.Partitions() != right.Partitions() {
		return nil, errs.Internalf("partitioned hash join of %d and %d partitions", left.Partitions(), right.Partitions())
	}
	op, err := NewHashJoin(left, right, kind, leftKeys, rightKeys, residual)
	if err != nil {
		return nil, err
	}
	op.(*HashJoin).partitioned = true
	return op, nil
}

// JoinKeyTypes returns the types a hash join compares leftKeys[i] = rightKeys[i] in: what both
// sides' keys are cast to before hashing.
func JoinKeyTypes(leftKeys, rightKeys []Expr) ([]arrow.DataType, error) {
	types := make([]arrow.DataType, len(leftKeys))
	for i := range leftKeys {
		t, err := joinKeyType(leftKeys[i].DataType(), rightKeys[i].DataType())
		if err != nil {
			return nil, fmt.Errorf("join key %s = %s: %w", leftKeys[i], rightKeys[i], err)
		}
		types[i] = t
	}
	return types, nil
}

// joinKeyType is the type both sides of an equality are compared in: the type the = operator
// compares them in (comparisonType), so that a hash join keeps exactly the pairs a nested loop
// evaluating l = r keeps. A string against a number compares as float64 (MySQL), text against
// a date or time as that date or time. Exact numbers too wide for one decimal128, which = compares
// as a decimal256 that row keys cannot hold, keep CommonType.
func joinKeyType(l, r arrow.DataType) (arrow.DataType, error) {
	t, err := comparisonType("=", []arrow.DataType{l, r})
	if err != nil || t.ID() != arrow.DECIMAL256 {
		return t, err
	}
	return CommonType(l, r)
}

func (j *HashJoin) Schema() *arrow.Schema { return j.schema }
func (j *HashJoin) Children() []Operator  { return []Operator{j.left, j.right} }
func (j *HashJoin) Partitions() int       { return j.left.Partitions() }

func (j *HashJoin) String() string {
	conds := make([]string, len(j.leftKeys))
	for i := range j.leftKeys {
		conds[i] = fmt.Sprintf("%s = %s", j.leftKeys[i], j.rightKeys[i])
	}
	s := fmt.Sprintf("HashJoin: %s on %s", j.kind, strings.Join(conds, " AND "))
	if j.partitioned {
		s = "Partitioned" + s
	}
	if j.replicated != nil {
		s = "Replicated" + s + " (right side built once on every data node)"
	}
	if j.residual != nil {
		s += fmt.Sprintf(" residual %s", j.residual)
	}
	return s
}

func (j *HashJoin) Execute(ctx context.Context, partition int, tc *TaskContext) (array.RecordReader, error) {
	build, release, err := j.acquireBuild(ctx, partition, tc)
	if err != nil {
		return nil, err
	}
	left, err := j.left.Execute(ctx, partition, tc)
	if err != nil {
		release()
		return nil, err
	}
	if build.grace != nil {
		return j.graceJoin(ctx, tc, left, build.grace, release), nil
	}
	s := j.probe(ctx, tc, left, build.batch, build.table)
	return stream.Pull(ctx, j.schema, s.pull, s.close(release)), nil
}

// probe returns the stream joining the left batches of left with build through table.
func (j *HashJoin) probe(ctx context.Context, tc *TaskContext, left array.RecordReader, build arrow.RecordBatch, table *joinTable) *joinStream {
	joiner := newPairJoiner(j.kind, j.residual, j.left.Schema(), j.right.Schema(), build)
	joiner.rightHasNullKey = table.hasNullKey
	s := &joinStream{ctx: ctx, tc: tc, left: left, joiner: joiner}
	// One left batch's keys at a time: a batch's source is released before the next begins.
	scratch := &joinKeys{}
	s.newSource = func(b arrow.RecordBatch) (pairSource, error) {
		cols, err := evalKeys(ctx, tc, b, j.leftKeys, j.keyTypes)
		if err != nil {
			return nil, err
		}
		defer releaseAll(cols)
		keys, err := newJoinKeys(table.form, cols, int(b.NumRows()), scratch)
		if err != nil {
			return nil, err
		}
		return &hashPairs{
			table: table, keys: keys, n: int(b.NumRows()), chain: -1,
			firstOnly: joiner.existsOnly(), keyNull: joiner.leftKeyNull,
		}, nil
	}
	return s
}

// acquireBuild returns the build side for left partition p: right partition p alone when the
// join is partitioned, else the whole right side shared by the partitions of one execution.
func (j *HashJoin) acquireBuild(ctx context.Context, p int, tc *TaskContext) (joinBuild, func(), error) {
	if j.perExecution && tc.Cache != nil {
		v, err := tc.Cache.Do(j, func() (any, error) {
			rdr, err := executeMerged(ctx, j.right, tc)
			if err != nil {
				return nil, err
			}
			defer rdr.Release()
			b, err := j.buildFrom(ctx, tc, rdr)
			if err != nil {
				return nil, err
			}
			return &cachedJoinBuild{b}, nil
		})
		if err != nil {
			return joinBuild{}, nil, err
		}
		return v.(*cachedJoinBuild).build, func() {}, nil
	}
	if !j.partitioned {
		sharers, err := j.sharers(tc)
		if err != nil {
			return joinBuild{}, nil, err
		}
		return j.builds.acquire(ctx, tc, sharers, func(ctx context.Context) (joinBuild, error) {
			rdr, err := executeMerged(ctx, j.right, tc)
			if err != nil {
				return joinBuild{}, err
			}
			defer rdr.Release()
			build, err := j.buildFrom(ctx, tc, rdr)
			if err == nil && build.grace != nil && j.nodeShared(tc) {
				build.grace.takeTurns(tc)
			}
			return build, err
		})
	}
	rdr, err := j.right.Execute(ctx, p, tc)
	if err != nil {
		return joinBuild{}, nil, err
	}
	defer rdr.Release()
	build, err := j.buildFrom(ctx, tc, rdr)
	if err != nil {
		return joinBuild{}, nil, err
	}
	return build, build.release, nil
}

// buildFrom reads the right-side rows of rdr and hashes them, reserving them from the query's
// memory first. When the reservation is refused, the rows read so far and all later ones are
// partitioned into spill files instead (a grace build; see graceJoin).
func (j *HashJoin) buildFrom(ctx context.Context, tc *TaskContext, rdr array.RecordReader) (joinBuild, error) {
	res := tc.Reserve(hashJoinConsumer)
	var batches []arrow.RecordBatch
	var grace *graceWriter
	fail := func(err error) (joinBuild, error) {
		releaseBatches(batches)
		res.Free()
		if grace != nil {
			grace.abort()
		}
		return joinBuild{}, err
	}
	for {
		b, err := nextNonEmpty(rdr)
		if err != nil {
			return fail(err)
		}
		if b == nil {
			break
		}
		if grace != nil {
			err = grace.add(ctx, b)
			b.Release()
			if err != nil {
				return fail(err)
			}
			continue
		}
		if err := res.TryGrow(hashBuildBytes(b)); err != nil {
			if !isExhausted(err) {
				b.Release()
				return fail(err)
			}
			grace = j.newGraceWriter(tc, newSpillFiles(ctx, tc, "join"), j.right.Schema(), j.rightKeys, true)
			batches = append(batches, b)
			for _, held := range batches {
				if err = grace.add(ctx, held); err != nil {
					break
				}
			}
			releaseBatches(batches)
			batches = nil
			res.Shrink(res.Size())
			if err != nil {
				return fail(err)
			}
			continue
		}
		batches = append(batches, b)
	}
	if grace != nil {
		res.Free()
		g, err := grace.finish()
		if err != nil {
			return fail(err)
		}
		return joinBuild{grace: g}, nil
	}
	build, err := j.hashBatches(ctx, tc, batches, res)
	releaseBatches(batches)
	batches = nil
	if err != nil {
		return fail(err)
	}
	return build, nil
}

// hashBuildBytes is what holding build batch b costs a hash join: b, its copy in the
// concatenated build side, and the hash table's entries for its rows (the row chain, a map
// entry and the encoded key).
func hashBuildBytes(b arrow.RecordBatch) int64 {
	return 2*util.TotalRecordSize(b) + hashRowBytes*b.NumRows()
}

// hashRowBytes estimates the hash table's bytes per build row: its chain link (4), its slot
// (16 bytes in a table one third to two thirds full: up to 48) and a short key kept to confirm
// hash matches (a second word, or encoded bytes).
const hashRowBytes = 64

// hashBatches concatenates batches (reserved by res at hashBuildBytes each) and hashes them;
// res then holds the concatenated batch and the table. The caller keeps its batches.
func (j *HashJoin) hashBatches(ctx context.Context, tc *TaskContext, batches []arrow.RecordBatch, res *mempool.Reservation) (joinBuild, error) {
	batch, err := concatBatches(tc, j.right.Schema(), batches)
	if err != nil {
		return joinBuild{}, err
	}
	table, err := buildHashTable(ctx, tc, batch, j.rightKeys, j.keyTypes)
	if err != nil {
		batch.Release()
		return joinBuild{}, err
	}
	res.Shrink(batchesBytes(batches))
	return joinBuild{batch: batch, table: table, res: res}, nil
}

// evalKeys evaluates exprs over b and casts each result to types[i]; the caller releases them.
func evalKeys(ctx context.Context, tc *TaskContext, b arrow.RecordBatch, exprs []Expr, types []arrow.DataType) ([]arrow.Array, error) {
	out := make([]arrow.Array, 0, len(exprs))
	for i, e := range exprs {
		v, err := e.Eval(ctx, tc, b)
		if err != nil {
			releaseAll(out)
			return nil, err
		}
		c, err := CastArray(ctx, tc, v, types[i])
		v.Release()
		if err != nil {
			releaseAll(out)
			return nil, fmt.Errorf("join key %s: %w", e, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// buildHashTable evaluates the join keys of build (cast to types) and hashes its rows.
func buildHashTable(ctx context.Context, tc *TaskContext, build arrow.RecordBatch, keys []Expr, types []arrow.DataType) (*joinTable, error) {
	cols, err := evalKeys(ctx, tc, build, keys, types)
	if err != nil {
		return nil, err
	}
	defer releaseAll(cols)
	form := joinKeyFormOf(types)
	k, err := newJoinKeys(form, cols, int(build.NumRows()), nil)
	if err != nil {
		return nil, err
	}
	return newJoinTable(k, form), nil
}

// hashPairs enumerates, for each row of a left batch, the build rows with an equal key; with
// firstOnly, only the first of them. Rows with a NULL key are recorded in keyNull and match
// nothing.
type hashPairs struct {
	table     *joinTable
	keys      *joinKeys
	n, row    int
	chain     int32
	firstOnly bool
	keyNull   []bool
	// pos and end bound the build rows of the current left row still to pair, in the table's
	// grouped list (when it has one).
	pos, end int32
}

func (h *hashPairs) next(limit int) (li, ri []int32, done bool) {
	if h.table.grouped != nil {
		return h.nextGrouped(limit)
	}
	t := h.table
	for len(li) < limit {
		if h.chain >= 0 {
			li, ri = append(li, int32(h.row)), append(ri, h.chain)
			h.chain = t.next[h.chain]
			if h.chain < 0 || h.firstOnly {
				h.chain = -1
				h.row++
			}
			continue
		}
		slot := h.findNext()
		if slot < 0 {
			break
		}
		h.chain = t.head(slot)
	}
	return li, ri, h.row >= h.n && h.chain < 0
}

// nextGrouped is next over the table's grouped list.
func (h *hashPairs) nextGrouped(limit int) (li, ri []int32, done bool) {
	t := h.table
	for len(li) < limit {
		if h.pos < h.end {
			take := min(int(h.end-h.pos), limit-len(li))
			if h.firstOnly {
				take = 1
			}
			for _, r := range t.grouped[h.pos : h.pos+int32(take)] {
				li, ri = append(li, int32(h.row)), append(ri, r)
			}
			h.pos += int32(take)
			if h.pos == h.end || h.firstOnly {
				h.pos, h.end = 0, 0
				h.row++
			}
			continue
		}
		slot := h.findNext()
		if slot < 0 {
			break
		}
		h.pos, h.end = t.groupStart[slot], t.groupStart[slot+1]
	}
	return li, ri, h.row >= h.n && h.pos >= h.end
}

// findNext advances to the next left row from h.row on whose key the table has, and returns its
// slot (h.row is that row), or -1 when no row is left.
func (h *hashPairs) findNext() int {
	for h.row < h.n {
		if h.keys.null != nil && h.keys.null[h.row] {
			h.keyNull[h.row] = true
			h.row++
			continue
		}
		if slot := h.table.find(h.keys, h.row); slot >= 0 {
			return slot
		}
		h.row++
	}
	return -1
}

func (h *hashPairs) release() {}

// NewBroadcastHashJoin is NewHashJoin for a right side that is a broadcast (exec.NewBroadcast),
// on a data node that runs only some of left's partitions: the build is made once per
// execution in the process and released with the execution's TaskContext.Cache, rather than
// after every partition has claimed it, which on a node never happens.
func NewBroadcastHashJoin(left, right Operator, kind JoinKind, leftKeys, rightKeys []Expr, residual Expr) (Operator, error) {
	op, err := NewHashJoin(left, right, kind, leftKeys, rightKeys, residual)
	if err != nil {
		return nil, err
	}
	op.(*HashJoin).perExecution = true
	return op, nil
}

// cachedJoinBuild is a build held by a TaskContext.Cache, which releases it.
type cachedJoinBuild struct{ build joinBuild }

func (c *cachedJoinBuild) Release() { c.build.release() }
