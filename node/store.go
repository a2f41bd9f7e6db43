package node

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"golang.org/x/sync/errgroup"

	"github.com/cachedb/cachedb/catalog"
	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/safe"
)

// partitionWork starts the making of partition of partitions: it refuses a partition number out
// of range and a closing runtime, and returns ctx ended also when the runtime closes, and the
// function that ends it.
func (rt *Runtime) partitionWork(ctx context.Context, partition, partitions int) (context.Context, func(), error) {
	if partitions < 1 || partition < 0 || partition >= partitions {
		return nil, nil, errs.Invalidf("partition %d of %d does not exist", partition, partitions)
	}
	if rt.ctx.Err() != nil {
		return nil, nil, errClosed
	}
	ctx, stop := context.WithCancelCause(ctx)
	unlink := context.AfterFunc(rt.ctx, func() { stop(errClosed) })
	return ctx, func() { unlink(); stop(nil) }, nil
}

// Materialize implements cluster.DatasetStore: it runs the partition's part of the query and
// holds its batches in the engine's memory catalog, under the dataset's name at its generation.
// It stops when ctx ends or the runtime closes.
func (rt *Runtime) Materialize(ctx context.Context, req cluster.MaterializeRequest) (cluster.PartitionStats, error) {
	ctx, end, err := rt.partitionWork(ctx, req.Partition, req.Partitions)
	if err != nil {
		return cluster.PartitionStats{}, err
	}
	defer end()
	schema, batches, err := rt.makeBatches(ctx, req)
	if err != nil {
		return cluster.PartitionStats{}, err
	}
	data := memcat.NewPartData(schema, packPartition(batches, rt.alloc))
	ds, err := rt.heldDataset(req, schema)
	if err != nil {
		data.Drop()
		return cluster.PartitionStats{}, err
	}
	requests := int64(len(req.Tasks))
	if req.Whole {
		requests = 1
	}
	h := &heldPart{owner: rt, dataset: req.Dataset, gen: req.Generation, index: req.Partition, data: data, requests: requests, pinned: req.Pin == cluster.PinMemory}
	if err := rt.tiers.hold(h); err != nil {
		return cluster.PartitionStats{}, err
	}
	data.SetReload(func(ctx context.Context) error { return rt.remake(ctx, req, data) })
	old := ds.Parts()[req.Partition]
	if err := ds.SetPart(req.Partition, memcat.TieredPart(data)); err != nil {
		rt.tiers.release(data)
		return cluster.PartitionStats{}, err
	}
	rt.releasePart(old)
	return cluster.PartitionStats{Rows: data.Rows(), Bytes: data.Bytes()}, nil
}

// remake makes an evicted partition's rows again, as Materialize made them (same tasks in the
// same order at the same pins: the same rows in the same order), and holds them in a tier.
func (rt *Runtime) remake(ctx context.Context, req cluster.MaterializeRequest, data *memcat.PartData) error {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	unlink := context.AfterFunc(rt.ctx, func() { stop(errClosed) })
	defer unlink()
	_, batches, err := rt.makeBatches(ctx, req)
	if err != nil {
		return fmt.Errorf("making partition %d of dataset %q again after its eviction: %w", req.Partition, req.Dataset, err)
	}
	return rt.tiers.restore(data, packPartition(batches, rt.alloc))
}

// releasePart drops what a part the runtime made holds (a part replaced or a dataset dropped).
func (rt *Runtime) releasePart(p memcat.Part) {
	if p.Data != nil {
		rt.tiers.release(p.Data)
	}
}

// releaseDataset drops the parts of a dataset generation the runtime held.
func (rt *Runtime) releaseDataset(ds *memcat.Dataset) {
	for _, p := range ds.Parts() {
		rt.releasePart(p)
	}
}

// makeBatches runs a partition's part of the query (in ctx, which the caller ends when the
// runtime closes) and returns its rows in the schema it is held in. The partition keeps the
// rows, made first or again after an eviction, so its reads are catalog.ReadOnce: caches of
// the sources need not keep them too.
func (rt *Runtime) makeBatches(ctx context.Context, req cluster.MaterializeRequest) (*arrow.Schema, []arrow.RecordBatch, error) {
	ctx = engine.WithSession(catalog.WithReadOnce(ctx), engine.Session{Catalog: req.Catalog, Schema: req.Schema, Pins: req.Pins})
	var (
		schema  *arrow.Schema
		batches []arrow.RecordBatch
	)
	if req.Whole {
		res, err := rt.eng.Execute(ctx, req.SQL, nil)
		if err != nil {
			return nil, nil, err
		}
		if res.Reader == nil {
			return nil, nil, errs.Invalidf("a dataset is made from a query; this statement returns no rows")
		}
		if batches, err = drain(res.Reader); err != nil {
			return nil, nil, err
		}
		schema = res.Schema
	} else {
		// In task order: a partition made again after a node loss holds its rows in the same
		// order, which training reads rely on.
		var err error
		if schema, batches, err = rt.collectTasksInOrder(ctx, req.SQL, req.Tasks); err != nil {
			return nil, nil, err
		}
	}
	if len(req.Stored) > 0 {
		if len(req.Stored) != schema.NumFields() {
			releaseAll(batches)
			return nil, nil, errs.Invalidf("the dataset's query has %d columns, its stored types %d", schema.NumFields(), len(req.Stored))
		}
		schema = engine.HeldSchema(schema, req.Stored)
		held, err := castToStored(ctx, rt.taskContext(), batches, schema, req.Stored)
		releaseAll(batches)
		if err != nil {
			return nil, nil, err
		}
		batches = held
	}
	return schema, batches, nil
}

// heldDataset returns this node's dataset object for req's generation, attaching a new one on
// the first partition. A new generation displaces an older one (memcat.Dataset.Displaced): the
// older one stays readable by the head and becomes current again if the head drops the new one
// (making it failed), until the head drops the older one.
func (rt *Runtime) heldDataset(req cluster.MaterializeRequest, schema *arrow.Schema) (*memcat.Dataset, error) {
	rt.datasetMu.Lock()
	defer rt.datasetMu.Unlock()
	current, ok := rt.eng.MemoryCatalog().Dataset(req.Dataset)
	if ok {
		if ds := generationOf(current, req.Generation); ds != nil {
			return ds, nil
		}
		if current.Generation() > req.Generation {
			return nil, errs.Invalidf("dataset %q generation %d was replaced by generation %d", req.Dataset, req.Generation, current.Generation())
		}
	}
	ds := memcat.NewDataset(req.Dataset, req.Generation, schema, req.Partitions)
	if ok {
		ds.SetDisplaced(current)
	}
	if _, err := rt.eng.MemoryCatalog().AttachDataset(ds, true); err != nil {
		return nil, err
	}
	return ds, nil
}

// generationOf finds generation gen among ds and the generations it displaced.
func generationOf(ds *memcat.Dataset, gen uint64) *memcat.Dataset {
	for ; ds != nil; ds = ds.Displaced() {
		if ds.Generation() == gen {
			return ds
		}
	}
	return nil
}

// DropDataset implements cluster.DatasetStore. Dropping the current generation makes the one it
// displaced current again (the head dropped a generation it failed to make); dropping a
// displaced one frees it.
func (rt *Runtime) DropDataset(name string, generation uint64) {
	rt.datasetMu.Lock()
	defer rt.datasetMu.Unlock()
	current, ok := rt.eng.MemoryCatalog().Dataset(name)
	if !ok {
		return
	}
	if current.Generation() == generation {
		if prev := current.Displaced(); prev != nil {
			_, _ = rt.eng.MemoryCatalog().AttachDataset(prev, true)
		} else {
			rt.eng.MemoryCatalog().DetachDataset(name, generation)
		}
		rt.releaseDataset(current)
		return
	}
	for ds := current; ds.Displaced() != nil; ds = ds.Displaced() {
		if dropped := ds.Displaced(); dropped.Generation() == generation {
			ds.SetDisplaced(dropped.Displaced())
			rt.releaseDataset(dropped)
			return
		}
	}
}

// ReadPartition implements cluster.DatasetStore.
func (rt *Runtime) ReadPartition(ctx context.Context, name string, generation uint64, partition int, columns []int) (array.RecordReader, error) {
	current, ok := rt.eng.MemoryCatalog().Dataset(name)
	ds := generationOf(current, generation)
	if !ok || ds == nil {
		return nil, errs.Unavailablef("dataset %q generation %d is not held by this node", name, generation)
	}
	if partition < 0 || partition >= ds.NumPartitions() || !ds.Parts()[partition].Held() {
		return nil, errs.Unavailablef("partition %d of dataset %q is not held by this node", partition, name)
	}
	plan, err := ds.Scan(ctx, catalog.ScanRequest{Columns: columns})
	if err != nil {
		return nil, err
	}
	return plan.Tasks[partition].Open(ctx, rt.alloc)
}

// drain reads rdr to its end and releases it, returning its batches (retained).
func drain(rdr array.RecordReader) ([]arrow.RecordBatch, error) {
	defer rdr.Release()
	var out []arrow.RecordBatch
	for rdr.Next() {
		b := rdr.RecordBatch()
		b.Retain()
		out = append(out, b)
	}
	if err := rdr.Err(); err != nil {
		releaseAll(out)
		return nil, err
	}
	return out, nil
}

// collectTasksInOrder runs the given scan tasks (engine.PlanTasks) and returns all their rows:
// the tasks' rows in ascending task order, each task's in the order it reads them. Tasks run
// concurrently (up to the engine's partition count), but the result does not depend on their
// timing, so making a dataset partition again yields its rows in the same order.
func (rt *Runtime) collectTasksInOrder(ctx context.Context, sqlText string, tasks []int) (*arrow.Schema, []arrow.RecordBatch, error) {
	part, err := rt.eng.PlanTasks(ctx, sqlText, tasks)
	if err != nil {
		return nil, nil, err
	}
	tc := rt.taskContext()
	defer tc.Cache.Release()
	results := make([][]arrow.RecordBatch, part.Partitions())
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(rt.eng.Partitions())
	for i := range results {
		safe.Go(g, "dataset partition", func() error {
			rdr, err := part.Execute(gctx, i, tc)
			if err != nil {
				return err
			}
			results[i], err = drain(rdr)
			return err
		})
	}
	err = g.Wait()
	var out []arrow.RecordBatch
	for _, r := range results {
		out = append(out, r...)
	}
	if err != nil {
		releaseAll(out)
		return nil, nil, err
	}
	return part.Schema(), out, nil
}

// castToStored casts the columns of batches named in stored to their types in schema (the held
// schema, engine.HeldSchema: exact, the values were widened from them). The caller keeps its
// batches.
func castToStored(ctx context.Context, tc *exec.TaskContext, batches []arrow.RecordBatch, schema *arrow.Schema, stored []string) ([]arrow.RecordBatch, error) {
	out := make([]arrow.RecordBatch, 0, len(batches))
	for _, b := range batches {
		cols := make([]arrow.Array, b.NumCols())
		for i, c := range b.Columns() {
			if t := schema.Field(i).Type; stored[i] != "" && !arrow.TypeEqual(t, c.DataType()) {
				a, err := exec.CastArray(ctx, tc, c, t)
				if err != nil {
					releaseColumns(cols)
					releaseAll(out)
					return nil, errs.Internalf("holding column %q as %s: %v", schema.Field(i).Name, t, err)
				}
				cols[i] = a
				continue
			}
			c.Retain()
			cols[i] = c
		}
		out = append(out, array.NewRecordBatch(schema, cols, b.NumRows()))
		releaseColumns(cols)
	}
	return out, nil
}

func releaseColumns(cols []arrow.Array) {
	for _, c := range cols {
		if c != nil {
			c.Release()
		}
	}
}

func releaseAll(bs []arrow.RecordBatch) {
	for _, b := range bs {
		b.Release()
	}
}
