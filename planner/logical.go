// Package planner holds cachedb's logical plan, the optimizer that rewrites it, and the physical
// planner that turns it into exec operators.
package planner

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/catalog"
)

// Column is one output column of a logical plan node.
type Column struct {
	ID       ColumnID
	Name     string // output name (alias or column name)
	Table    string // qualifier it can be referenced by (table name or alias), "" if none
	Type     arrow.DataType
	Nullable bool
}

// Schema is the ordered list of a node's output columns.
type Schema []Column

// Plan is a node of a logical plan. The set of implementations is closed.
type Plan interface {
	// Schema lists the node's output columns.
	Schema() Schema
	// Children are the node's inputs (subquery plans inside expressions are not children).
	Children() []Plan
	plan()
}

// Scan reads a table. Columns[i] is table column Indices[i]. Filters, pushed down by the
// optimizer, are applied by the scan itself and reference only Columns and FilterColumns.
type Scan struct {
	Table   catalog.Table
	Name    string // table name as written
	Alias   string // alias, or the table name
	Columns []Column
	Indices []int
	Filters []Expr
	Limit   int64 // 0 = none; set only when Filters is empty
	// FilterColumns are columns only the Filters read: the scan reads them (table columns
	// FilterIndices) but does not output them. Column pruning sets them.
	FilterColumns []Column
	FilterIndices []int
}

// readColumns are the columns the scan reads: its output, then those only its filters read.
func (p *Scan) readColumns() ([]Column, []int) {
	if len(p.FilterColumns) == 0 {
		return p.Columns, p.Indices
	}
	cols := append(append([]Column(nil), p.Columns...), p.FilterColumns...)
	idx := append(append([]int(nil), p.Indices...), p.FilterIndices...)
	return cols, idx
}

// Values is a literal relation: rows of constant (or parameter) expressions. SELECT without
// FROM reads from a Values with one row and no columns.
type Values struct {
	Columns []Column
	Rows    [][]Expr
}

// Filter keeps the input rows for which Cond is TRUE.
type Filter struct {
	Input Plan
	Cond  Expr
}

// Project computes Exprs over each input row; Columns[i] is the output of Exprs[i].
type Project struct {
	Input   Plan
	Exprs   []Expr
	Columns []Column
}

// Aggregate groups the input by GroupBy and computes Aggs per group. Its output is the group
// keys followed by the aggregates: Columns[:len(GroupBy)] then Columns[len(GroupBy):]. With no
// GroupBy it yields exactly one row, even for empty input.
type Aggregate struct {
	Input   Plan
	GroupBy []Expr
	Aggs    []*AggregateCall
	Columns []Column
}

// JoinKind is the kind of a join.
type JoinKind int

const (
	InnerJoin JoinKind = iota
	LeftJoin
	CrossJoin
	// SemiJoin outputs left rows with at least one match (EXISTS, IN).
	SemiJoin
	// AntiJoin outputs left rows with no match (NOT EXISTS).
	AntiJoin
	// NullAwareAntiJoin is NOT IN: like AntiJoin, but a left row is dropped when the right side
	// has a NULL key or the left key is NULL and the right side is not empty.
	NullAwareAntiJoin
)

func (k JoinKind) String() string {
	return [...]string{"inner", "left", "cross", "semi", "anti", "null-aware anti"}[k]
}

// Join combines Left and Right. Output: Left's columns then Right's, except semi and anti joins
// which output Left's only. On is nil for a cross join. For LeftJoin, Right's columns are
// nullable in the output.
type Join struct {
	Left, Right Plan
	Kind        JoinKind
	On          Expr
	Columns     []Column
}

// SortKey is one ORDER BY key. MySQL puts NULLs first ascending and last descending.
type SortKey struct {
	Expr Expr
	Desc bool
}

// Sort orders the input. Keys reference only the input's columns.
type Sort struct {
	Input Plan
	Keys  []SortKey
}

// Limit skips Offset rows and returns at most Count (-1 = all).
type Limit struct {
	Input  Plan
	Offset int64
	Count  int64
}

// End is the number of input rows the limit can use, Offset + Count (Count >= 0), saturated at
// math.MaxInt64: both may be as large as int64 allows (MySQL takes unsigned 64-bit values).
func (p *Limit) End() int64 {
	if p.Count > math.MaxInt64-p.Offset {
		return math.MaxInt64
	}
	return p.Offset + p.Count
}

// Distinct removes duplicate rows (NULLs compare equal).
type Distinct struct {
	Input Plan
}

// Union concatenates its inputs, column by column; without All it removes duplicates. Columns
// carry the unified types; physical planning casts each input to them.
type Union struct {
	Inputs  []Plan
	All     bool
	Columns []Column
}

func (*Scan) plan()      {}
func (*Values) plan()    {}
func (*Filter) plan()    {}
func (*Project) plan()   {}
func (*Aggregate) plan() {}
func (*Join) plan()      {}
func (*Sort) plan()      {}
func (*Limit) plan()     {}
func (*Distinct) plan()  {}
func (*Union) plan()     {}

func (p *Scan) Schema() Schema      { return p.Columns }
func (p *Values) Schema() Schema    { return p.Columns }
func (p *Filter) Schema() Schema    { return p.Input.Schema() }
func (p *Project) Schema() Schema   { return p.Columns }
func (p *Aggregate) Schema() Schema { return p.Columns }
func (p *Join) Schema() Schema      { return p.Columns }
func (p *Sort) Schema() Schema      { return p.Input.Schema() }
func (p *Limit) Schema() Schema     { return p.Input.Schema() }
func (p *Distinct) Schema() Schema  { return p.Input.Schema() }
func (p *Union) Schema() Schema     { return p.Columns }

func (p *Scan) Children() []Plan      { return nil }
func (p *Values) Children() []Plan    { return nil }
func (p *Filter) Children() []Plan    { return []Plan{p.Input} }
func (p *Project) Children() []Plan   { return []Plan{p.Input} }
func (p *Aggregate) Children() []Plan { return []Plan{p.Input} }
func (p *Join) Children() []Plan      { return []Plan{p.Left, p.Right} }
func (p *Sort) Children() []Plan      { return []Plan{p.Input} }
func (p *Limit) Children() []Plan     { return []Plan{p.Input} }
func (p *Distinct) Children() []Plan  { return []Plan{p.Input} }
func (p *Union) Children() []Plan     { return p.Inputs }
