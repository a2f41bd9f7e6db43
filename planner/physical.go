package planner

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
)

// PhysicalOptions steer physical planning.
type PhysicalOptions struct {
	// Partitions is the number of partitions hash repartitions produce (default 1).
	Partitions int
	// Analyze wraps every operator so that EXPLAIN ANALYZE can report its metrics.
	Analyze bool
	// NoPushdown makes every scan read whole tables, all columns and no source-side filter,
	// and select its columns afterwards: the baseline that pushdown is measured against.
	NoPushdown bool
	// Nodes is the number of data nodes a distributed plan spreads over (0: plan for one
	// process). See PlanDistributed.
	Nodes int
}

// Physical turns an optimized logical plan into an operator tree. The root may have several
// partitions; the caller coalesces them if it needs one stream.
func Physical(p Plan, opts PhysicalOptions) (exec.Operator, error) {
	if opts.Partitions <= 0 {
		opts.Partitions = 1
	}
	pp := &physicalPlanner{opts: opts}
	return pp.plan(p)
}

// physicalPlanner converts one plan. outer is the stack of input schemas of the enclosing
// queries while a subquery plan is converted (innermost last): a column reference that the
// subquery does not produce resolves to the row of one of them.
type physicalPlanner struct {
	opts  PhysicalOptions
	outer []Schema
	// placed holds the placement of each operator whose partitions run on data nodes, while a
	// distributed plan is built (nil otherwise); scans and shuffles number them.
	placed   map[exec.Operator]exec.Placement
	scans    []*exec.Scan
	shuffles int
	// local is set when the plan reads a table that only this process has (a memory or system
	// table): data nodes could not plan it.
	local bool
	// est estimates the sides of semi and anti joins (see buildLeft); made on first use.
	est *estimator
	// replicating is above 0 while a replicated join side is planned (planReplicated).
	replicating int
	// shared holds the operator computing each shared CTE (see planShared), made on first use.
	shared map[*CTEKey]*exec.SharedResult
}

func (pp *physicalPlanner) plan(p Plan) (exec.Operator, error) {
	op, err := pp.planNode(p)
	if err != nil {
		return nil, err
	}
	return pp.instrument(op), nil
}

// instrument wraps op for EXPLAIN ANALYZE when asked to (exec.Instrument); the wrapper runs
// where op runs, so it takes op's placement on the data nodes.
func (pp *physicalPlanner) instrument(op exec.Operator) exec.Operator {
	if !pp.opts.Analyze {
		return op
	}
	wrapped := exec.Instrument(op)
	if pl, ok := pp.placed[op]; ok {
		pp.placed[wrapped] = pl
	}
	return wrapped
}

func (pp *physicalPlanner) planNode(p Plan) (exec.Operator, error) {
	switch p := p.(type) {
	case *Scan:
		return pp.planScan(p)
	case *Values:
		return pp.planValues(p)
	case *Filter:
		in, err := pp.plan(p.Input)
		if err != nil {
			return nil, err
		}
		if HasSubquery(p.Cond) {
			in = pp.gather(in)
		}
		cond, err := pp.expr(p.Cond, p.Input.Schema())
		if err != nil {
			return nil, err
		}
		return pp.inherit(exec.NewFilter(in, cond), in), nil
	case *Project:
		in, err := pp.plan(p.Input)
		if err != nil {
			return nil, err
		}
		if anySubquery(p.Exprs) {
			in = pp.gather(in)
		}
		exprs, err := pp.exprs(p.Exprs, p.Input.Schema())
		if err != nil {
			return nil, err
		}
		return pp.inherit(exec.NewProject(in, exprs, names(p.Columns)), in), nil
	case *Aggregate:
		return pp.planAggregate(p)
	case *Join:
		return pp.planJoin(p)
	case *Sort:
		return pp.planSort(p, 0)
	case *Limit:
		return pp.planLimit(p)
	case *Distinct:
		in, err := pp.plan(p.Input)
		if err != nil {
			return nil, err
		}
		schema := p.Input.Schema()
		keys := make([]exec.Expr, len(schema))
		for i, c := range schema {
			keys[i] = exec.NewColumn(i, c.Name, c.Type)
		}
		return pp.aggregate(in, keys, names(schema), nil, false)
	case *Union:
		return pp.planUnion(p)
	case *CTERef:
		return pp.plan(p.Input)
	case *SharedRef:
		return pp.planShared(p)
	}
	return nil, errs.Internalf("no physical plan for %T", p)
}

func (pp *physicalPlanner) planScan(p *Scan) (exec.Operator, error) {
	cols, idx := p.readColumns()
	filters, err := pp.exprs(p.Filters, cols)
	if err != nil {
		return nil, err
	}
	if pp.opts.NoPushdown {
		return pp.planWholeScan(p)
	}
	req := catalog.ScanRequest{Columns: idx, Limit: p.Limit, Filter: scanFilter(p)}
	op, err := exec.NewFilteringScan(p.Table, p.Name, req, filters, len(p.Columns))
	if err != nil {
		return nil, err
	}
	return pp.placeScan(op, op), nil
}

// planWholeScan reads every column of p's table with no source-side filter, then filters and
// projects to p's columns in exec (PhysicalOptions.NoPushdown).
func (pp *physicalPlanner) planWholeScan(p *Scan) (exec.Operator, error) {
	all := make([]Column, p.Table.Schema().NumFields())
	for i, f := range p.Table.Schema().Fields() {
		all[i] = Column{ID: -ColumnID(i) - 1, Name: f.Name, Type: f.Type, Nullable: f.Nullable}
	}
	read, at := p.readColumns()
	for i, c := range read {
		all[at[i]] = c
	}
	filters, err := pp.exprs(p.Filters, all)
	if err != nil {
		return nil, err
	}
	var op exec.Operator
	op, err = exec.NewScan(p.Table, p.Name, catalog.ScanRequest{}, filters)
	if err != nil {
		return nil, err
	}
	scan := op
	op = pp.instrument(op)
	cols := make([]exec.Expr, len(p.Indices))
	for i, idx := range p.Indices {
		cols[i] = exec.NewColumn(idx, p.Columns[i].Name, op.Schema().Field(idx).Type)
	}
	return pp.placeScan(exec.NewProject(op, cols, names(p.Columns)), scan), nil
}

func (pp *physicalPlanner) planValues(p *Values) (exec.Operator, error) {
	rows := make([][]exec.Expr, len(p.Rows))
	for i, r := range p.Rows {
		row, err := pp.exprs(r, nil)
		if err != nil {
			return nil, err
		}
		rows[i] = row
	}
	return exec.NewValues(arrowSchema(p.Columns), rows)
}

// planAggregate splits a grouped aggregation into a partial stage per input partition, a hash
// repartition on the group keys and a final stage, so that it can run in parallel (and later on
// several nodes). DISTINCT aggregates, and input that is a single partition anyway, run in one
// stage.
func (pp *physicalPlanner) planAggregate(p *Aggregate) (exec.Operator, error) {
	in, err := pp.plan(p.Input)
	if err != nil {
		return nil, err
	}
	inSchema := p.Input.Schema()
	keys, err := pp.exprs(p.GroupBy, inSchema)
	if err != nil {
		return nil, err
	}
	specs := make([]exec.AggregateSpec, len(p.Aggs))
	distinct := false
	for i, a := range p.Aggs {
		args, err := pp.exprs(a.Args, inSchema)
		if err != nil {
			return nil, err
		}
		specs[i] = exec.AggregateSpec{Name: p.Columns[len(p.GroupBy)+i].Name, Func: a.Func, Args: args, Distinct: a.Distinct}
		distinct = distinct || a.Distinct
	}
	return pp.aggregate(in, keys, names(p.Columns[:len(p.GroupBy)]), specs, distinct)
}

func (pp *physicalPlanner) aggregate(in exec.Operator, keys []exec.Expr, keyNames []string, specs []exec.AggregateSpec, distinct bool) (exec.Operator, error) {
	if pp.isPlaced(in) {
		return pp.distributedAggregate(in, keys, keyNames, specs, distinct)
	}
	if distinct || in.Partitions() == 1 {
		return exec.NewHashAggregate(pp.single(in), keys, keyNames, specs, exec.AggregateSingle)
	}
	partial, err := exec.NewHashAggregate(in, keys, keyNames, specs, exec.AggregatePartial)
	if err != nil {
		return nil, err
	}
	// The final stage groups by the partial stage's key columns, which come first in its output.
	finalKeys := make([]exec.Expr, len(keys))
	for i, k := range keys {
		finalKeys[i] = exec.NewColumn(i, keyNames[i], k.DataType())
	}
	var merged exec.Operator
	if len(keys) == 0 {
		merged = exec.NewCoalesce(partial)
	} else {
		merged = exec.NewRepartition(partial, finalKeys, pp.opts.Partitions)
	}
	return exec.NewHashAggregate(merged, finalKeys, keyNames, specs, exec.AggregateFinal)
}

// distributedAggregate aggregates input whose partitions run on data nodes: partial aggregates
// where the input is, a shuffle of the partial groups by key and the final aggregate per bucket
// (or, without keys, gathered). DISTINCT aggregates shuffle the input rows themselves and
// aggregate each bucket in one stage.
func (pp *physicalPlanner) distributedAggregate(in exec.Operator, keys []exec.Expr, keyNames []string, specs []exec.AggregateSpec, distinct bool) (exec.Operator, error) {
	if distinct {
		shuffled := pp.shuffle(in, keys)
		op, err := exec.NewHashAggregate(shuffled, keys, keyNames, specs, exec.AggregateSingle)
		if err != nil {
			return nil, err
		}
		return pp.inherit(op, shuffled), nil
	}
	partial, err := exec.NewHashAggregate(in, keys, keyNames, specs, exec.AggregatePartial)
	if err != nil {
		return nil, err
	}
	pp.inherit(partial, in)
	finalKeys := make([]exec.Expr, len(keys))
	for i, k := range keys {
		finalKeys[i] = exec.NewColumn(i, keyNames[i], k.DataType())
	}
	merged := pp.shuffle(partial, finalKeys)
	op, err := exec.NewHashAggregate(merged, finalKeys, keyNames, specs, exec.AggregateFinal)
	if err != nil {
		return nil, err
	}
	return pp.inherit(op, merged), nil
}

// single returns op with its partitions merged into one (gathered from the data nodes when
// they run there).
func (pp *physicalPlanner) single(op exec.Operator) exec.Operator {
	op = pp.gather(op)
	if op.Partitions() == 1 {
		return op
	}
	return exec.NewCoalesce(op)
}

func (pp *physicalPlanner) planJoin(p *Join) (exec.Operator, error) {
	left, err := pp.plan(p.Left)
	if err != nil {
		return nil, err
	}
	ls, rs := p.Left.Schema(), p.Right.Schema()
	both := append(append(Schema{}, ls...), rs...)
	kind := execJoinKind(p.Kind)
	lkeys, rkeys, residual := splitEquiKeys(p.On, SchemaIDs(ls), SchemaIDs(rs))
	maxRows := float64(replicateMaxRows)
	if located(left) {
		maxRows = replicateDatasetMaxRows
	}
	if pp.isPlaced(left) && len(lkeys) > 0 && replicateRight(pp.estimator(), p, pp.opts.Nodes, maxRows) {
		right, err := pp.planReplicated(p.Right)
		if err != nil {
			return nil, err
		}
		if right != nil {
			lk, rk, res, err := pp.joinExprs(lkeys, rkeys, residual, ls, rs)
			if err != nil {
				return nil, err
			}
			op, err := exec.NewReplicatedHashJoin(left, right, pp.placed[left], kind, lk, rk, res)
			if err != nil {
				return nil, err
			}
			return pp.inherit(op, left), nil
		}
	}
	right, err := pp.plan(p.Right)
	if err != nil {
		return nil, err
	}
	if pp.isPlaced(left) && pp.isPlaced(right) && len(lkeys) > 0 && p.Kind != NullAwareAntiJoin && !HasSubquery(p.On) {
		buildLeft := pp.buildLeft(p)
		if !buildLeft && pp.broadcastRight(p) {
			return pp.broadcastJoin(left, right, kind, lkeys, rkeys, residual, ls, rs)
		}
		return pp.partitionedJoin(left, right, kind, lkeys, rkeys, residual, ls, rs, buildLeft)
	}
	left, right = pp.gather(left), pp.gather(right)
	if p.On == nil {
		if p.Kind == NullAwareAntiJoin {
			return nil, errs.Internalf("null-aware anti join without a condition")
		}
		return exec.NewNestedLoopJoin(left, right, kind, nil)
	}
	if len(lkeys) == 0 || (p.Kind == NullAwareAntiJoin && residual != nil) {
		if p.Kind == NullAwareAntiJoin {
			return nil, errs.Internalf("null-aware anti join needs a plain equality condition")
		}
		cond, err := pp.expr(p.On, both)
		if err != nil {
			return nil, err
		}
		return exec.NewNestedLoopJoin(left, right, kind, cond)
	}
	lk, rk, res, err := pp.joinExprs(lkeys, rkeys, residual, ls, rs)
	if err != nil {
		return nil, err
	}
	if pp.buildLeft(p) {
		return exec.NewLeftBuildHashJoin(left, right, kind, lk, rk, res)
	}
	return exec.NewHashJoin(left, right, kind, lk, rk, res)
}

// joinExprs compiles an equi-join's key expressions over each side and its residual condition
// over both sides (nil when there is none).
func (pp *physicalPlanner) joinExprs(lkeys, rkeys []Expr, residual Expr, ls, rs Schema) (lk, rk []exec.Expr, res exec.Expr, err error) {
	if lk, err = pp.exprs(lkeys, ls); err != nil {
		return nil, nil, nil, err
	}
	if rk, err = pp.exprs(rkeys, rs); err != nil {
		return nil, nil, nil, err
	}
	if residual != nil {
		if res, err = pp.expr(residual, append(append(Schema{}, ls...), rs...)); err != nil {
			return nil, nil, nil, err
		}
	}
	return lk, rk, res, nil
}

// partitionedJoin joins two distributed sides on node p over bucket p of each, both shuffled by
// their join keys cast to the types the join compares in.
// With buildLeft (a semi or anti join whose left side is estimated smaller), each partition
// hashes its left bucket and streams its right bucket through it (PartitionedLeftBuildJoin).
func (pp *physicalPlanner) partitionedJoin(left, right exec.Operator, kind exec.JoinKind, lkeys, rkeys []Expr, residual Expr, ls, rs Schema, buildLeft bool) (exec.Operator, error) {
	lk, rk, res, err := pp.joinExprs(lkeys, rkeys, residual, ls, rs)
	if err != nil {
		return nil, err
	}
	types, err := exec.JoinKeyTypes(lk, rk)
	if err != nil {
		return nil, err
	}
	hashKeys := func(keys []exec.Expr) ([]exec.Expr, error) {
		out := make([]exec.Expr, len(keys))
		for i, k := range keys {
			out[i] = k
			if !arrow.TypeEqual(k.DataType(), types[i]) {
				if out[i], err = exec.NewCast(k, types[i]); err != nil {
					return nil, err
				}
			}
		}
		return out, nil
	}
	lh, err := hashKeys(lk)
	if err != nil {
		return nil, err
	}
	rh, err := hashKeys(rk)
	if err != nil {
		return nil, err
	}
	lshuf, rshuf := pp.shuffle(left, lh), pp.shuffle(right, rh)
	if buildLeft {
		op, err := exec.NewPartitionedLeftBuildJoin(lshuf, rshuf, kind, lk, rk, res)
		if err != nil {
			return nil, err
		}
		return pp.inherit(op, lshuf), nil
	}
	op, err := exec.NewPartitionedHashJoin(lshuf, rshuf, kind, lk, rk, res)
	if err != nil {
		return nil, err
	}
	return pp.inherit(op, lshuf), nil
}

func execJoinKind(k JoinKind) exec.JoinKind {
	switch k {
	case LeftJoin:
		return exec.LeftJoin
	case SemiJoin:
		return exec.SemiJoin
	case AntiJoin:
		return exec.AntiJoin
	case NullAwareAntiJoin:
		return exec.NullAwareAntiJoin
	}
	return exec.InnerJoin
}

// splitEquiKeys takes the conjuncts of on of the form l = r, with l over the left side only and
// r over the right side only (or the reverse), as hash-join keys; the rest is the residual.
func splitEquiKeys(on Expr, left, right map[ColumnID]bool) (lkeys, rkeys []Expr, residual Expr) {
	var rest []Expr
	for _, c := range conjuncts(on) {
		call, ok := c.(*Call)
		if ok && call.Func == "=" && len(call.Args) == 2 && !HasSubquery(call) {
			a, b := call.Args[0], call.Args[1]
			switch {
			case onlyFrom(a, left) && onlyFrom(b, right) && !isConstant(a) && !isConstant(b):
				lkeys, rkeys = append(lkeys, a), append(rkeys, b)
				continue
			case onlyFrom(a, right) && onlyFrom(b, left) && !isConstant(a) && !isConstant(b):
				lkeys, rkeys = append(lkeys, b), append(rkeys, a)
				continue
			}
		}
		rest = append(rest, c)
	}
	return lkeys, rkeys, and(rest...)
}

func (pp *physicalPlanner) planSort(p *Sort, fetch int64) (exec.Operator, error) {
	in, err := pp.plan(p.Input)
	if err != nil {
		return nil, err
	}
	in = pp.gather(in)
	keys := make([]exec.SortKey, len(p.Keys))
	for i, k := range p.Keys {
		e, err := pp.expr(k.Expr, p.Input.Schema())
		if err != nil {
			return nil, err
		}
		keys[i] = exec.SortKey{Expr: e, Desc: k.Desc}
	}
	return exec.NewSort(in, keys, fetch), nil
}

// planLimit turns LIMIT over ORDER BY into a top-k sort.
func (pp *physicalPlanner) planLimit(p *Limit) (exec.Operator, error) {
	var in exec.Operator
	var err error
	if s, ok := p.Input.(*Sort); ok && p.Count >= 0 {
		in, err = pp.planSort(s, p.End())
		if err == nil {
			in = pp.instrument(in)
		}
	} else {
		in, err = pp.plan(p.Input)
	}
	if err != nil {
		return nil, err
	}
	return exec.NewLimit(pp.single(in), p.Offset, p.Count), nil
}

func (pp *physicalPlanner) planUnion(p *Union) (exec.Operator, error) {
	inputs := make([]exec.Operator, len(p.Inputs))
	for i, child := range p.Inputs {
		op, err := pp.plan(child)
		if err != nil {
			return nil, err
		}
		op, err = castColumns(pp.gather(op), child.Schema(), p.Columns)
		if err != nil {
			return nil, err
		}
		inputs[i] = op
	}
	u, err := exec.NewUnion(inputs)
	if err != nil {
		return nil, err
	}
	if p.All {
		return u, nil
	}
	keys := make([]exec.Expr, len(p.Columns))
	for i, c := range p.Columns {
		keys[i] = exec.NewColumn(i, c.Name, c.Type)
	}
	return pp.aggregate(u, keys, names(p.Columns), nil, false)
}

// castColumns projects op (whose columns are from) to the names and types of to.
func castColumns(op exec.Operator, from, to Schema) (exec.Operator, error) {
	same := true
	exprs := make([]exec.Expr, len(to))
	for i, c := range to {
		var e exec.Expr = exec.NewColumn(i, from[i].Name, from[i].Type)
		if !arrow.TypeEqual(from[i].Type, c.Type) {
			same = false
			var err error
			if e, err = exec.NewCast(e, c.Type); err != nil {
				return nil, err
			}
		}
		exprs[i] = e
	}
	if same {
		return op, nil
	}
	return exec.NewProject(op, exprs, names(to)), nil
}

func names(s Schema) []string {
	out := make([]string, len(s))
	for i, c := range s {
		out[i] = c.Name
	}
	return out
}

func arrowSchema(s Schema) *arrow.Schema {
	fields := make([]arrow.Field, len(s))
	for i, c := range s {
		fields[i] = arrow.Field{Name: c.Name, Type: c.Type, Nullable: true}
	}
	return arrow.NewSchema(fields, nil)
}
