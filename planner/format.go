package planner

import (
	"fmt"
	"strings"
)

// Format renders a logical plan as an indented tree, one node per line, for EXPLAIN.
func Format(p Plan) string {
	var b strings.Builder
	formatNode(&b, p, 0, map[*CTEKey]bool{})
	return b.String()
}

// formatNode writes p and its children; a shared CTE's plan is written under its first
// reference only (shown records which were written).
func formatNode(b *strings.Builder, p Plan, depth int, shown map[*CTEKey]bool) {
	b.WriteString(strings.Repeat("  ", depth))
	b.WriteString(describe(p))
	b.WriteByte('\n')
	if s, ok := p.(*SharedRef); ok && !shown[s.Key] {
		shown[s.Key] = true
		formatNode(b, s.Input, depth+1, shown)
	}
	for _, c := range p.Children() {
		formatNode(b, c, depth+1, shown)
	}
}

// describe is the one-line description of a node, without its children.
func describe(p Plan) string {
	switch p := p.(type) {
	case *Scan:
		s := fmt.Sprintf("Scan: %s", p.Name)
		if p.Alias != "" && !strings.EqualFold(p.Alias, p.Name) {
			s += " AS " + p.Alias
		}
		s += " columns=[" + columnNames(p.Columns) + "]"
		if len(p.Filters) > 0 {
			s += " filters=[" + exprList(p.Filters) + "]"
		}
		if p.Limit > 0 {
			s += fmt.Sprintf(" limit=%d", p.Limit)
		}
		return s
	case *Values:
		return fmt.Sprintf("Values: rows=%d columns=[%s]", len(p.Rows), columnNames(p.Columns))
	case *Filter:
		return "Filter: " + p.Cond.String()
	case *Project:
		parts := make([]string, len(p.Exprs))
		for i, e := range p.Exprs {
			parts[i] = fmt.Sprintf("%s AS %s#%d", e, p.Columns[i].Name, p.Columns[i].ID)
		}
		return "Project: " + strings.Join(parts, ", ")
	case *Aggregate:
		aggs := make([]Expr, len(p.Aggs))
		for i, a := range p.Aggs {
			aggs[i] = a
		}
		return fmt.Sprintf("Aggregate: group=[%s] aggs=[%s]", exprList(p.GroupBy), exprList(aggs))
	case *Join:
		s := fmt.Sprintf("Join: %s", p.Kind)
		if p.On != nil {
			s += " on " + p.On.String()
		}
		return s
	case *Sort:
		parts := make([]string, len(p.Keys))
		for i, k := range p.Keys {
			parts[i] = k.Expr.String()
			if k.Desc {
				parts[i] += " DESC"
			}
		}
		return "Sort: " + strings.Join(parts, ", ")
	case *Limit:
		return fmt.Sprintf("Limit: offset=%d count=%d", p.Offset, p.Count)
	case *Distinct:
		return "Distinct"
	case *Union:
		if p.All {
			return "Union: all"
		}
		return "Union: distinct"
	case *CTERef:
		return "CTE: " + p.Key.Name
	case *SharedRef:
		return fmt.Sprintf("Shared CTE: %s columns=[%s] (computed once per query)", p.Key.Name, columnNames(p.Columns))
	}
	return fmt.Sprintf("%T", p)
}

func columnNames(cs []Column) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%s#%d", c.Name, c.ID)
	}
	return strings.Join(parts, ", ")
}
