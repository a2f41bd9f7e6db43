package exec

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/stream"
)

// Project computes one output column per expression over each input batch. Output fields are
// nullable, named by names, and typed by the expressions' DataType.
type Project struct {
	input  Operator
	exprs  []Expr
	schema *arrow.Schema
}

// NewProject returns an operator computing exprs over input's rows; names[i] names exprs[i]
// (a missing name falls back to the expression's text).
func NewProject(input Operator, exprs []Expr, names []string) Operator {
	fields := make([]arrow.Field, len(exprs))
	for i, e := range exprs {
		var name string
		if i < len(names) {
			name = names[i]
		} else {
			name = e.String() // only when unnamed: the text of a deep expression is costly
		}
		fields[i] = arrow.Field{Name: name, Type: e.DataType(), Nullable: true}
	}
	return &Project{input: input, exprs: exprs, schema: arrow.NewSchema(fields, nil)}
}

func (p *Project) Schema() *arrow.Schema { return p.schema }
func (p *Project) Children() []Operator  { return []Operator{p.input} }
func (p *Project) Partitions() int       { return p.input.Partitions() }
func (p *Project) Exprs() []Expr         { return p.exprs }

func (p *Project) String() string {
	parts := make([]string, len(p.exprs))
	for i, e := range p.exprs {
		parts[i] = e.String()
		if name := p.schema.Field(i).Name; name != parts[i] {
			parts[i] += " AS " + name
		}
	}
	return fmt.Sprintf("Project: %s", strings.Join(parts, ", "))
}

func (p *Project) Execute(ctx context.Context, partition int, tc *TaskContext) (array.RecordReader, error) {
	in, err := p.input.Execute(ctx, partition, tc)
	if err != nil {
		return nil, err
	}
	pull := func() (arrow.RecordBatch, error) {
		b, err := nextNonEmpty(in)
		if b == nil || err != nil {
			return nil, err
		}
		defer b.Release()
		return evalColumns(ctx, tc, p.schema, p.exprs, b)
	}
	return stream.Pull(ctx, p.schema, pull, in.Release), nil
}

// evalColumns evaluates exprs over batch into a new batch of schema with batch's row count.
func evalColumns(ctx context.Context, tc *TaskContext, schema *arrow.Schema, exprs []Expr, batch arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, 0, len(exprs))
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for i, e := range exprs {
		c, err := e.Eval(ctx, tc, batch)
		if err != nil {
			return nil, err
		}
		cols = append(cols, c)
		if err := checkColumn(schema.Field(i), c, batch.NumRows()); err != nil {
			return nil, fmt.Errorf("evaluate %s: %w", e, err)
		}
	}
	return array.NewRecordBatch(schema, cols, batch.NumRows()), nil
}

// checkColumn verifies that col fits field and has rows elements, so that building a record
// batch from it cannot panic on an expression that broke its contract.
func checkColumn(field arrow.Field, col arrow.Array, rows int64) error {
	if !arrow.TypeEqual(field.Type, col.DataType()) {
		return errs.Internalf("column %q: expected type %s, got %s", field.Name, field.Type, col.DataType())
	}
	if int64(col.Len()) != rows {
		return errs.Internalf("column %q: expected %d rows, got %d", field.Name, rows, col.Len())
	}
	return nil
}
