package flightsql

import (
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/cachedb/cachedb/internal/metrics"
)

// statementRecord counts one statement in the process metrics (internal/metrics): the rows
// and bytes it sends, then, once, its outcome and duration. A nil record counts nothing.
type statementRecord struct {
	kind  string
	start time.Time

	mu     sync.Mutex
	failed error
	ended  bool
	// first is set once the first batch was sent.
	first bool
}

func startStatement(kind string) *statementRecord {
	return &statementRecord{kind: kind, start: time.Now()}
}

// endStatement counts a statement of kind that began at start and ended with *err (for a
// defer, where err is the function's named result).
func endStatement(kind string, start time.Time, err *error) {
	metrics.StatementDone(kind, metrics.Outcome(*err), start)
}

// sent counts a batch of rows and bytes (recordBytes) handed to the client's stream.
func (r *statementRecord) sent(rows, bytes int64) {
	if r == nil {
		return
	}
	metrics.Served(r.kind, rows, bytes)
	r.mu.Lock()
	first := !r.first
	r.first = true
	r.mu.Unlock()
	if first {
		metrics.FirstBatch(r.kind, r.start)
	}
}

// fail notes the error the statement's stream ended with (the first one counts).
func (r *statementRecord) fail(err error) {
	if r == nil || err == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed == nil {
		r.failed = err
	}
}

// endOnError counts the statement as failed when err is not nil (for a defer over a named
// result: a call that fails before its statement streams).
func (r *statementRecord) endOnError(err error) {
	if err != nil {
		r.end(err)
	}
}

// end counts the statement once: with the error noted by fail, else err (nil: it succeeded).
func (r *statementRecord) end(err error) {
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.ended {
		r.mu.Unlock()
		return
	}
	r.ended = true
	if r.failed != nil {
		err = r.failed
	}
	r.mu.Unlock()
	metrics.StatementDone(r.kind, metrics.Outcome(err), r.start)
}

// onDataNodes reports whether a distributed query's endpoints are on the data nodes (each then
// counts its share as a stage), not on this head, which counts the query when it streams it.
func onDataNodes(info *flight.FlightInfo) bool {
	return len(info.Endpoint) > 0 && len(info.Endpoint[0].Location) > 0
}
