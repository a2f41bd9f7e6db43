package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// nextNonEmpty reads rdr until a batch with rows appears; it returns that batch retained (the
// caller releases it), or nil at the end of the stream with rdr's error.
func nextNonEmpty(rdr array.RecordReader) (arrow.RecordBatch, error) {
	for rdr.Next() {
		b := rdr.RecordBatch()
		if b.NumRows() > 0 {
			b.Retain()
			return b, nil
		}
	}
	return nil, rdr.Err()
}
