// Package mempool is a process's memory budget. Everything cachedb holds for longer than one
// batch — dataset partitions, shuffle buffers, operator state (hash tables, sort runs,
// aggregates), training-read windows — is reserved from one Pool before it is held, and given
// back when it is freed. A reservation that would pass the limit is refused with
// errs.ResourceExhausted naming the limit, so the holder can spill, wait or fail its own query
// while the process and everything else it holds stay up.
//
// Consumers are spillable (an operator that can move its state to disk when refused) or not.
// Spillable consumers share what unspillable ones leave: each may hold up to an equal share of
// it, so one large sort cannot starve a concurrent one (the fair policy of DataFusion's
// FairSpillPool). A Group bounds the reservations of one query (a per-query limit) inside the
// process's limit.
//
// Before it refuses a reservation, the pool asks its Reclaimer (the partition store: move
// partitions to the disk tier) to free what is missing, once per attempt.
package mempool

import (
	"cmp"
	"slices"
	"sync"

	"github.com/dustin/go-humanize"

	"github.com/cachedb/cachedb/internal/errs"
)

// Pool is one process's memory budget. It is safe for concurrent use.
type Pool struct {
	limit int64

	mu sync.Mutex
	// reserved is the sum of every live reservation.
	reserved int64
	// unspillable is the part of reserved held by unspillable consumers.
	unspillable int64
	// spillers counts live reservations of spillable consumers.
	spillers int
	// byName sums reservations by consumer name.
	byName map[string]*usage
	// peak is the highest reserved seen.
	peak int64
	// refusals counts refused reservations.
	refusals int64

	reclaimMu sync.Mutex
	reclaim   Reclaimer
	evictors  map[*Reclaimer]struct{}
}

type usage struct {
	bytes int64
	count int
}

// Reclaimer frees memory the pool's reservations hold when a reservation would be refused: it
// is asked for need bytes and returns how many it freed (by shrinking reservations of this
// pool). It runs without the pool's lock held, in the refused caller's goroutine, and must not
// grow reservations itself.
type Reclaimer func(need int64) (freed int64)

// Consumer describes what a reservation is for.
type Consumer struct {
	// Name groups reservations in statistics ("dataset partitions", "hash join", "sort").
	Name string
	// Spillable consumers can move their state to disk when refused; they share what
	// unspillable ones leave in equal parts.
	Spillable bool
}

// New returns a pool of limit bytes; limit <= 0 means no limit (reservations are counted,
// never refused).
func New(limit int64) *Pool {
	if limit < 0 {
		limit = 0
	}
	return &Pool{limit: limit, byName: map[string]*usage{}}
}

// Unlimited returns a pool that counts reservations and never refuses one.
func Unlimited() *Pool { return New(0) }

// Limit is the pool's limit in bytes (0: none).
func (p *Pool) Limit() int64 { return p.limit }

// SetReclaimer installs the function asked to free memory before a reservation is refused
// (nil: none).
func (p *Pool) SetReclaimer(r Reclaimer) {
	p.reclaimMu.Lock()
	p.reclaim = r
	p.reclaimMu.Unlock()
}

// AddEvictor adds a function asked, before the Reclaimer, to free memory when a reservation
// would be refused: a cache that drops entries it can read again. It has a Reclaimer's contract.
// The returned function removes it.
func (p *Pool) AddEvictor(evict Reclaimer) (remove func()) {
	key := &evict
	p.reclaimMu.Lock()
	if p.evictors == nil {
		p.evictors = map[*Reclaimer]struct{}{}
	}
	p.evictors[key] = struct{}{}
	p.reclaimMu.Unlock()
	return func() {
		p.reclaimMu.Lock()
		delete(p.evictors, key)
		p.reclaimMu.Unlock()
	}
}

// free asks the evictors, then (unless evictOnly) the reclaimer, for need bytes, until they
// have freed them.
func (p *Pool) free(need int64, evictOnly bool) {
	p.reclaimMu.Lock()
	asked := make([]Reclaimer, 0, len(p.evictors)+1)
	for e := range p.evictors {
		asked = append(asked, *e)
	}
	if p.reclaim != nil && !evictOnly {
		asked = append(asked, p.reclaim)
	}
	p.reclaimMu.Unlock()
	for _, r := range asked {
		if need -= r(need); need <= 0 {
			return
		}
	}
}

// Reserve returns an empty reservation for c, counted toward the pool only.
func (p *Pool) Reserve(c Consumer) *Reservation { return p.reserve(c, nil) }

func (p *Pool) reserve(c Consumer, g *Group) *Reservation {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.Spillable {
		p.spillers++
	}
	u := p.byName[c.Name]
	if u == nil {
		u = &usage{}
		p.byName[c.Name] = u
	}
	u.count++
	return &Reservation{pool: p, group: g, consumer: c}
}

// Stats is a snapshot of a pool.
type Stats struct {
	Limit, Reserved, Peak int64
	// Refusals counts reservations refused since the pool was made.
	Refusals int64
	// Consumers are the reservations by consumer name, sorted by name.
	Consumers []ConsumerStats
}

// ConsumerStats sums the live reservations of one consumer name.
type ConsumerStats struct {
	Name         string
	Bytes        int64
	Reservations int
}

// Stats returns a snapshot of the pool.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Stats{Limit: p.limit, Reserved: p.reserved, Peak: p.peak, Refusals: p.refusals}
	for name, u := range p.byName {
		if u.count > 0 || u.bytes > 0 {
			s.Consumers = append(s.Consumers, ConsumerStats{Name: name, Bytes: u.bytes, Reservations: u.count})
		}
	}
	slices.SortFunc(s.Consumers, func(a, b ConsumerStats) int { return cmp.Compare(a.Name, b.Name) })
	return s
}

// Group bounds the reservations made through it (one query's) by its own limit, inside the
// pool's. It is safe for concurrent use.
type Group struct {
	pool  *Pool
	name  string
	limit int64
	// reserved is guarded by pool.mu.
	reserved int64
}

// Group returns a group of reservations limited to limit bytes (<= 0: only the pool's limit).
// name says what the group is in errors ("this query").
func (p *Pool) Group(name string, limit int64) *Group {
	return &Group{pool: p, name: name, limit: max(limit, 0)}
}

// Reserve returns an empty reservation for c, counted toward the group and its pool.
func (g *Group) Reserve(c Consumer) *Reservation { return g.pool.reserve(c, g) }

// Pool is the pool the group reserves from.
func (g *Group) Pool() *Pool { return g.pool }

// Limit is the group's own limit (0: none).
func (g *Group) Limit() int64 { return g.limit }

// Reserved is what the group's reservations hold now.
func (g *Group) Reserved() int64 {
	g.pool.mu.Lock()
	defer g.pool.mu.Unlock()
	return g.reserved
}

// Reservation is memory one consumer holds. Its size grows and shrinks with what the consumer
// holds; Free gives all of it back. A Reservation is not safe for concurrent use: one consumer
// (an operator's partition, one partition of a dataset) owns it.
type Reservation struct {
	pool     *Pool
	group    *Group
	consumer Consumer
	size     int64
	freed    bool
}

// Size is what the reservation holds.
func (r *Reservation) Size() int64 { return r.size }

// Consumer is what the reservation is for.
func (r *Reservation) Consumer() Consumer { return r.consumer }

// TryGrow adds n bytes to the reservation, or refuses with errs.ResourceExhausted when that
// would pass the group's limit, the pool's limit or, for a spillable consumer, its fair share.
// Before refusing for the pool's limit it asks the pool's evictors and Reclaimer once, and
// before refusing for the fair share its evictors. A refused grow changes nothing.
func (r *Reservation) TryGrow(n int64) error {
	if n <= 0 {
		return nil
	}
	if r.freed {
		return errs.Internalf("memory reservation for %s grown after it was freed", r.consumer.Name)
	}
	p := r.pool
	p.mu.Lock()
	err, byGroup := r.fitsLocked(n)
	if err == nil {
		r.addLocked(n)
		p.mu.Unlock()
		return nil
	}
	if byGroup {
		// The group's limit refused it: freeing other holders does not help.
		p.refusals++
		p.mu.Unlock()
		return err
	}
	short, evictOnly := p.reserved+n-p.limit, false
	if short <= 0 {
		// The fair share refused it. Every unspillable byte given back raises each spiller's
		// share by its part; caches give theirs back for free, so the evictors are asked (not
		// the reclaimer, whose moves to disk would cost more than the spill they spare).
		share := (p.limit - p.unspillable) / int64(p.spillers)
		short, evictOnly = (r.size+n-share)*int64(p.spillers), true
	}
	p.mu.Unlock()
	p.free(short, evictOnly)
	// Checked again whatever the reclaimer freed: other holders may have given memory back
	// meanwhile (another reclaim moved what this one would have).
	p.mu.Lock()
	defer p.mu.Unlock()
	if err, _ = r.fitsLocked(n); err == nil {
		r.addLocked(n)
		return nil
	}
	p.refusals++
	return err
}

// fitsLocked reports why n more bytes do not fit (nil when they do), and whether the group's
// limit is why.
func (r *Reservation) fitsLocked(n int64) (err error, byGroup bool) {
	p, g := r.pool, r.group
	if g != nil && g.limit > 0 && g.reserved+n > g.limit {
		return errs.Exhaustedf("%s reached its memory limit of %s: %s held, %s more needed by %s",
			g.name, bytes(g.limit), bytes(g.reserved), bytes(n), r.consumer.Name), true
	}
	if p.limit == 0 {
		return nil, false
	}
	if p.reserved+n > p.limit {
		return errs.Exhaustedf("memory limit of %s reached: %s held, %s more needed by %s",
			bytes(p.limit), bytes(p.reserved), bytes(n), r.consumer.Name), false
	}
	if r.consumer.Spillable && p.spillers > 1 {
		share := (p.limit - p.unspillable) / int64(p.spillers)
		if r.size+n > share {
			return errs.Exhaustedf("memory limit of %s reached: %s is at its share of %s among %d spilling consumers, %s more needed",
				bytes(p.limit), r.consumer.Name, bytes(share), p.spillers, bytes(n)), false
		}
	}
	return nil, false
}

func (r *Reservation) addLocked(n int64) {
	p := r.pool
	r.size += n
	p.reserved += n
	p.peak = max(p.peak, p.reserved)
	if !r.consumer.Spillable {
		p.unspillable += n
	}
	if r.group != nil {
		r.group.reserved += n
	}
	p.byName[r.consumer.Name].bytes += n
}

// Grow adds n bytes whatever the limits: for memory already held that must be counted (a
// batch received from a peer). Prefer TryGrow.
func (r *Reservation) Grow(n int64) {
	if n <= 0 || r.freed {
		return
	}
	r.pool.mu.Lock()
	r.addLocked(n)
	r.pool.mu.Unlock()
}

// Shrink gives n bytes back (at most the reservation's size).
func (r *Reservation) Shrink(n int64) {
	n = min(n, r.size)
	if n <= 0 {
		return
	}
	r.pool.mu.Lock()
	r.addLocked(-n)
	r.pool.mu.Unlock()
}

// Resize makes the reservation size bytes: it grows with TryGrow's checks, or shrinks.
func (r *Reservation) Resize(size int64) error {
	if size >= r.size {
		return r.TryGrow(size - r.size)
	}
	r.Shrink(r.size - size)
	return nil
}

// Free gives the whole reservation back and retires it; freeing again does nothing.
func (r *Reservation) Free() {
	if r.freed {
		return
	}
	p := r.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.size > 0 {
		r.addLocked(-r.size)
	}
	r.freed = true
	if r.consumer.Spillable {
		p.spillers--
	}
	p.byName[r.consumer.Name].count--
}

func bytes(n int64) string { return humanize.IBytes(uint64(max(n, 0))) }
