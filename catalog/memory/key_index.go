package memory

import (
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
)

// keyIndex holds, for each key of a table, the encoded value of every row whose key has no
// NULL part, mapped to that row's position in the table (rows counted from 0 in table order
// across the batches). Merging batches keeps positions; writes that delete rows renumber them.
// Checking a row against the table is then one map lookup per key.
type keyIndex struct {
	keys []Key              // primary key first
	sets []map[string]int64 // per key: encoded value → row position
}

func newKeyIndex(keys []Key) *keyIndex {
	ix := &keyIndex{keys: keys, sets: make([]map[string]int64, len(keys))}
	for i := range ix.sets {
		ix.sets[i] = map[string]int64{}
	}
	return ix
}

// buildKeyIndex indexes the rows of batches, failing on the first row (in order) that has a
// NULL in a primary key column or repeats a key value of an earlier row.
func buildKeyIndex(table string, schema *arrow.Schema, keys []Key, batches []arrow.RecordBatch) (*keyIndex, error) {
	ix := newKeyIndex(keys)
	buf := make([]byte, 0, 64)
	err := newRowSource(batches, keys).each(func(pos int64, bk *batchKeys, row int) error {
		if c := bk.nullPrimaryColumn(row); c >= 0 {
			return cannotBeNull(schema.Field(c).Name)
		}
		for k := range keys {
			var ok bool
			if buf, ok = bk.encode(k, row, buf); !ok {
				continue
			}
			if _, dup := ix.sets[k][string(buf)]; dup {
				return duplicateEntry(table, keys[k], bk.display(k, row))
			}
			ix.sets[k][string(buf)] = pos
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ix, nil
}

// renumber shifts every position past deleted rows so that positions count the rows that
// remain. deleted holds the positions of the removed rows; none of them is still indexed.
func (ix *keyIndex) renumber(deleted []int64) {
	if len(deleted) == 0 {
		return
	}
	slices.Sort(deleted)
	for _, set := range ix.sets {
		for v, pos := range set {
			set[v] = pos - int64(sort.Search(len(deleted), func(i int) bool { return deleted[i] >= pos }))
		}
	}
}
