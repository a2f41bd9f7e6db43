package engine

import (
	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/exec"
)

// DatasetShapes returns the shapes (cluster.Stage.Datasets), by name, of the datasets the plan
// reads that some node among nodes (Flight addresses) holds no partition of: such a node learns
// the dataset from the stage to plan the query. A dataset every node holds a partition of needs
// no shape, which keeps tickets small.
func (p *DistributedPlan) DatasetShapes(nodes []string) map[string]cluster.DatasetShape {
	var out map[string]cluster.DatasetShape
	for _, ds := range p.datasets {
		holders := map[string]bool{}
		for _, part := range ds.Parts() {
			holders[part.Location] = true
		}
		every := true
		for _, n := range nodes {
			every = every && holders[n]
		}
		if every {
			continue
		}
		if out == nil {
			out = map[string]cluster.DatasetShape{}
		}
		out[ds.Name()] = cluster.NewDatasetShape(ds.Name(), ds.Generation(), ds.NumPartitions(), ds.Schema())
	}
	return out
}

// scannedDatasets returns the datasets among scans, each once.
func scannedDatasets(scans []*exec.Scan) []*memcat.Dataset {
	var out []*memcat.Dataset
	for _, s := range scans {
		if ds, ok := s.Table().(*memcat.Dataset); ok && !containsDataset(out, ds) {
			out = append(out, ds)
		}
	}
	return out
}

func containsDataset(list []*memcat.Dataset, ds *memcat.Dataset) bool {
	for _, d := range list {
		if d == ds {
			return true
		}
	}
	return false
}
