package node

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/mempool"
)

// partitionsConsumer is what dataset partitions held in memory reserve as. They are not
// spillable in the pool's sense (they do not share a fair part); the store moves them to disk
// itself when the pool asks its reclaimer.
var partitionsConsumer = mempool.Consumer{Name: cluster.PartitionsConsumer}

// requestCostBytes is what one object-store request (a scan task: one file or row group) costs
// to make a partition again, in bytes read: about 50 ms of request latency at 160 MB/s.
const requestCostBytes = 8 << 20

// Tiers places the dataset partitions a process holds in tiers: memory (reserved from the
// process's pool), an Arrow IPC file on local disk, or evicted (made again from the pinned
// source when next read). A partition is held in memory when its reservation is granted; when
// the pool is short (a reservation refused, or the pool's reclaimer asked), the coldest, cheapest
// to rebuild partitions move to disk; when the disk is full too, the same score picks the files
// evicted. A partition of a dataset pinned to memory never leaves memory.
//
// One Tiers serves every runtime of a process (a head running in-process data nodes shares
// one): it is the reclaimer of the process's pool. It is safe for concurrent use.
type Tiers struct {
	// process names the process in NodeMemory reports.
	process   string
	pool      *mempool.Pool
	dir       string // "" when there is no disk tier
	diskLimit int64  // 0: the free space of dir's file system
	forceDisk bool
	now       func() time.Time

	mu       sync.Mutex
	parts    map[*memcat.PartData]*heldPart
	diskUsed int64
	seq      int64
	// moved is broadcast (with mu) whenever a reclaim's move of a partition to disk ends.
	moved *sync.Cond
}

// heldPart is what the store keeps of one partition.
type heldPart struct {
	owner   *Runtime
	dataset string
	gen     uint64
	index   int
	data    *memcat.PartData
	// res holds the partition's memory while it is in memory (nil otherwise).
	res *mempool.Reservation
	// requests are the scan tasks that made it: the object-store requests making it again costs.
	requests int64
	pinned   bool
	// noSource is set for a partition nothing can make again (an ingested dataset's): it may
	// move to disk, but it is never evicted.
	noSource bool
	// moving is set while a move to disk or an eviction of it is under way.
	moving bool
	// made is when the partition was made (its heat before its first read).
	made      time.Time
	diskBytes int64
}

// TiersConfig configures a process's tiers.
type TiersConfig struct {
	// Pool is the process's memory budget; the tiers install themselves as its reclaimer.
	Pool *mempool.Pool
	// DiskDir is the disk tier's directory ("": no disk tier; partitions that do not fit in
	// memory are refused). The tiers write to a directory of their own under it, removed by
	// Close.
	DiskDir string
	// DiskLimit bounds the disk tier's files (0: the file system's free space).
	DiskLimit int64
	// ForceDisk puts every partition not pinned to memory on disk as soon as it is made (a test
	// mode; ForceDiskEnv sets it too).
	ForceDisk bool
}

// ForceDiskEnv, set to anything, makes every Tiers ForceDisk (with a temporary directory when
// it has none): a test mode that runs any suite, or a server, with partitions served from the
// disk tier.
const ForceDiskEnv = "CACHEDB_TEST_PARTITIONS_ON_DISK"

// NewTiers returns a process's tiers; Close ends them.
func NewTiers(cfg TiersConfig) (*Tiers, error) {
	if cfg.Pool == nil {
		cfg.Pool = mempool.Unlimited()
	}
	if os.Getenv(ForceDiskEnv) != "" {
		cfg.ForceDisk = true
		if cfg.DiskDir == "" {
			cfg.DiskDir = os.TempDir()
		}
	}
	pool, dir := cfg.Pool, cfg.DiskDir
	s := &Tiers{process: cluster.NewBootID(), pool: pool, diskLimit: cfg.DiskLimit, forceDisk: cfg.ForceDisk, now: time.Now, parts: map[*memcat.PartData]*heldPart{}}
	s.moved = sync.NewCond(&s.mu)
	if dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, errs.Invalidf("disk tier directory %s: %v", dir, err)
		}
		own, err := os.MkdirTemp(dir, "cachedb-partitions-")
		if err != nil {
			return nil, errs.Invalidf("disk tier directory %s: %v", dir, err)
		}
		s.dir = own
	}
	pool.SetReclaimer(s.reclaim)
	return s, nil
}

// Close drops every partition and removes the tiers' directory.
func (s *Tiers) Close() {
	s.pool.SetReclaimer(nil)
	s.mu.Lock()
	parts := s.parts
	s.parts = map[*memcat.PartData]*heldPart{}
	s.mu.Unlock()
	for _, h := range parts {
		h.data.Drop()
		if h.res != nil {
			h.res.Free()
		}
	}
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}

// hold places a partition just made (data, in memory) in a tier: memory when its reservation is
// granted (the pool's reclaimer may move others to disk for it), else disk. It fails with
// errs.ResourceExhausted when neither has room, or when a pinned partition does not fit in
// memory; data is dropped then.
func (s *Tiers) hold(h *heldPart) error {
	h.made = s.now()
	if s.forceDisk && s.dir != "" && !h.pinned {
		return s.holdOnDisk(h, nil)
	}
	res := s.pool.Reserve(partitionsConsumer)
	err := res.TryGrow(h.data.Bytes())
	if err == nil {
		h.res = res
		s.mu.Lock()
		s.parts[h.data] = h
		s.mu.Unlock()
		return nil
	}
	res.Free()
	if h.pinned {
		h.data.Drop()
		return fmt.Errorf("partition %d of dataset %q is pinned to memory: %w", h.index, h.dataset, err)
	}
	if s.dir == "" {
		h.data.Drop()
		return fmt.Errorf("partition %d of dataset %q does not fit in memory and this node has no disk tier (--disk-dir): %w", h.index, h.dataset, err)
	}
	return s.holdOnDisk(h, err)
}

// holdOnDisk writes a new partition to disk and holds it there; refused says why memory did not
// take it (nil: the disk was asked first).
func (s *Tiers) holdOnDisk(h *heldPart, refused error) error {
	size, err := s.moveToDisk(h, func(path string) (int64, error) { return h.data.ToDisk(path) })
	if err != nil {
		h.data.Drop()
		if refused != nil {
			return fmt.Errorf("partition %d of dataset %q fits neither in memory (%v) nor on disk: %w", h.index, h.dataset, refused, err)
		}
		return err
	}
	h.diskBytes = size
	s.mu.Lock()
	s.parts[h.data] = h
	s.mu.Unlock()
	return nil
}

// moveToDisk makes room on disk for a partition of h's size (evicting colder files), then writes
// it with write. The room is counted before the write and corrected after it.
func (s *Tiers) moveToDisk(h *heldPart, write func(path string) (int64, error)) (int64, error) {
	// An Arrow IPC file is about the partition's Arrow size (buffers padded to 8 bytes, plus
	// metadata).
	need := h.data.Bytes() + 4096
	if err := s.makeDiskRoom(h, need); err != nil {
		return 0, err
	}
	s.mu.Lock()
	s.seq++
	path := filepath.Join(s.dir, fmt.Sprintf("%s-%d-%d-%d.arrow", safeFileName(h.dataset), h.gen, h.index, s.seq))
	s.mu.Unlock()
	size, err := write(path)
	s.mu.Lock()
	if err != nil {
		s.diskUsed -= need
	} else {
		s.diskUsed += size - need
	}
	s.mu.Unlock()
	return size, err
}

// makeDiskRoom counts need bytes of disk for h, evicting the partitions on disk with the lowest
// score until they fit under the limit; errs.ResourceExhausted, evicting nothing, when they
// cannot.
func (s *Tiers) makeDiskRoom(h *heldPart, need int64) error {
	for {
		s.mu.Lock()
		limit := s.diskLimit
		if limit == 0 {
			limit = s.diskUsed + freeSpace(s.dir)
		}
		if s.diskUsed+need <= limit {
			s.diskUsed += need
			s.mu.Unlock()
			return nil
		}
		victims := s.victimsLocked(memcat.TierDisk, h)
		var evictable int64
		for _, v := range victims {
			evictable += v.diskBytes
		}
		// Evict nothing when evicting everything would not make room.
		if len(victims) == 0 || s.diskUsed-evictable+need > limit {
			used := s.diskUsed
			s.mu.Unlock()
			return errs.Exhaustedf("the disk tier of this node is full: partition %d of dataset %q needs %s, %s of %s is used (evicting what can be would not make room)",
				h.index, h.dataset, mempool.FormatBytes(need), mempool.FormatBytes(used), mempool.FormatBytes(limit))
		}
		v := victims[0]
		v.moving = true
		s.mu.Unlock()
		freed := v.data.Evict()
		s.mu.Lock()
		v.moving = false
		if s.parts[v.data] == v {
			// (A release meanwhile counted the file's bytes off already.)
			s.diskUsed -= freed
			v.diskBytes = 0
		}
		s.mu.Unlock()
	}
}

// reclaim is the pool's Reclaimer: it moves partitions from memory to disk, lowest score first,
// until need bytes are freed or none is left to move. When all it could move would not free
// need bytes, it moves nothing: the reservation is refused anyway.
func (s *Tiers) reclaim(need int64) int64 {
	if s.dir == "" {
		return 0
	}
	s.mu.Lock()
	var movable int64
	for _, h := range s.victimsLocked(memcat.TierMemory, nil) {
		movable += h.data.Bytes()
	}
	if movable < need {
		// Other reclaims may be moving partitions right now (operators of one query ask at
		// once): their memory comes back when the moves end. Wait for them, and let the caller
		// try again (a positive answer) if any ended.
		waited := s.waitForMovesLocked()
		s.mu.Unlock()
		if waited {
			return 1
		}
		return 0
	}
	s.mu.Unlock()
	var freed int64
	for freed < need {
		s.mu.Lock()
		victims := s.victimsLocked(memcat.TierMemory, nil)
		if len(victims) == 0 {
			// The others are being moved by other reclaims: what they free lets the caller
			// try again.
			if s.waitForMovesLocked() && freed == 0 {
				freed = 1
			}
			s.mu.Unlock()
			break
		}
		v := victims[0]
		v.moving = true
		s.mu.Unlock()
		size, err := s.moveToDisk(v, func(path string) (int64, error) { return v.data.ToDisk(path) })
		s.mu.Lock()
		v.moving = false
		s.moved.Broadcast()
		if err != nil {
			s.mu.Unlock()
			// The disk is full of what cannot be evicted (or failed): memory stays short.
			break
		}
		if s.parts[v.data] != v {
			// Released while it was written: its file went with it.
			s.diskUsed -= size
			s.mu.Unlock()
			continue
		}
		v.diskBytes = size
		res := v.res
		v.res = nil
		s.mu.Unlock()
		if res != nil {
			freed += res.Size()
			res.Free()
		}
	}
	return freed
}

// waitForMovesLocked waits (s.mu held) until no partition in memory is being moved to disk,
// and reports whether there was one to wait for.
func (s *Tiers) waitForMovesLocked() bool {
	waited := false
	for s.movingToDiskLocked() > 0 {
		s.moved.Wait()
		waited = true
	}
	return waited
}

// movingToDiskLocked counts the partitions in memory being moved out of it.
func (s *Tiers) movingToDiskLocked() int {
	n := 0
	for _, h := range s.parts {
		if h.moving && h.data.Tier() == memcat.TierMemory {
			n++
		}
	}
	return n
}

// victimsLocked lists the partitions in tier that may be moved out of it (not pinned, not being
// moved, not except; out of the disk tier, only those that can be made again), lowest score
// first.
func (s *Tiers) victimsLocked(tier memcat.Tier, except *heldPart) []*heldPart {
	now := s.now()
	type scored struct {
		h     *heldPart
		score float64
	}
	var out []scored
	for _, h := range s.parts {
		if h == except || h.pinned || h.moving || h.data.Tier() != tier || h.noSource && tier == memcat.TierDisk {
			continue
		}
		out = append(out, scored{h, h.score(now)})
	}
	slices.SortFunc(out, func(a, b scored) int {
		if c := cmp.Compare(a.score, b.score); c != 0 {
			return c
		}
		return cmp.Compare(a.h.made.UnixNano(), b.h.made.UnixNano())
	})
	hs := make([]*heldPart, len(out))
	for i, o := range out {
		hs[i] = o.h
	}
	return hs
}

// score is what keeping the partition where it is is worth per byte it holds: its heat (reads,
// discounted by the minutes since the last one, or since it was made) times what making it
// again costs (its bytes plus requestCostBytes per object-store request), over its bytes. The
// lowest scores go first: cold partitions that are cheap to make again.
func (h *heldPart) score(now time.Time) float64 {
	st := h.data.Stats()
	last := h.made
	if st.LastRead.After(last) {
		last = st.LastRead
	}
	idle := max(now.Sub(last), 0).Minutes()
	heat := float64(1+st.Reads) / (1 + idle)
	bytes := max(st.Bytes, 1)
	cost := float64(bytes + h.requests*requestCostBytes)
	return heat * cost / float64(bytes)
}

// release drops a partition for good (its dataset was dropped or it was made again).
func (s *Tiers) release(data *memcat.PartData) {
	s.mu.Lock()
	h := s.parts[data]
	var res *mempool.Reservation
	if h != nil {
		delete(s.parts, data)
		res, h.res = h.res, nil
		s.diskUsed -= h.diskBytes
		h.diskBytes = 0
	}
	s.mu.Unlock()
	data.Drop()
	if res != nil {
		res.Free()
	}
}

// releaseOwner drops every partition rt holds (rt closes).
func (s *Tiers) releaseOwner(rt *Runtime) {
	s.mu.Lock()
	var mine []*memcat.PartData
	for data, h := range s.parts {
		if h.owner == rt {
			mine = append(mine, data)
		}
	}
	s.mu.Unlock()
	for _, data := range mine {
		s.release(data)
	}
}

// restore holds the rows of an evicted partition made again: in memory when the pool grants
// them, else on disk.
func (s *Tiers) restore(data *memcat.PartData, batches []arrow.RecordBatch) error {
	s.mu.Lock()
	h := s.parts[data]
	s.mu.Unlock()
	if h == nil {
		releaseAll(batches)
		return errs.Unavailablef("partition was dropped from this node")
	}
	if !s.forceDisk || h.pinned {
		res := s.pool.Reserve(partitionsConsumer)
		if err := res.TryGrow(data.Bytes()); err == nil {
			if err := data.Restore(batches); err != nil {
				res.Free()
				return err
			}
			s.mu.Lock()
			h.res = res
			s.mu.Unlock()
			return nil
		}
		res.Free()
	}
	size, err := s.moveToDisk(h, func(path string) (int64, error) { return data.RestoreToDisk(batches, path) })
	if err != nil {
		return err
	}
	s.mu.Lock()
	h.diskBytes = size
	s.mu.Unlock()
	return nil
}

// facts lists the partitions held (by owner, when not nil), by dataset, generation and
// partition.
func (s *Tiers) facts(owner *Runtime) []cluster.PartitionFacts {
	s.mu.Lock()
	hs := make([]*heldPart, 0, len(s.parts))
	for _, h := range s.parts {
		if owner == nil || h.owner == owner {
			hs = append(hs, h)
		}
	}
	s.mu.Unlock()
	out := make([]cluster.PartitionFacts, 0, len(hs))
	for _, h := range hs {
		st := h.data.Stats()
		out = append(out, cluster.PartitionFacts{Dataset: h.dataset, Generation: h.gen, Partition: h.index, Tier: string(st.Tier), Rows: st.Rows,
			Bytes: st.Bytes, DiskBytes: st.DiskBytes, Reads: st.Reads, LastRead: st.LastRead, RebuildRequests: h.requests, Pinned: h.pinned})
	}
	slices.SortFunc(out, func(a, b cluster.PartitionFacts) int {
		return cmp.Or(cmp.Compare(a.Dataset, b.Dataset), cmp.Compare(a.Generation, b.Generation), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// diskFacts returns the disk tier's use and limit (the limit is the used plus free space when
// none is set; both 0 without a disk tier).
func (s *Tiers) diskFacts() (used, limit int64) {
	if s.dir == "" {
		return 0, 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	limit = s.diskLimit
	if limit == 0 {
		limit = s.diskUsed + freeSpace(s.dir)
	}
	return s.diskUsed, limit
}

// freeSpace is what the file system of dir has free for this process (0 when unknown).
// FreeSpace is the space free to this process on dir's file system (0 when it cannot be read).
func FreeSpace(dir string) int64 { return freeSpace(dir) }

func freeSpace(dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// safeFileName keeps letters, digits and _ of a dataset name (datasets are named so anyway).
func safeFileName(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, name)
}

// Memory reports what the process holds: its pool, its disk tier and every partition of its
// runtimes (the head's row of system.memory).
func (s *Tiers) Memory() cluster.NodeMemory {
	used, limit := s.diskFacts()
	return cluster.NodeMemory{Process: s.process, Memory: s.pool.Stats(), DiskUsed: used, DiskLimit: limit, DiskTier: s.dir != "", Partitions: s.facts(nil)}
}

// Memory reports what the runtime holds for ActionNodeMemory: the process's pool and disk tier
// (shared by the runtimes of one process) and the partitions this runtime made.
func (rt *Runtime) Memory() cluster.NodeMemory {
	used, limit := rt.tiers.diskFacts()
	return cluster.NodeMemory{Process: rt.tiers.process, Memory: rt.tiers.pool.Stats(), DiskUsed: used, DiskLimit: limit, DiskTier: rt.tiers.dir != "", Partitions: rt.tiers.facts(rt)}
}
