package flightsql

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/errs"
)

// preparedStatement is one open prepared statement: its text, what the engine said about it
// and the parameter rows bound to it so far.
type preparedStatement struct {
	sql  string
	info *engine.Prepared

	mu     sync.Mutex
	params [][]scalar.Scalar // one entry per parameter row; nil when nothing is bound
}

// bind replaces the bound parameter rows.
func (p *preparedStatement) bind(rows [][]scalar.Scalar) {
	p.mu.Lock()
	p.params = rows
	p.mu.Unlock()
}

// boundRows returns the parameter rows to run the statement with: the bound rows, or one
// empty row for a statement without parameters. A statement with parameters and no binding
// is an InvalidInput error.
func (p *preparedStatement) boundRows() ([][]scalar.Scalar, error) {
	p.mu.Lock()
	rows := p.params
	p.mu.Unlock()
	if p.info.NumParams == 0 {
		if len(rows) == 0 {
			return [][]scalar.Scalar{nil}, nil
		}
		return rows, nil
	}
	if len(rows) == 0 {
		return nil, errs.Invalidf("prepared statement has %d parameters and none are bound", p.info.NumParams)
	}
	return rows, nil
}

// storedStatement is a prepared statement with its bookkeeping.
type storedStatement struct {
	stmt     *preparedStatement
	owner    clientID
	lastUsed time.Time
}

// preparedStore holds open prepared statements under random handles, counted against the
// client (connection) that created each. Its guarantees, so that no client can exhaust the
// server for the others:
//
//   - A client holds at most perClient statements: one more fails with ResourceExhausted
//     naming that limit, after the client's own expired statements are dropped. Other clients
//     are not affected.
//   - All clients together hold at most max statements (memory stays bounded). When a client
//     within its own limit adds one while the store is full, expired statements are dropped
//     first, then the least recently used statement of the client holding the most is evicted
//     (its later use fails with InvalidArgument, as for an expired one): many clients near
//     their limit slow the heaviest down rather than refuse everyone.
//   - A statement unused for longer than idle is dropped; so are all of a client's statements
//     when its connection ends (dropClient).
//
// A handle is a capability: any connection that presents it may use the statement; the owner
// only decides whose limit it counts against and when it goes away.
type preparedStore struct {
	max       int
	perClient int
	idle      time.Duration
	now       func() time.Time

	mu      sync.Mutex
	stmts   map[string]*storedStatement
	clients map[clientID]map[string]*storedStatement // the statements each client owns
}

func newPreparedStore(max, perClient int, idle time.Duration, now func() time.Time) *preparedStore {
	return &preparedStore{
		max: max, perClient: perClient, idle: idle, now: now,
		stmts: map[string]*storedStatement{}, clients: map[clientID]map[string]*storedStatement{},
	}
}

// add stores stmt for owner and returns its handle.
func (p *preparedStore) add(owner clientID, stmt *preparedStatement) ([]byte, error) {
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	handle := []byte(hex.EncodeToString(raw))

	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if len(p.clients[owner]) >= p.perClient {
		p.dropIdleLocked(now, p.clients[owner])
	}
	if n := len(p.clients[owner]); n >= p.perClient {
		return nil, errs.Exhaustedf("too many open prepared statements on this connection (%s): %d, the limit per client; close unused ones", owner, n)
	}
	if len(p.stmts) >= p.max {
		p.dropIdleLocked(now, p.stmts)
	}
	for len(p.stmts) >= p.max && p.evictLocked() {
	}
	if len(p.stmts) >= p.max {
		return nil, errs.Exhaustedf("too many open prepared statements on this server (limit %d); close unused ones", p.max)
	}
	st := &storedStatement{stmt: stmt, owner: owner, lastUsed: now}
	p.stmts[string(handle)] = st
	if p.clients[owner] == nil {
		p.clients[owner] = map[string]*storedStatement{}
	}
	p.clients[owner][string(handle)] = st
	return handle, nil
}

// get returns the statement under handle and marks it used. An unknown, closed or expired
// handle is an InvalidInput error.
func (p *preparedStore) get(handle []byte) (*preparedStatement, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	st, ok := p.stmts[string(handle)]
	if ok && now.Sub(st.lastUsed) > p.idle {
		p.deleteLocked(string(handle), st)
		ok = false
	}
	if !ok {
		return nil, errs.Invalidf("prepared statement handle %q is not open (closed, expired, evicted or never created)", printable(handle))
	}
	st.lastUsed = now
	return st.stmt, nil
}

// remove closes the statement under handle; closing an unknown handle is not an error, so a
// client may close a statement the server already expired.
func (p *preparedStore) remove(handle []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if st, ok := p.stmts[string(handle)]; ok {
		p.deleteLocked(string(handle), st)
	}
}

// dropClient closes every statement owner holds (its connection ended).
func (p *preparedStore) dropClient(owner clientID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for h := range p.clients[owner] {
		delete(p.stmts, h)
	}
	delete(p.clients, owner)
}

// len is the number of statements held.
func (p *preparedStore) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.stmts)
}

// held is the number of statements owner holds.
func (p *preparedStore) held(owner clientID) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.clients[owner])
}

func (p *preparedStore) closeAll() {
	p.mu.Lock()
	p.stmts = map[string]*storedStatement{}
	p.clients = map[clientID]map[string]*storedStatement{}
	p.mu.Unlock()
}

func (p *preparedStore) deleteLocked(handle string, st *storedStatement) {
	delete(p.stmts, handle)
	owned := p.clients[st.owner]
	delete(owned, handle)
	if len(owned) == 0 {
		delete(p.clients, st.owner)
	}
}

// dropIdleLocked drops the expired statements among set (all of them, or one client's).
func (p *preparedStore) dropIdleLocked(now time.Time, set map[string]*storedStatement) {
	for h, st := range set {
		if now.Sub(st.lastUsed) > p.idle {
			p.deleteLocked(h, st)
		}
	}
}

// evictLocked drops the least recently used statement of the client holding the most; it
// reports false when there is none.
func (p *preparedStore) evictLocked() bool {
	var heaviest map[string]*storedStatement
	for _, owned := range p.clients {
		if len(owned) > len(heaviest) {
			heaviest = owned
		}
	}
	var (
		oldest string
		st     *storedStatement
	)
	for h, s := range heaviest {
		if st == nil || s.lastUsed.Before(st.lastUsed) {
			oldest, st = h, s
		}
	}
	if st == nil {
		return false
	}
	p.deleteLocked(oldest, st)
	return true
}

// printable shortens and sanitizes client-supplied bytes for an error message.
func printable(b []byte) string {
	const max = 64
	if len(b) > max {
		b = b[:max]
	}
	out := make([]rune, 0, len(b))
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			c = '?'
		}
		out = append(out, rune(c))
	}
	return string(out)
}
