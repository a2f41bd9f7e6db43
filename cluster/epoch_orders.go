package cluster

import (
	"fmt"
	"hash/fnv"
	"slices"

	lru "github.com/hashicorp/golang-lru/v2"
)

// EpochOrders keeps the epoch orders a process made most recently, so that the many segments of
// one epoch it serves (one per stretch of a reader's share) lay the order out once: at 10^8 rows
// an order takes about 10 ms to make, a segment's data a few. Orders are immutable; it is safe
// for concurrent use.
type EpochOrders struct {
	cache *lru.Cache[string, *EpochOrder]
}

// NewEpochOrders returns a cache of the size most recent orders (at least 1).
func NewEpochOrders(size int) *EpochOrders {
	c, err := lru.New[string, *EpochOrder](max(size, 1))
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &EpochOrders{cache: c}
}

// Get returns the order NewEpochOrder makes of these arguments, made once while it stays among
// the most recent.
func (c *EpochOrders) Get(partRows []int64, seed uint64, epoch int64, shuffle bool, mixing EpochMixing, chunkRows, windowRows int) (*EpochOrder, error) {
	h := fnv.New64a()
	var b [8]byte
	for _, n := range partRows {
		for i := range b {
			b[i] = byte(uint64(n) >> (8 * i))
		}
		h.Write(b[:])
	}
	key := fmt.Sprintf("%d/%x/%d/%d/%t/%d/%d/%d", len(partRows), h.Sum64(), seed, epoch, shuffle, mixing, chunkRows, windowRows)
	if o, ok := c.cache.Get(key); ok && slices.Equal(o.PartRows, partRows) {
		return o, nil
	}
	o, err := NewEpochOrder(slices.Clone(partRows), seed, epoch, shuffle, mixing, chunkRows, windowRows)
	if err != nil {
		return nil, err
	}
	c.cache.Add(key, o)
	return o, nil
}
