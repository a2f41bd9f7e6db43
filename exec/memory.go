package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/util"

	"github.com/cachedb/cachedb/internal/mempool"
)

// What operators reserve their state as (see TaskContext.Memory). Spillable consumers move
// their state to disk when refused; the others fail their query with the refusal.
var (
	sortConsumer      = mempool.Consumer{Name: "sort", Spillable: true}
	aggConsumer       = mempool.Consumer{Name: "hash aggregate", Spillable: true}
	hashJoinConsumer  = mempool.Consumer{Name: "hash join", Spillable: true}
	crossJoinConsumer = mempool.Consumer{Name: "nested loop join"}
	subqueryConsumer  = mempool.Consumer{Name: "subquery result"}
	// sharedResultConsumer holds the rows of a shared CTE (SharedResult) for its query.
	sharedResultConsumer = mempool.Consumer{Name: "shared CTE result"}
)

// batchesBytes is the size of the buffers of batches.
func batchesBytes(batches []arrow.RecordBatch) int64 {
	n := int64(0)
	for _, b := range batches {
		n += util.TotalRecordSize(b)
	}
	return n
}
