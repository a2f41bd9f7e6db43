package exec

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/stream"
)

// Scan reads a table: one partition per scan task. The tasks are planned when the operator is
// built (table.Scan is called exactly once), so every execution, including the re-executions of
// a correlated subquery, reads the same pinned table state. Columns of non-canonical types
// (narrow integers, unsigned integers, float32) are cast to int64 / float64, and the filters,
// written against the projected canonical schema, are applied to every batch. A scan may read
// columns only its filters need and output the others (NewFilteringScan).
type Scan struct {
	table   catalog.Table
	name    string
	req     catalog.ScanRequest
	filters []Expr
	plan    *catalog.ScanPlan
	source  *arrow.Schema // projected columns as the table stores them
	read    *arrow.Schema // projected columns with canonical types: what filters read
	schema  *arrow.Schema // the first columns of read: the output
}

// NewScan plans a scan of table (called name in EXPLAIN) for req and returns the operator.
func NewScan(table catalog.Table, name string, req catalog.ScanRequest, filters []Expr) (Operator, error) {
	return NewFilteringScan(table, name, req, filters, -1)
}

// NewFilteringScan is NewScan whose output is the first keep of the columns it reads (all of
// them when keep < 0): the others are read for the filters only, and a batch the filters
// narrow is gathered without them.
func NewFilteringScan(table catalog.Table, name string, req catalog.ScanRequest, filters []Expr, keep int) (Operator, error) {
	ts := table.Schema()
	cols := req.Columns
	if cols == nil {
		cols = make([]int, ts.NumFields())
		for i := range cols {
			cols[i] = i
		}
	}
	source := make([]arrow.Field, len(cols))
	canonical := make([]arrow.Field, len(cols))
	for i, c := range cols {
		if c < 0 || c >= ts.NumFields() {
			return nil, errs.Internalf("scan of %s asks for column %d of %d", name, c, ts.NumFields())
		}
		source[i] = ts.Field(c)
		canonical[i] = source[i]
		canonical[i].Type = CanonicalType(source[i].Type)
	}
	if keep < 0 {
		keep = len(cols)
	}
	if keep > len(cols) || (keep < len(cols) && len(filters) == 0) {
		return nil, errs.Internalf("scan of %s outputs %d of its %d columns with %d filters", name, keep, len(cols), len(filters))
	}
	plan, err := table.Scan(context.Background(), req)
	if err != nil {
		return nil, fmt.Errorf("plan scan of %s: %w", name, err)
	}
	read := arrow.NewSchema(canonical, nil)
	schema := read
	if keep < len(cols) {
		schema = arrow.NewSchema(canonical[:keep], nil)
	}
	return &Scan{
		table:   table,
		name:    name,
		req:     req,
		filters: filters,
		plan:    plan,
		source:  arrow.NewSchema(source, nil),
		read:    read,
		schema:  schema,
	}, nil
}

// CanonicalType maps the integer and float widths the engine does not compute with to the
// canonical int64 / float64; every other type is returned unchanged.
func CanonicalType(t arrow.DataType) arrow.DataType {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return arrow.PrimitiveTypes.Int64
	case arrow.FLOAT16, arrow.FLOAT32:
		return arrow.PrimitiveTypes.Float64
	}
	return t
}

func (s *Scan) Schema() *arrow.Schema { return s.schema }
func (s *Scan) Children() []Operator  { return nil }

// Partitions is the number of scan tasks (at least 1: a scan with no task yields nothing).
func (s *Scan) Partitions() int { return max(len(s.plan.Tasks), 1) }

// Table is the scanned table.
func (s *Scan) Table() catalog.Table { return s.table }

// TaskBytes estimates the bytes each partition (task) reads from storage, for spreading the
// partitions over data nodes; 1 for a task that cannot say, so such tasks count equally.
func (s *Scan) TaskBytes() []int64 {
	out := make([]int64, len(s.plan.Tasks))
	for i, t := range s.plan.Tasks {
		out[i] = 1
		if st, ok := t.(catalog.SizedTask); ok && st.EstimatedBytes() > 0 {
			out[i] = st.EstimatedBytes()
		}
	}
	return out
}

// TaskLocations says where each partition's (task's) rows are held: the data node address of a
// catalog.LocatedTask, "" for a task any node can read.
func (s *Scan) TaskLocations() []string {
	out := make([]string, len(s.plan.Tasks))
	for i, t := range s.plan.Tasks {
		if lt, ok := t.(catalog.LocatedTask); ok {
			out[i] = lt.Location()
		}
	}
	return out
}

// Located reports whether some task of the scan is held by one data node (a dataset
// partition; catalog.LocatedTask), whether or not this process holds it: every process that
// plans the scan answers alike, where TaskLocations differ between them.
func (s *Scan) Located() bool {
	for _, t := range s.plan.Tasks {
		if _, ok := t.(catalog.LocatedTask); ok {
			return true
		}
	}
	return false
}

// Fetched reports what the scan's tasks have read from storage so far, as key=value pairs
// ("" when the source does not say).
func (s *Scan) Fetched() string {
	if s.plan.Fetched == nil {
		return ""
	}
	return s.plan.Fetched()
}

// Filters are the conditions the scan applies to every batch.
func (s *Scan) Filters() []Expr { return s.filters }

func (s *Scan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Scan: %s", s.name)
	names := make([]string, s.schema.NumFields())
	for i, f := range s.schema.Fields() {
		names[i] = f.Name
	}
	fmt.Fprintf(&b, " [%s]", strings.Join(names, ", "))
	if len(s.filters) > 0 {
		parts := make([]string, len(s.filters))
		for i, f := range s.filters {
			parts[i] = f.String()
		}
		fmt.Fprintf(&b, " filters=[%s]", strings.Join(parts, ", "))
	}
	if s.req.Limit > 0 {
		fmt.Fprintf(&b, " limit=%d", s.req.Limit)
	}
	fmt.Fprintf(&b, " partitions=%d", s.Partitions())
	if s.plan.Explain != "" {
		b.WriteString(" ")
		b.WriteString(s.plan.Explain)
	}
	return b.String()
}

func (s *Scan) Execute(ctx context.Context, partition int, tc *TaskContext) (array.RecordReader, error) {
	if partition < 0 || partition >= s.Partitions() {
		return nil, errs.Internalf("scan of %s has %d partitions, asked for %d", s.name, s.Partitions(), partition)
	}
	if len(s.plan.Tasks) == 0 {
		return stream.Empty(s.schema), nil
	}
	in, err := s.plan.Tasks[partition].Open(ctx, tc.Alloc)
	if err != nil {
		return nil, fmt.Errorf("open scan of %s: %w", s.name, err)
	}
	pull := func() (arrow.RecordBatch, error) {
		for {
			b, err := nextNonEmpty(in)
			if b == nil || err != nil {
				if err != nil {
					err = fmt.Errorf("scan of %s: %w", s.name, err)
				}
				return nil, err
			}
			out, err := s.process(ctx, tc, b)
			b.Release()
			if err != nil || out != nil {
				return out, err
			}
		}
	}
	return stream.Pull(ctx, s.schema, pull, in.Release), nil
}

// process canonicalizes b's columns and applies the filters; nil means no row survived.
func (s *Scan) process(ctx context.Context, tc *TaskContext, b arrow.RecordBatch) (arrow.RecordBatch, error) {
	if b.NumCols() != int64(s.read.NumFields()) {
		return nil, errs.Internalf("scan of %s: task yielded %d columns, expected %d", s.name, b.NumCols(), s.read.NumFields())
	}
	cols := make([]arrow.Array, 0, s.read.NumFields())
	defer func() { releaseAll(cols) }()
	for i, f := range s.read.Fields() {
		col := b.Column(i)
		if arrow.TypeEqual(col.DataType(), f.Type) {
			col.Retain()
			cols = append(cols, col)
			continue
		}
		cast, err := CastArray(ctx, tc, col, f.Type)
		if err != nil {
			return nil, fmt.Errorf("scan of %s, column %q: %w", s.name, f.Name, err)
		}
		cols = append(cols, cast)
	}
	out := array.NewRecordBatch(s.read, cols, b.NumRows())
	if len(s.filters) == 0 {
		return out, nil
	}
	defer out.Release()
	return s.applyFilters(ctx, tc, out)
}
