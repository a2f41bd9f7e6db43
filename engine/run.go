package engine

import (
	"context"
	"errors"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/cachedb/cachedb/catalog"
	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/mempool"
	"github.com/cachedb/cachedb/internal/stream"
	"github.com/cachedb/cachedb/planner"
	"github.com/cachedb/cachedb/sql"
)

// New returns an engine over a fresh in-memory catalog holding the demo table (unless
// cfg.NoDemo).
func New(cfg Config) (*Engine, error) {
	if cfg.CatalogName == "" {
		cfg.CatalogName = "cachedb"
	}
	if cfg.Partitions <= 0 {
		cfg.Partitions = 2
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = exec.DefaultBatchSize
	}
	if cfg.Alloc == nil {
		cfg.Alloc = memory.DefaultAllocator
	}
	if cfg.Pool == nil {
		cfg.Pool = mempool.Unlimited()
	}
	if cfg.Memory == nil {
		cfg.Memory = memcat.NewCatalog(cfg.CatalogName)
	}
	cfg.CatalogName = cfg.Memory.Name()
	e := &Engine{cfg: cfg, catalog: cfg.Memory, datasets: cfg.Datasets, epochOrders: cluster.NewEpochOrders(epochOrdersKept)}
	tables, err := catalog.NewSet(e.catalog, cfg.Sources, cfg.DefaultCatalog)
	if err != nil {
		return nil, err
	}
	e.tables = tables
	if !cfg.NoDemo {
		if err := createDemo(context.Background(), e.catalog, cfg.Alloc); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// TaskContext returns the context of one execution of operators the engine planned (PlanStage,
// PlanTasks): the engine's allocator and batch size, a new cache, which the caller releases
// when the execution's readers are released, and a memory group without a limit of its own
// (set Memory to QueryMemory's for a session's limit).
func (e *Engine) TaskContext() *exec.TaskContext { return e.taskContext(context.Background(), nil) }

// Partitions is how many partitions the engine's plans are spread over: how many of a plan's
// partitions a caller runs at once.
func (e *Engine) Partitions() int { return e.cfg.Partitions }

// Alloc is the allocator every query of the engine uses.
func (e *Engine) Alloc() memory.Allocator { return e.cfg.Alloc }

// Pool is the process's memory budget.
func (e *Engine) Pool() *mempool.Pool { return e.cfg.Pool }

// taskContext returns the context of one query execution run in ctx (its memory group is
// bounded by ctx's session: QueryMemory). Its cache must be released when the execution's
// readers are (see run).
func (e *Engine) taskContext(ctx context.Context, params []scalar.Scalar) *exec.TaskContext {
	return &exec.TaskContext{Alloc: e.cfg.Alloc, Params: params, BatchSize: e.cfg.BatchSize, Cache: exec.NewQueryCache(),
		Memory: e.QueryMemory(ctx), SpillDir: e.cfg.SpillDir, Spill: e.cfg.Spill}
}

// run executes op's single partition; releasing the returned reader also frees what the
// execution cached.
func (e *Engine) run(ctx context.Context, op exec.Operator, params []scalar.Scalar) (array.RecordReader, error) {
	tc := e.taskContext(ctx, params)
	rdr, err := op.Execute(ctx, 0, tc)
	if err != nil {
		tc.Cache.Release()
		return nil, err
	}
	return stream.OnRelease(rdr, tc.Cache.Release), nil
}

func (e *Engine) execute(ctx context.Context, sqlText string, params []scalar.Scalar) (*Result, error) {
	tables, err := e.tablesFor(ctx)
	if err == nil {
		err = stopped(ctx)
	}
	if err != nil {
		return nil, err
	}
	stmt, err := e.bind(ctx, sqlText, tables, params)
	if err == nil {
		err = stopped(ctx)
	}
	if err != nil {
		return nil, err
	}
	switch s := stmt.(type) {
	case *planner.Query:
		op, _, err := planner.PlanQuery(ctx, s, e.physicalOptions(false))
		if err == nil {
			err = stopped(ctx)
		}
		if err != nil {
			return nil, err
		}
		rdr, err := e.run(ctx, op, params)
		if err != nil {
			return nil, err
		}
		return &Result{Schema: op.Schema(), Reader: rdr}, nil
	case *planner.Explain:
		return e.explain(ctx, s, params)
	case *planner.CreateTable:
		return e.createTable(ctx, s, params)
	case *planner.Insert:
		return e.insert(ctx, s, params)
	case *planner.DropTable:
		for _, name := range s.Names {
			if e.datasets != nil && e.datasets.Drop(name) {
				continue
			}
			if err := e.catalog.DropTable(ctx, name, s.IfExists); err != nil {
				return nil, err
			}
		}
		return &Result{}, nil
	case *planner.Delete:
		return e.rewriteTable(ctx, s.Table, s.Keep, s.Deleted, params)
	case *planner.Update:
		return e.rewriteTable(ctx, s.Table, s.NewContents, s.Matched, params)
	case *planner.CreateView:
		return &Result{}, e.catalog.CreateView(ctx, s.Name, s.Query, s.OrReplace)
	case *planner.DropView:
		for _, name := range s.Names {
			if err := e.catalog.DropView(ctx, name, s.IfExists); err != nil {
				return nil, err
			}
		}
		return &Result{}, nil
	case *planner.CreateIndex:
		return &Result{}, e.catalog.CreateIndex(ctx, s.Table, s.Name)
	case *planner.DropIndex:
		return &Result{}, e.catalog.DropIndex(ctx, s.Table, s.Name)
	case *planner.CreateTrigger:
		return &Result{}, e.catalog.CreateTrigger(ctx, s.Name, s.Table, s.IfNotExists)
	case *planner.DropTrigger:
		return &Result{}, e.catalog.DropTrigger(ctx, s.Name, s.IfExists)
	case *planner.Set:
		return &Result{}, nil
	}
	return nil, errs.Internalf("no way to run %T", stmt)
}

// bind binds a statement within the engine's limits (Config.Limits).
func (e *Engine) bind(ctx context.Context, text string, tables catalog.Catalog, params []scalar.Scalar) (planner.Statement, error) {
	return sql.Bind(e.bindContext(ctx), text, tables, params)
}

// bindContext is ctx as the binder takes it: the engine's limits, and the session's sql_mode
// for @@sql_mode.
func (e *Engine) bindContext(ctx context.Context) context.Context {
	ctx = sql.WithLimits(ctx, e.cfg.Limits)
	if mode := SessionFrom(ctx).SQLMode; mode != nil {
		ctx = sql.WithSQLMode(ctx, *mode)
	}
	return ctx
}

func (e *Engine) physicalOptions(analyze bool) planner.PhysicalOptions {
	return planner.PhysicalOptions{Partitions: e.cfg.Partitions, Analyze: analyze, NoPushdown: e.cfg.NoPushdown}
}

func (e *Engine) prepare(ctx context.Context, sqlText string) (*Prepared, error) {
	tables, err := e.tablesFor(ctx)
	if err != nil {
		return nil, err
	}
	stmt, types, err := sql.BindPrepare(e.bindContext(ctx), sqlText, tables)
	if err == nil {
		err = stopped(ctx)
	}
	if err != nil {
		return nil, err
	}
	if q, ok := stmt.(*planner.Query); ok {
		if rewritten, ok, err := e.answerFromDataset(ctx, q, tables); ok || err != nil {
			return rewritten, err
		}
	}
	prep := preparedOf(stmt)
	prep.ParamTypes = types
	prep.Pins = tables.Pins()
	if prep.IsQuery {
		e.countDatasetReads(prep.Pins)
	}
	prep.SQL = sqlText
	return prep, nil
}

// answerFromDataset prepares "SELECT * FROM dataset" in place of q when a ready dataset holds
// exactly q's result: the same plan over the same table versions (its fingerprint). The dataset
// is then read from data-node memory instead of object storage.
func (e *Engine) answerFromDataset(ctx context.Context, q *planner.Query, tables *catalog.Set) (*Prepared, bool, error) {
	if e.datasets == nil || q.NumParams > 0 {
		return nil, false, nil
	}
	info, ok := e.datasets.ByFingerprint(fingerprint(planner.Format(planner.Optimize(q.Plan)), tables.Pins()))
	if !ok {
		return nil, false, nil
	}
	text := "SELECT * FROM " + quoteIdent(info.Name)
	fresh, err := e.tablesFor(WithSession(ctx, Session{}))
	if err != nil {
		return nil, false, err
	}
	stmt, err := e.bind(ctx, text, fresh, nil)
	if err != nil {
		// Dropped in between: plan the query itself.
		return nil, false, nil
	}
	prep := preparedOf(stmt)
	prep.Pins = fresh.Pins()
	prep.SQL = text
	prep.Dataset = info.Name
	e.countDatasetReads(prep.Pins)
	return prep, true, nil
}

// countDatasetReads counts one hit on every dataset among the versioned tables a query being
// prepared resolved (pins: name as written → version). A client query is prepared once, however
// many times its stages are planned afterwards.
func (e *Engine) countDatasetReads(pins map[string]string) {
	if e.datasets == nil {
		return
	}
	for name := range pins {
		base, _, _ := strings.Cut(name, "@")
		e.datasets.Hit(base)
	}
}

// preparedOf describes a bound statement.
func preparedOf(stmt planner.Statement) *Prepared {
	switch s := stmt.(type) {
	case *planner.Query:
		return &Prepared{IsQuery: true, Schema: planner.OutputSchema(s.Plan), NumParams: s.NumParams}
	case *planner.Explain:
		return &Prepared{IsQuery: true, Schema: explainSchema, NumParams: s.Query.NumParams}
	}
	return &Prepared{NumParams: planner.NumParams(stmt)}
}

// runToBatches executes a query to completion and returns its batches (the caller releases
// them). keepBooleans leaves boolean columns as they are, for writing into typed tables.
func (e *Engine) runToBatches(ctx context.Context, q *planner.Query, params []scalar.Scalar, keepBooleans bool) (*arrow.Schema, []arrow.RecordBatch, error) {
	var op exec.Operator
	var err error
	if keepBooleans {
		op, err = planner.Physical(planner.Optimize(q.Plan), e.physicalOptions(false))
		if err == nil && op.Partitions() > 1 {
			op = exec.NewCoalesce(op)
		}
	} else {
		op, _, err = planner.PlanQuery(ctx, q, e.physicalOptions(false))
	}
	if err != nil {
		return nil, nil, err
	}
	rdr, err := e.run(ctx, op, params)
	if err != nil {
		return nil, nil, err
	}
	defer rdr.Release()
	var out []arrow.RecordBatch
	for rdr.Next() {
		b := rdr.RecordBatch()
		b.Retain()
		out = append(out, b)
	}
	if err := rdr.Err(); err != nil {
		releaseAll(out)
		return nil, nil, err
	}
	return op.Schema(), out, nil
}

func releaseAll(bs []arrow.RecordBatch) {
	for _, b := range bs {
		b.Release()
	}
}

func (e *Engine) createTable(ctx context.Context, s *planner.CreateTable, params []scalar.Scalar) (*Result, error) {
	if s.AsSelect == nil {
		// Nullability is not enforced by the schema: the key index rejects NULL primary key
		// values, and columns declared NOT NULL accept NULL as before.
		if _, err := e.catalog.CreateKeyedTable(ctx, s.Name, nullableSchema(s.Schema), memoryKeys(s.Keys), s.IfNotExists); err != nil {
			return nil, err
		}
		return &Result{}, nil
	}
	if _, err := e.catalog.Table(ctx, s.Name); err == nil {
		if s.IfNotExists {
			return &Result{}, nil
		}
		return nil, errs.AlreadyExistsf("table %q already exists", s.Name)
	}
	// Without a data node to hold it (none joined, or all lost), the result becomes a memory
	// table on the head, as on a server without a cluster.
	if e.datasets != nil && len(params) == 0 && e.datasets.CanPlace() {
		tables, err := e.tablesFor(ctx)
		if err != nil {
			return nil, err
		}
		// Bind again through a pinning Set, so the job records the versions it reads.
		stmt, err := e.bind(ctx, s.AsSelectSQL, tables, nil)
		if err != nil {
			return nil, err
		}
		q, ok := stmt.(*planner.Query)
		if !ok {
			return nil, errs.Internalf("AS SELECT bound to %T", stmt)
		}
		info, err := e.materialize(ctx, s.Name, q, s.AsSelectSQL, tables, DatasetOptions{Source: s.AsSelectSQL}, nil)
		if err == nil {
			return &Result{RowsAffected: info.Rows}, nil
		}
		// A query over memory or system tables makes a memory table on the head.
		if !errors.Is(err, errNotFromSources) {
			return nil, err
		}
	}
	// The memory table keeps the rows: caches of the sources need not.
	schema, batches, err := e.runToBatches(catalog.WithReadOnce(ctx), s.AsSelect, params, false)
	if err != nil {
		return nil, err
	}
	defer releaseAll(batches)
	t, err := e.catalog.CreateTable(ctx, s.Name, nullableSchema(schema), s.IfNotExists)
	if err != nil {
		return nil, err
	}
	n, err := appendBatches(ctx, t.(catalog.InsertableTable), batches, nil, planner.DuplicateFails, e.cfg.Alloc)
	if err != nil {
		_ = e.catalog.DropTable(ctx, s.Name, true)
		return nil, err
	}
	return &Result{RowsAffected: n}, nil
}

// rewriteTable carries out UPDATE and DELETE: it computes the table's new contents and the
// number of affected rows, then swaps the contents in. Writers to one engine are serialized, so
// no INSERT slips in between the read and the swap.
func (e *Engine) rewriteTable(ctx context.Context, name string, contents, affected *planner.Query, params []scalar.Scalar) (*Result, error) {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	t, err := e.catalog.Table(ctx, name)
	if err != nil {
		return nil, err
	}
	rt, ok := t.(catalog.ReplaceableTable)
	if !ok {
		return nil, errs.Unsupportedf("table %q cannot be updated", name)
	}
	_, counts, err := e.runToBatches(ctx, affected, params, true)
	if err != nil {
		return nil, err
	}
	var n int64
	if len(counts) == 1 && counts[0].NumRows() == 1 {
		if c, ok := counts[0].Column(0).(*array.Int64); ok {
			n = c.Value(0)
		}
	}
	releaseAll(counts)
	_, batches, err := e.runToBatches(ctx, contents, params, true)
	if err != nil {
		return nil, err
	}
	defer releaseAll(batches)
	converted, _, err := convertBatches(ctx, t.Schema(), batches, nil, e.cfg.Alloc)
	if err != nil {
		return nil, err
	}
	defer releaseAll(converted)
	if err := rt.Replace(ctx, converted); err != nil {
		return nil, err
	}
	return &Result{RowsAffected: n}, nil
}

func (e *Engine) insert(ctx context.Context, s *planner.Insert, params []scalar.Scalar) (*Result, error) {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	t, err := e.catalog.Table(ctx, s.Table)
	if err != nil {
		return nil, err
	}
	it, ok := t.(catalog.InsertableTable)
	if !ok {
		return nil, errs.Unsupportedf("table %q does not accept INSERT", s.Table)
	}
	// The table keeps the rows: caches of the sources need not.
	_, batches, err := e.runToBatches(catalog.WithReadOnce(ctx), s.Source, params, true)
	if err != nil {
		return nil, err
	}
	defer releaseAll(batches)
	n, err := appendBatches(ctx, it, batches, s.Columns, s.OnDuplicate, e.cfg.Alloc)
	if err != nil {
		return nil, err
	}
	return &Result{RowsAffected: n}, nil
}

// appendBatches writes batches into t and returns the rows affected as MySQL counts them
// (for REPLACE, rows deleted plus rows inserted). Column i of a batch goes to table column
// cols[i] (all columns in order when cols is nil); table columns no batch column maps to are
// NULL. Values are converted to the table's column types (see convertBatches). The batches are converted first and
// written only if all of them converted; a table that keeps keys (keyedTable) then takes them
// in one call that checks every row before adding any, so a failing INSERT adds nothing. Other
// tables have no keys: onDuplicate does not matter to them.
func appendBatches(ctx context.Context, t catalog.InsertableTable, batches []arrow.RecordBatch, cols []int, onDuplicate planner.OnDuplicate, mem memory.Allocator) (int64, error) {
	converted, rows, err := convertBatches(ctx, t.Schema(), batches, cols, mem)
	if err != nil {
		return 0, err
	}
	defer releaseAll(converted)
	if kt, ok := t.(keyedTable); ok {
		res, err := kt.Insert(ctx, converted, onConflict(onDuplicate))
		if err != nil {
			return 0, err
		}
		return res.Inserted + res.Deleted, nil
	}
	for _, rec := range converted {
		if err := t.Append(ctx, rec); err != nil {
			return 0, err
		}
	}
	return rows, nil
}

// convertBatches builds batches of schema from query output batches (see appendBatches for the
// column mapping), converting values as MySQL's strict mode stores them (exec.StoreArray): a
// value the column cannot hold fails the statement, naming the column and the row. The caller
// releases the result.
func convertBatches(ctx context.Context, schema *arrow.Schema, batches []arrow.RecordBatch, cols []int, mem memory.Allocator) ([]arrow.RecordBatch, int64, error) {
	tc := &exec.TaskContext{Alloc: mem}
	var converted []arrow.RecordBatch
	var rows int64
	for _, b := range batches {
		src := make(map[int]arrow.Array, b.NumCols())
		for i := 0; i < int(b.NumCols()); i++ {
			target := i
			if cols != nil {
				target = cols[i]
			}
			src[target] = b.Column(i)
		}
		arrs := make([]arrow.Array, schema.NumFields())
		for i, f := range schema.Fields() {
			a, ok := src[i]
			var err error
			switch {
			case !ok:
				arrs[i] = array.MakeArrayOfNull(mem, f.Type, int(b.NumRows()))
			case arrow.TypeEqual(a.DataType(), f.Type):
				a.Retain()
				arrs[i] = a
			default:
				arrs[i], err = exec.StoreArray(ctx, tc, a, f.Type, f.Name, rows+1)
			}
			if decl, ok := f.Metadata.GetValue(exec.DeclaredTypeKey); ok && err == nil {
				var checked arrow.Array
				checked, err = exec.CheckDeclared(tc, arrs[i], decl, f.Name, rows+1)
				arrs[i].Release()
				arrs[i] = checked
			}
			if err != nil {
				for _, x := range arrs[:i] {
					x.Release()
				}
				releaseAll(converted)
				return nil, 0, err
			}
		}
		rec := array.NewRecordBatch(schema, arrs, b.NumRows())
		for _, a := range arrs {
			a.Release()
		}
		converted = append(converted, rec)
		rows += b.NumRows()
	}
	return converted, rows, nil
}

func nullableSchema(s *arrow.Schema) *arrow.Schema {
	fields := make([]arrow.Field, s.NumFields())
	for i, f := range s.Fields() {
		fields[i] = arrow.Field{Name: f.Name, Type: f.Type, Nullable: true, Metadata: f.Metadata}
	}
	return arrow.NewSchema(fields, nil)
}

var explainSchema = arrow.NewSchema([]arrow.Field{
	{Name: "plan_type", Type: arrow.BinaryTypes.String},
	{Name: "plan", Type: arrow.BinaryTypes.String},
}, nil)

// explain answers EXPLAIN with one row per plan line: the optimized logical plan, then the
// physical plan. EXPLAIN ANALYZE runs the query to completion first and reports the physical
// plan with each operator's metrics.
func (e *Engine) explain(ctx context.Context, s *planner.Explain, params []scalar.Scalar) (*Result, error) {
	op, logical, err := planner.PlanQuery(ctx, s.Query, e.physicalOptions(s.Analyze))
	if err != nil {
		return nil, err
	}
	var kinds, lines []string
	add := func(kind, text string) {
		for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
			kinds = append(kinds, kind)
			lines = append(lines, l)
		}
	}
	add("logical_plan", planner.Format(logical))
	if s.Analyze && len(params) == 0 {
		if a := e.analyzer.Load(); a != nil {
			text, ok, err := (*a)(ctx, s.SQL)
			if err != nil {
				return nil, err
			}
			if ok {
				add("analyzed_plan", text)
				return explainResult(e.cfg.Alloc, kinds, lines)
			}
		}
	}
	if s.Analyze {
		rdr, err := e.run(ctx, op, params)
		if err != nil {
			return nil, err
		}
		for rdr.Next() {
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return nil, err
		}
		add("analyzed_plan", exec.FormatAnalyzedPlan(op))
	} else {
		add("physical_plan", exec.FormatPlan(op))
		if err := e.explainDistributed(ctx, s.Query, add); err != nil {
			return nil, err
		}
	}
	return explainResult(e.cfg.Alloc, kinds, lines)
}

// explainResult is the rows of an EXPLAIN: one per plan line, with its kind.
func explainResult(alloc memory.Allocator, kinds, lines []string) (*Result, error) {
	kb := array.NewStringBuilder(alloc)
	defer kb.Release()
	lb := array.NewStringBuilder(alloc)
	defer lb.Release()
	kb.AppendValues(kinds, nil)
	lb.AppendValues(lines, nil)
	ka, la := kb.NewArray(), lb.NewArray()
	defer ka.Release()
	defer la.Release()
	rec := array.NewRecordBatch(explainSchema, []arrow.Array{ka, la}, int64(len(lines)))
	defer rec.Release()
	rdr, err := array.NewRecordReader(explainSchema, []arrow.RecordBatch{rec})
	if err != nil {
		return nil, errs.Internalf("explain: %v", err)
	}
	return &Result{Schema: explainSchema, Reader: rdr}, nil
}
