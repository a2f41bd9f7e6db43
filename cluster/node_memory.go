package cluster

import (
	"context"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/mempool"
	"github.com/cachedb/cachedb/internal/safe"
)

// ActionNodeMemory (data node): empty body, one result NodeMemory. The head gathers it for
// system.memory, system.partitions and system.datasets, and to admit dataset loads.
const ActionNodeMemory = "cachedb.node-memory"

// nodeMemoryTimeout bounds one node's answer to ActionNodeMemory: a node that does not answer
// in time shows its error instead of holding a system-table query up.
const nodeMemoryTimeout = 5 * time.Second

// NodeMemory is what a process holds: its memory pool, its disk tier and the dataset partitions
// in them.
type NodeMemory struct {
	// Process names the process (data nodes running in one process share its pool and disk).
	Process string        `json:"process"`
	Memory  mempool.Stats `json:"memory"`
	// DiskUsed and DiskLimit measure the disk tier (both 0 without one; DiskLimit is the used
	// plus free space when no limit is set).
	DiskUsed  int64 `json:"disk_used"`
	DiskLimit int64 `json:"disk_limit"`
	// DiskTier says whether the process has a disk tier.
	DiskTier   bool             `json:"disk_tier"`
	Partitions []PartitionFacts `json:"partitions,omitempty"`
}

// PartitionFacts describe one dataset partition a node holds.
type PartitionFacts struct {
	Dataset    string `json:"dataset"`
	Generation uint64 `json:"generation"`
	Partition  int    `json:"partition"`
	// Tier is memory, disk or evicted (made again when read).
	Tier string `json:"tier"`
	Rows int64  `json:"rows"`
	// Bytes is the partition's Arrow size; DiskBytes its file's on the disk tier.
	Bytes     int64 `json:"bytes"`
	DiskBytes int64 `json:"disk_bytes"`
	Reads     int64 `json:"reads"`
	// LastRead is zero when the partition was never read.
	LastRead time.Time `json:"last_read,omitzero"`
	// RebuildRequests are the object-store requests (scan tasks) making it again costs.
	RebuildRequests int64 `json:"rebuild_requests"`
	Pinned          bool  `json:"pinned,omitempty"`
}

// NodeMemoryReport is one node's NodeMemory as the head gathered it.
type NodeMemoryReport struct {
	Node   Node
	Memory NodeMemory
	// Err is set when the node did not answer.
	Err error
}

// NodeMemory asks every node that is not lost for its NodeMemory, concurrently; the reports
// are in node ID order.
func (d *Datasets) NodeMemory(ctx context.Context) []NodeMemoryReport {
	return d.nodeMemoryOf(ctx, ReachableNodes(d.cfg.Membership.Nodes()))
}

// nodeMemoryOf asks the given nodes for their NodeMemory, concurrently.
func (d *Datasets) nodeMemoryOf(ctx context.Context, nodes []Node) []NodeMemoryReport {
	out := make([]NodeMemoryReport, len(nodes))
	var g errgroup.Group
	for i, n := range nodes {
		out[i].Node = n
		safe.Go(&g, "node memory report", func() error {
			actx, cancel := context.WithTimeout(ctx, nodeMemoryTimeout)
			defer cancel()
			out[i].Err = d.clients.action(actx, n.Addr, ActionNodeMemory, nil, &out[i].Memory)
			return nil
		})
	}
	_ = g.Wait()
	return out
}

// ArrowExpansion is how much larger a dataset is held (as Arrow batches) than the bytes its scan
// tasks read (Parquet, compressed and encoded), for admitting loads: Parquet is usually 2 to 5
// times smaller than Arrow, but a projection or a filter reads less than the whole files the
// estimate counts, so 2 errs on the side of admitting.
const ArrowExpansion = 2

// admit refuses a job whose estimated size (its partitions' estimated bytes × ArrowExpansion)
// does not fit in what the data nodes have free in memory and on disk, before anything is read.
// A job whose size is unknown, or a cluster whose free space is (a node without a memory limit,
// or one that does not answer), is admitted.
func (d *Datasets) admit(ctx context.Context, job DatasetJob) error {
	var read int64
	for _, p := range job.Parts {
		read += p.Bytes
	}
	need := read * ArrowExpansion
	if need <= 0 {
		return nil
	}
	var memFree, diskFree int64
	seen := map[string]bool{}
	for _, r := range d.nodeMemoryOf(ctx, PlacementNodes(d.cfg.Membership.Nodes())) {
		if r.Err != nil || r.Memory.Memory.Limit <= 0 {
			return nil
		}
		if r.Memory.Process != "" && seen[r.Memory.Process] {
			continue
		}
		seen[r.Memory.Process] = true
		memFree += max(r.Memory.Memory.Limit-r.Memory.Memory.Reserved, 0)
		if r.Memory.DiskTier {
			diskFree += max(r.Memory.DiskLimit-r.Memory.DiskUsed, 0)
		}
	}
	if len(seen) == 0 || need <= memFree+diskFree {
		return nil
	}
	return errs.Exhaustedf("dataset %q needs about %s (its scan reads %s; held as Arrow about %d times that) but the data nodes have %s free (%s of memory, %s of disk): drop a dataset, add data nodes, or raise --memory-limit or --disk-limit",
		job.Name, mempool.FormatBytes(need), mempool.FormatBytes(read), ArrowExpansion, mempool.FormatBytes(memFree+diskFree), mempool.FormatBytes(memFree), mempool.FormatBytes(diskFree))
}
