package cluster

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/internal/errs"
)

// DatasetShape describes a dataset to a data node that holds none of its partitions, so that
// the node can plan a query over it as the head did (same schema, same partitions, so the same
// scans and task numbering) and take part in the query's other stages: the node reads none of
// the dataset's tasks itself, the head places them on the nodes that hold them.
type DatasetShape struct {
	// Name and Generation name the dataset as the node's catalog attaches it.
	Name       string `json:"name"`
	Generation uint64 `json:"generation"`
	// Partitions is the dataset's partition count (one scan task each).
	Partitions int `json:"partitions"`
	// Schema is the dataset's schema as Arrow IPC (flight.SerializeSchema).
	Schema []byte `json:"schema"`
}

// NewDatasetShape describes the dataset name at generation gen.
func NewDatasetShape(name string, gen uint64, partitions int, schema *arrow.Schema) DatasetShape {
	return DatasetShape{Name: name, Generation: gen, Partitions: partitions, Schema: flight.SerializeSchema(schema, memory.DefaultAllocator)}
}

// ArrowSchema decodes the dataset's schema.
func (s DatasetShape) ArrowSchema() (*arrow.Schema, error) {
	schema, err := flight.DeserializeSchema(s.Schema, memory.DefaultAllocator)
	if err != nil {
		return nil, errs.Invalidf("the stage's description of dataset %q has no readable schema: %v", s.Name, err)
	}
	return schema, nil
}
