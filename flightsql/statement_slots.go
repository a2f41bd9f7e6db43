package flightsql

import (
	"context"
	"sync"

	"github.com/cachedb/cachedb/internal/errs"
)

// statementSlots bounds the statements each client (connection, see clientID) executes at
// once. A statement holds a slot while it plans or runs in GetFlightInfo, while it runs in
// DoPut (ExecuteUpdate, prepared updates, bulk ingest) and, for a query, from DoGet until its
// result stream ends (read to the end, failed, or abandoned by the client). A statement beyond the limit is
// refused at once with ResourceExhausted naming the limit; it does not wait, so that an
// overloaded client sees its overload instead of calls that hang, and may retry. The parts of
// a training read (epoch segment tickets) take no slot: a client fetches all of one read's
// endpoints at once (ADBC does) and reads them in order, so slots held by later segments could
// starve the one it reads; the GetFlightInfo that planned the read took a slot.
type statementSlots struct {
	perClient int

	mu     sync.Mutex
	active map[clientID]int
}

func newStatementSlots(perClient int) *statementSlots {
	return &statementSlots{perClient: perClient, active: map[clientID]int{}}
}

// acquire takes a slot for the client of ctx and returns the function that gives it back
// (call it exactly once).
func (s *statementSlots) acquire(ctx context.Context) (release func(), err error) {
	id := clientOf(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.active[id]; n >= s.perClient {
		return nil, errs.Exhaustedf("too many statements executing at once on this connection (%s): %d, the limit per client; wait for one to finish (read its results to the end) or cancel it", id, n)
	}
	s.active[id]++
	var once sync.Once
	return func() { once.Do(func() { s.release(id) }) }, nil
}

func (s *statementSlots) release(id clientID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active[id] <= 1 {
		delete(s.active, id)
		return
	}
	s.active[id]--
}

// forget drops what is known of id (its connection ended). Slots its calls still hold are
// given back harmlessly when they end.
func (s *statementSlots) forget(id clientID) {
	s.mu.Lock()
	delete(s.active, id)
	s.mu.Unlock()
}

// inUse is the number of slots id holds.
func (s *statementSlots) inUse(id clientID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active[id]
}
