package exec

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
)

// AggregateSpec is one aggregate computed by a HashAggregate: Func (count, sum, avg, min, max,
// any_value, group_concat, bit_and, bit_or, bit_xor; "count" with no Args is COUNT(*)) over Args,
// output as column Name.
type AggregateSpec struct {
	Name     string
	Func     string
	Args     []Expr
	Distinct bool
}

// AggregateMode says which stage of a (possibly two-stage) aggregation a HashAggregate runs.
type AggregateMode int

const (
	// AggregateSingle computes final results from raw input rows.
	AggregateSingle AggregateMode = iota
	// AggregatePartial computes intermediate states from raw input rows.
	AggregatePartial
	// AggregateFinal merges intermediate states produced by a Partial stage into final results.
	AggregateFinal
)

func (m AggregateMode) String() string {
	switch m {
	case AggregatePartial:
		return "partial"
	case AggregateFinal:
		return "final"
	default:
		return "single"
	}
}

// HashAggregate groups its input by the groupBy expressions and computes aggregates per group,
// each partition independently (the planner puts a Coalesce or a hash Repartition below it so
// that every group lives in one partition).
//
// Output schema: the group columns (named groupNames, typed as the groupBy expressions), then per
// aggregate:
//   - Single and Final: one column named spec.Name of the ResolveAggregate type.
//   - Partial: its state columns, named spec.Name when there is one and spec.Name + "#i" (i from
//     0) otherwise: count → [count int64]; sum → [sum]; avg → [sum, count int64]; min, max,
//     any_value → [value]; group_concat → [string]; bit_* → [int64].
//
// Final mode's input is exactly a Partial stage's output (possibly repartitioned). Pass Final the
// same aggs as the Partial: their Args are used only for DataType() to resolve the function and
// its state layout, never evaluated; the state columns are read by position, starting right after
// the group columns. Final's groupBy are evaluated against its input, so the planner passes column
// references to the Partial's group columns (positions 0..len(groupBy)-1).
//
// With no group keys, Single and Final output exactly one row per partition, even for empty input
// (COUNT 0, other aggregates NULL); Partial likewise outputs one state row per partition. Groups
// appear in the order their first row was seen. DISTINCT aggregates are supported in Single mode
// only.
type HashAggregate struct {
	input      Operator
	groupBy    []Expr
	groupNames []string
	aggs       []AggregateSpec
	mode       AggregateMode
	defs       []*aggregateDef
	schema     *arrow.Schema
	// mergeStates makes a Final stage output merged states (the Partial layout) instead of
	// results: how a spilled Partial stage re-aggregates its flushed states.
	mergeStates bool
}

// NewHashAggregate builds a HashAggregate; see HashAggregate for the contract. It returns an
// error when an aggregate does not resolve, when DISTINCT is asked for outside Single mode, or
// when a Final stage's input does not have the partial layout.
func NewHashAggregate(input Operator, groupBy []Expr, groupNames []string, aggs []AggregateSpec, mode AggregateMode) (Operator, error) {
	if len(groupNames) != len(groupBy) {
		return nil, errs.Internalf("hash aggregate has %d group expressions but %d names", len(groupBy), len(groupNames))
	}
	fields := make([]arrow.Field, 0, len(groupBy)+len(aggs))
	for i, g := range groupBy {
		fields = append(fields, arrow.Field{Name: groupNames[i], Type: g.DataType(), Nullable: true})
	}
	defs := make([]*aggregateDef, len(aggs))
	for i, spec := range aggs {
		if spec.Distinct && mode != AggregateSingle {
			return nil, errs.Unsupportedf("DISTINCT aggregate %s cannot run in %s mode", spec.Func, mode)
		}
		argTypes := make([]arrow.DataType, len(spec.Args))
		for j, a := range spec.Args {
			argTypes[j] = a.DataType()
		}
		def, err := resolveAggregateDef(spec.Func, argTypes, spec.Distinct)
		if err != nil {
			return nil, fmt.Errorf("aggregate %s: %w", spec.Name, err)
		}
		defs[i] = def
		if mode != AggregatePartial {
			fields = append(fields, arrow.Field{Name: spec.Name, Type: def.result, Nullable: true})
			continue
		}
		for j, st := range def.states {
			name := spec.Name
			if len(def.states) > 1 {
				name = fmt.Sprintf("%s#%d", spec.Name, j)
			}
			fields = append(fields, arrow.Field{Name: name, Type: st, Nullable: true})
		}
	}
	if mode != AggregateFinal {
		aggs = shareAggregateArgs(aggs)
	}
	h := &HashAggregate{
		input: input, groupBy: groupBy, groupNames: groupNames, aggs: aggs, mode: mode,
		defs: defs, schema: arrow.NewSchema(fields, nil),
	}
	if mode == AggregateFinal {
		if err := h.checkFinalInput(); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// checkFinalInput verifies that the input carries every aggregate's state columns, by position.
func (h *HashAggregate) checkFinalInput() error {
	in := h.input.Schema()
	pos := len(h.groupBy)
	for i, def := range h.defs {
		for _, st := range def.states {
			if pos >= in.NumFields() || !arrow.TypeEqual(in.Field(pos).Type, st) {
				return errs.Internalf("final aggregate %s expects a %s state column at input position %d", h.aggs[i].Name, st, pos)
			}
			pos++
		}
	}
	return nil
}

func (h *HashAggregate) Schema() *arrow.Schema { return h.schema }
func (h *HashAggregate) Children() []Operator  { return []Operator{h.input} }
func (h *HashAggregate) Partitions() int       { return h.input.Partitions() }

// Mode returns the stage this node runs.
func (h *HashAggregate) Mode() AggregateMode { return h.mode }

// String describes the node, e.g. HashAggregate(mode=partial, group=[a, b], aggs=[count(*), sum(c)]).
func (h *HashAggregate) String() string {
	groups := make([]string, len(h.groupBy))
	for i, g := range h.groupBy {
		groups[i] = g.String()
	}
	aggs := make([]string, len(h.aggs))
	for i, a := range h.aggs {
		aggs[i] = aggSpecString(a)
	}
	return fmt.Sprintf("HashAggregate(mode=%s, group=[%s], aggs=[%s])", h.mode, strings.Join(groups, ", "), strings.Join(aggs, ", "))
}

// aggSpecString renders an aggregate call as SQL, e.g. count(DISTINCT a).
func aggSpecString(a AggregateSpec) string {
	if len(a.Args) == 0 {
		return strings.ToLower(a.Func) + "(*)"
	}
	args := make([]string, len(a.Args))
	for i, e := range a.Args {
		args[i] = e.String()
	}
	d := ""
	if a.Distinct {
		d = "DISTINCT "
	}
	return fmt.Sprintf("%s(%s%s)", strings.ToLower(a.Func), d, strings.Join(args, ", "))
}

// Execute aggregates one partition: it drains the input partition, then streams the groups.
func (h *HashAggregate) Execute(ctx context.Context, partition int, tc *TaskContext) (array.RecordReader, error) {
	input, err := h.input.Execute(ctx, partition, tc)
	if err != nil {
		return nil, err
	}
	return newHashAggregateStream(ctx, h, input, tc), nil
}

// shareAggregateArgs returns a copy of aggs whose arguments' common subexpressions are
// evaluated once per batch (shareSubexprs; the stream keeps the memo).
func shareAggregateArgs(aggs []AggregateSpec) []AggregateSpec {
	var all []Expr
	for _, a := range aggs {
		all = append(all, a.Args...)
	}
	shared := shareSubexprs(all)
	out := make([]AggregateSpec, len(aggs))
	for i, a := range aggs {
		out[i] = a
		out[i].Args = shared[:len(a.Args):len(a.Args)]
		shared = shared[len(a.Args):]
	}
	return out
}
