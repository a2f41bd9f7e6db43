package memory

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/internal/errs"
)

// OnConflict says what an insert does with a new row whose PRIMARY or UNIQUE key value is
// already taken, by a row of the table or by an earlier row of the same insert.
type OnConflict int

const (
	// ConflictError fails the whole insert (INSERT): no row is added.
	ConflictError OnConflict = iota
	// ConflictSkip leaves the new row out (INSERT IGNORE).
	ConflictSkip
	// ConflictReplace deletes every row holding one of the new row's key values, then adds the
	// new row (REPLACE).
	ConflictReplace
)

// InsertResult counts what an insert did. MySQL reports Inserted + Deleted rows affected for
// REPLACE and Inserted for INSERT.
type InsertResult struct {
	Inserted int64 // new rows added (each row of a REPLACE counts, even one a later row replaced)
	Deleted  int64 // rows removed by REPLACE, table rows and earlier rows of the same statement
}

// Insert adds the rows of batches, in order, as one statement: either every row is dealt with
// as onConflict says, or — on a NULL in a primary key column, a duplicate key under
// ConflictError, or a batch of another schema — the table is left unchanged and the error
// names the first offending row. The table retains the batches (or slices of them); the caller
// keeps its own references. Scans planned earlier keep reading the old contents.
func (t *Table) Insert(_ context.Context, batches []arrow.RecordBatch, onConflict OnConflict) (InsertResult, error) {
	var nonEmpty []arrow.RecordBatch
	var rows int64
	for _, b := range batches {
		if !b.Schema().Equal(t.schema) {
			return InsertResult{}, errs.Invalidf("batch schema %s does not match table %q schema %s", b.Schema(), t.name, t.schema)
		}
		if b.NumRows() > 0 {
			nonEmpty = append(nonEmpty, b)
			rows += b.NumRows()
		}
	}
	if rows == 0 {
		return InsertResult{}, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.index == nil {
		t.appendLocked(keptRows(nonEmpty, 0, true, func(int64) bool { return false }), rows)
		return InsertResult{Inserted: rows}, nil
	}
	src := newRowSource(nonEmpty, t.index.keys)
	if err := src.each(func(_ int64, bk *batchKeys, row int) error {
		if c := bk.nullPrimaryColumn(row); c >= 0 {
			return cannotBeNull(t.schema.Field(c).Name)
		}
		return nil
	}); err != nil {
		return InsertResult{}, err
	}
	if onConflict == ConflictReplace {
		return t.insertReplacingLocked(src), nil
	}
	return t.insertUniqueLocked(src, onConflict == ConflictSkip)
}

// appendLocked adds batches the table already owns a reference to. t.mu is held.
func (t *Table) appendLocked(batches []arrow.RecordBatch, rows int64) {
	t.batches = append(t.batches, batches...)
	t.rows += rows
}

// insertUniqueLocked adds the rows of src whose key values are all new, checking every row
// before adding any. With skip, a conflicting row is left out; without, it fails the insert.
// t.mu is held.
func (t *Table) insertUniqueLocked(src *rowSource, skip bool) (InsertResult, error) {
	keys := t.index.keys
	added := make([]map[string]int64, len(keys)) // key values of the rows accepted so far
	for k := range added {
		added[k] = map[string]int64{}
	}
	bufs := make([][]byte, len(keys))
	present := make([]bool, len(keys))
	var skipped map[int64]bool
	next := t.rows // position of the next accepted row
	err := src.each(func(pos int64, bk *batchKeys, row int) error {
		for k := range keys {
			bufs[k], present[k] = bk.encode(k, row, bufs[k])
			if !present[k] {
				continue
			}
			_, inTable := t.index.sets[k][string(bufs[k])]
			_, inInsert := added[k][string(bufs[k])]
			if !inTable && !inInsert {
				continue
			}
			if !skip {
				return duplicateEntry(t.name, keys[k], bk.display(k, row))
			}
			if skipped == nil {
				skipped = map[int64]bool{}
			}
			skipped[pos] = true
			return nil
		}
		for k := range keys {
			if present[k] {
				added[k][string(bufs[k])] = next
			}
		}
		next++
		return nil
	})
	if err != nil {
		return InsertResult{}, err
	}
	for k, set := range added {
		for v, pos := range set {
			t.index.sets[k][v] = pos
		}
	}
	inserted := src.rows - int64(len(skipped))
	t.appendLocked(keptRows(src.batches, 0, true, func(pos int64) bool { return skipped[pos] }), inserted)
	return InsertResult{Inserted: inserted}, nil
}

// insertReplacingLocked adds every row of src in order, first deleting the rows — of the table
// or added earlier by this insert — that hold one of its key values. It cannot fail: the rows
// were checked for NULL primary key values. Without deletions it costs what an append does;
// a statement that deletes rows also rebuilds the list of batches (slicing, not copying) and
// renumbers the index, work proportional to the table, once per statement. t.mu is held.
func (t *Table) insertReplacingLocked(src *rowSource) InsertResult {
	keys := t.index.keys
	var old *rowSource // the table's rows, addressed only once one of them is deleted
	base := t.rows     // positions of the new rows follow the table's
	deleted := map[int64]bool{}
	scratch := make([]byte, 0, 64)
	// remove unindexes the row at pos and marks it deleted.
	remove := func(pos int64) {
		if deleted[pos] {
			return
		}
		deleted[pos] = true
		from, at := src, pos-base
		if pos < base {
			if old == nil {
				old = newRowSource(t.batches, keys)
			}
			from, at = old, pos
		}
		b, row := from.locate(at)
		bk := from.keysOf(b)
		for k := range keys {
			var ok bool
			if scratch, ok = bk.encode(k, row, scratch); ok && t.index.sets[k][string(scratch)] == pos {
				delete(t.index.sets[k], string(scratch))
			}
		}
	}
	bufs := make([][]byte, len(keys))
	present := make([]bool, len(keys))
	_ = src.each(func(pos int64, bk *batchKeys, row int) error {
		pos += base
		for k := range keys {
			bufs[k], present[k] = bk.encode(k, row, bufs[k])
		}
		for k := range keys {
			if !present[k] {
				continue
			}
			if holder, ok := t.index.sets[k][string(bufs[k])]; ok {
				remove(holder)
			}
		}
		for k := range keys {
			if present[k] {
				t.index.sets[k][string(bufs[k])] = pos
			}
		}
		return nil
	})
	result := InsertResult{Inserted: src.rows, Deleted: int64(len(deleted))}
	if len(deleted) == 0 {
		t.appendLocked(keptRows(src.batches, 0, true, func(int64) bool { return false }), src.rows)
		return result
	}
	isDeleted := func(pos int64) bool { return deleted[pos] }
	batches := keptRows(t.batches, 0, false, isDeleted)
	batches = append(batches, keptRows(src.batches, base, true, isDeleted)...)
	positions := make([]int64, 0, len(deleted))
	for pos := range deleted {
		positions = append(positions, pos)
	}
	t.index.renumber(positions)
	t.batches = batches
	t.rows = base + src.rows - int64(len(deleted))
	return result
}
