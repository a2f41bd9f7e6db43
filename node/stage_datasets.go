package node

import (
	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/cluster"
)

// knowDatasets attaches to this node's catalog, without rows, each dataset st describes
// (cluster.Stage.Datasets) that the node has no object of at that generation: a node that holds
// no partition of a dataset can then plan st's query as the head did. The scheduler never
// gives such a node one of the dataset's tasks. A dataset attached so is the same object a
// later partition of that generation is stored into (heldDataset), and is dropped with the
// dataset (DropDataset). A newer generation already here is left alone: planning then fails
// on the pin, as it would have before.
func (rt *Runtime) knowDatasets(st cluster.Stage) error {
	if len(st.Datasets) == 0 {
		return nil
	}
	rt.datasetMu.Lock()
	defer rt.datasetMu.Unlock()
	for _, shape := range st.Datasets {
		current, ok := rt.eng.MemoryCatalog().Dataset(shape.Name)
		if ok && (generationOf(current, shape.Generation) != nil || current.Generation() > shape.Generation) {
			continue
		}
		schema, err := shape.ArrowSchema()
		if err != nil {
			return err
		}
		ds := memcat.NewDataset(shape.Name, shape.Generation, schema, shape.Partitions)
		if ok {
			ds.SetDisplaced(current)
		}
		if _, err := rt.eng.MemoryCatalog().AttachDataset(ds, true); err != nil {
			return err
		}
	}
	return nil
}
