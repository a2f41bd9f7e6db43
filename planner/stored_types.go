package planner

import (
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

// narrowable reports whether t is a type scans widen and that a cast back restores exactly.
func narrowable(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.FLOAT32:
		return true
	}
	return false
}
