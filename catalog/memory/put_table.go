package memory

import (
	"context"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/internal/errs"
)

// PutTable makes a keyless table named name holding batches (each of schema) and publishes it
// in one step: readers see the table that had the name before, or the new one with all its
// rows, never a missing or half-filled table. With replace, a table of that name is dropped in
// the same step, with its indexes and triggers as DROP TABLE drops them; without replace it is
// an errs.AlreadyExists error. A dataset or a view of that name is errs.AlreadyExists either
// way. The table retains the batches; the caller keeps its own references.
func (c *Catalog) PutTable(ctx context.Context, name string, schema *arrow.Schema, batches []arrow.RecordBatch, replace bool) (*Table, error) {
	t := &Table{name: name, schema: schema}
	if _, err := t.Insert(ctx, batches, ConflictError); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	key := strings.ToLower(name)
	if _, ok := c.datasets[key]; ok {
		return nil, errs.AlreadyExistsf("a dataset named %q already exists", name)
	}
	if _, ok := c.views[key]; ok {
		return nil, errs.AlreadyExistsf("a view named %q already exists", name)
	}
	if _, ok := c.tables[key]; ok {
		if !replace {
			return nil, errs.AlreadyExistsf("table %q already exists", name)
		}
		delete(c.indexes, key)
		for trigger, table := range c.triggers {
			if table == key {
				delete(c.triggers, trigger)
			}
		}
	}
	c.tables[key] = t
	return t, nil
}
