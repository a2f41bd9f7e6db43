package cluster

import (
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/util"

	"github.com/cachedb/cachedb/internal/metrics"
)

// shuffleCounter counts the bytes of each shuffle batch read from a data node into
// cachedb_shuffle_fetched_bytes_total.
type shuffleCounter struct{ array.RecordReader }

func (c shuffleCounter) Next() bool {
	if !c.RecordReader.Next() {
		return false
	}
	metrics.ShuffleFetched(util.TotalRecordSize(c.RecordBatch()))
	return true
}
