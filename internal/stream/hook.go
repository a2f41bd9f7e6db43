package stream

import (
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// hooked forwards to a wrapped reader and holds exactly one reference to it, whatever the
// wrapped reader's own reference rules are: its own count follows the package contract, and
// the Release that drops it to zero releases the wrapped reader and then runs the hook, once.
type hooked struct {
	array.RecordReader
	refs    atomic.Int64
	drained atomic.Bool
	once    sync.Once
	hook    func(drained bool)
}

// OnRelease returns a reader that reads r and, after its final Release has released r, runs
// hook exactly once. The returned reader owns the caller's reference to r.
func OnRelease(r array.RecordReader, hook func()) array.RecordReader {
	return OnReleaseDrained(r, func(bool) { hook() })
}

// OnReleaseDrained is OnRelease with a hook told whether r was read to its end without an
// error (Next returned false and Err was nil), so it can tell a finished stream from an
// abandoned or failed one.
func OnReleaseDrained(r array.RecordReader, hook func(drained bool)) array.RecordReader {
	h := &hooked{RecordReader: r, hook: hook}
	h.refs.Store(1)
	return h
}

func (h *hooked) Retain() { h.refs.Add(1) }

func (h *hooked) Release() {
	if h.refs.Add(-1) != 0 {
		return
	}
	h.once.Do(func() {
		h.RecordReader.Release()
		h.hook(h.drained.Load())
	})
}

func (h *hooked) Next() bool {
	if h.refs.Load() <= 0 {
		return false
	}
	if h.RecordReader.Next() {
		return true
	}
	if h.RecordReader.Err() == nil {
		h.drained.Store(true)
	}
	return false
}
