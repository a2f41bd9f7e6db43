package engine

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/planner"
)

// keyedTable is a table that takes a statement's rows in one call and keeps its PRIMARY KEY
// and UNIQUE keys unique (memory tables).
type keyedTable interface {
	Insert(ctx context.Context, batches []arrow.RecordBatch, onConflict memcat.OnConflict) (memcat.InsertResult, error)
}

var _ keyedTable = (*memcat.Table)(nil)

// memoryKeys converts the keys a CREATE TABLE declares into memory table keys.
func memoryKeys(keys []planner.TableKey) []memcat.Key {
	if len(keys) == 0 {
		return nil
	}
	out := make([]memcat.Key, len(keys))
	for i, k := range keys {
		parts := make([]memcat.KeyPart, len(k.Columns))
		for j, c := range k.Columns {
			parts[j] = memcat.KeyPart{Column: c}
			if j < len(k.PrefixLengths) {
				parts[j].Length = k.PrefixLengths[j]
			}
		}
		out[i] = memcat.Key{Name: k.Name, Primary: k.Primary, Parts: parts}
	}
	return out
}

// onConflict maps an INSERT's duplicate-key handling to the memory table's.
func onConflict(d planner.OnDuplicate) memcat.OnConflict {
	switch d {
	case planner.DuplicateSkipped:
		return memcat.ConflictSkip
	case planner.DuplicateReplaces:
		return memcat.ConflictReplace
	}
	return memcat.ConflictError
}
