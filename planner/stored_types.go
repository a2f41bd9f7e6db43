package planner

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/exec"
)

// StoredTypes returns, for each output column of p, the type its table stores it as when the
// column is a table column passed through unchanged (through projections by column reference,
// filters, sorts, limits and DISTINCT) and the scan widened it to the engine's canonical type:
// int8 to uint32 and float32 (exec.CanonicalType). Every other entry is nil. Casting such a
// column back to its stored type is exact: its values came from that type.
func StoredTypes(p Plan) []arrow.DataType {
	stored := map[ColumnID]arrow.DataType{}
	var walk func(Plan)
	walk = func(n Plan) {
		if s, ok := n.(*Scan); ok {
			fields := s.Table.Schema().Fields()
			for i, c := range s.Columns {
				if t := fields[s.Indices[i]].Type; narrowable(t) && arrow.TypeEqual(c.Type, exec.CanonicalType(t)) {
					stored[c.ID] = t
				}
			}
		}
		for _, ch := range n.Children() {
			walk(ch)
		}
	}
	walk(p)
	out := make([]arrow.DataType, len(p.Schema()))
	for i, c := range p.Schema() {
		id := c.ID
		if proj, ok := p.(*Project); ok {
			ref, isRef := proj.Exprs[i].(*ColumnRef)
			if !isRef {
				continue
			}
			id = ref.ID
		}
		if t, ok := stored[id]; ok && arrow.TypeEqual(c.Type, exec.CanonicalType(t)) {
			out[i] = t
		}
	}
	return out
}

// NarrowTypes are the types scans widen to the engine's canonical types and that a cast back
// restores exactly: the types StoredTypes can report.
var NarrowTypes = []arrow.DataType{
	arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32,
	arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32,
	arrow.PrimitiveTypes.Float32,
}

func narrowable(t arrow.DataType) bool {
	return slices.ContainsFunc(NarrowTypes, func(n arrow.DataType) bool { return arrow.TypeEqual(n, t) })
}
