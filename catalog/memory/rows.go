package memory

import (
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
)

// rowSource addresses the rows of a list of batches by position: row 0 is the first row of the
// first batch, and positions run on through the batches in order. It encodes the keys of the
// rows it is asked about, preparing each batch's encoders on first use.
type rowSource struct {
	batches []arrow.RecordBatch
	starts  []int64 // starts[i] is the position of batches[i]'s first row
	rows    int64
	keys    []Key
	encs    []*batchKeys // per batch, nil until first used
}

func newRowSource(batches []arrow.RecordBatch, keys []Key) *rowSource {
	s := &rowSource{batches: batches, starts: make([]int64, len(batches)), keys: keys, encs: make([]*batchKeys, len(batches))}
	for i, b := range batches {
		s.starts[i] = s.rows
		s.rows += b.NumRows()
	}
	return s
}

// locate returns the batch holding position pos and the row within it; pos must be in range.
func (s *rowSource) locate(pos int64) (batch, row int) {
	i := sort.Search(len(s.starts), func(i int) bool { return s.starts[i] > pos }) - 1
	return i, int(pos - s.starts[i])
}

// keysOf returns the key encoders of batch i.
func (s *rowSource) keysOf(i int) *batchKeys {
	if s.encs[i] == nil {
		s.encs[i] = newBatchKeys(s.batches[i], s.keys)
	}
	return s.encs[i]
}

// each calls fn for every row in order with its batch's encoders and its row in that batch,
// stopping at the first error.
func (s *rowSource) each(fn func(pos int64, bk *batchKeys, row int) error) error {
	for i, b := range s.batches {
		bk := s.keysOf(i)
		for r := 0; r < int(b.NumRows()); r++ {
			if err := fn(s.starts[i]+int64(r), bk, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// keptRows returns the rows of batches whose position (counted from base) dropped does not
// reject, in order, as batches the caller owns: a batch losing rows is sliced into its runs of
// kept rows (new references); a batch losing none comes back whole, retained when retainWhole,
// else carrying the reference the caller already held. No data is copied.
func keptRows(batches []arrow.RecordBatch, base int64, retainWhole bool, dropped func(pos int64) bool) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	pos := base
	for _, b := range batches {
		n := b.NumRows()
		start := int64(-1) // first row of the current run of kept rows
		whole := true
		for r := int64(0); r < n; r++ {
			if dropped(pos + r) {
				whole = false
				if start >= 0 {
					out = append(out, b.NewSlice(start, r))
					start = -1
				}
				continue
			}
			if start < 0 {
				start = r
			}
		}
		switch {
		case whole:
			if n > 0 {
				if retainWhole {
					b.Retain()
				}
				out = append(out, b)
			}
		case start >= 0:
			out = append(out, b.NewSlice(start, n))
		}
		pos += n
	}
	return out
}
