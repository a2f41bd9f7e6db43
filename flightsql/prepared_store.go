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
	lastUsed time.Time
}

// preparedStore holds open prepared statements under random handles. It is bounded (add fails
// with ResourceExhausted when full of live statements) and statements idle for longer than
// idle are dropped, so clients that never close their statements cannot exhaust the server.
type preparedStore struct {
	max  int
	idle time.Duration
	now  func() time.Time

	mu    sync.Mutex
	stmts map[string]*storedStatement
}

func newPreparedStore(max int, idle time.Duration, now func() time.Time) *preparedStore {
	return &preparedStore{max: max, idle: idle, now: now, stmts: map[string]*storedStatement{}}
}

// add stores stmt and returns its handle.
func (p *preparedStore) add(stmt *preparedStatement) ([]byte, error) {
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	handle := []byte(hex.EncodeToString(raw))

	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if len(p.stmts) >= p.max {
		p.dropIdleLocked(now)
	}
	if len(p.stmts) >= p.max {
		return nil, errs.Exhaustedf("too many open prepared statements (limit %d); close unused ones", p.max)
	}
	p.stmts[string(handle)] = &storedStatement{stmt: stmt, lastUsed: now}
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
		delete(p.stmts, string(handle))
		ok = false
	}
	if !ok {
		return nil, errs.Invalidf("prepared statement handle %q is not open (closed, expired or never created)", printable(handle))
	}
	st.lastUsed = now
	return st.stmt, nil
}

// remove closes the statement under handle; closing an unknown handle is not an error, so a
// client may close a statement the server already expired.
func (p *preparedStore) remove(handle []byte) {
	p.mu.Lock()
	delete(p.stmts, string(handle))
	p.mu.Unlock()
}

// len is the number of statements held.
func (p *preparedStore) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.stmts)
}

func (p *preparedStore) closeAll() {
	p.mu.Lock()
	p.stmts = map[string]*storedStatement{}
	p.mu.Unlock()
}

func (p *preparedStore) dropIdleLocked(now time.Time) {
	for h, st := range p.stmts {
		if now.Sub(st.lastUsed) > p.idle {
			delete(p.stmts, h)
		}
	}
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
