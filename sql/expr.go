package sql

import (
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
)

// exprContext says where an expression is bound: which names it sees and whether aggregate
// functions are allowed.
type exprContext struct {
	scope  *scope
	clause string // for messages: "field list", "where clause", "on clause", …
	// agg collects aggregate calls; nil where aggregates are not allowed (WHERE, ON, GROUP BY,
	// and inside another aggregate's arguments).
	agg *aggregation
	// aliases are the select-list names, looked up after the FROM columns (GROUP BY, HAVING,
	// ORDER BY, as MySQL does).
	aliases []selectAlias
}

// selectAlias is a select-list output name usable in GROUP BY, HAVING and ORDER BY.
type selectAlias struct {
	name string
	ast  sqlparser.Expr
	// bound is the item's bound expression, set once the select list is bound; before that
	// (GROUP BY), an alias reference binds ast again.
	bound planner.Expr
}

// withoutAggregates returns a copy of ctx in which aggregate calls are errors.
func (c *exprContext) withoutAggregates() *exprContext {
	cc := *c
	cc.agg = nil
	return &cc
}

// condition binds a WHERE / ON / HAVING condition. A non-boolean value is tested for truth with
// is_true, so the plan's conditions are always boolean (or NULL).
func (b *binder) condition(e sqlparser.Expr, ctx *exprContext) (planner.Expr, error) {
	x, err := b.expr(e, ctx)
	if err != nil {
		return nil, err
	}
	return b.truth(x)
}

// truth turns x into a boolean with MySQL's truth test when it is not one already.
func (b *binder) truth(x planner.Expr) (planner.Expr, error) {
	if t := x.Type(); t.ID() == arrow.BOOL || t.ID() == arrow.NULL {
		return x, nil
	}
	return b.call("is_true", x)
}

// exprs binds a list of expressions.
func (b *binder) exprs(es []sqlparser.Expr, ctx *exprContext) ([]planner.Expr, error) {
	out := make([]planner.Expr, len(es))
	for i, e := range es {
		x, err := b.expr(e, ctx)
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	return out, nil
}

// expr binds one scalar expression, within the statement's limits.
func (b *binder) expr(e sqlparser.Expr, ctx *exprContext) (planner.Expr, error) {
	if err := b.enter(); err != nil {
		return nil, err
	}
	defer b.leave()
	return b.exprNode(e, ctx)
}

// exprNode binds one scalar expression (expr without the limits).
func (b *binder) exprNode(e sqlparser.Expr, ctx *exprContext) (planner.Expr, error) {
	switch e := e.(type) {
	case *sqlparser.Literal:
		return literal(e)
	case *sqlparser.NullVal:
		return nullLiteral(), nil
	case sqlparser.BoolVal:
		return boolLiteral(bool(e)), nil
	case *sqlparser.Argument:
		return b.param(e)
	case *sqlparser.ColName:
		return b.column(e, ctx)
	case *sqlparser.AndExpr:
		return b.callAST(ctx, "and", e.Left, e.Right)
	case *sqlparser.OrExpr:
		return b.callAST(ctx, "or", e.Left, e.Right)
	case *sqlparser.XorExpr:
		return b.callAST(ctx, "xor", e.Left, e.Right)
	case *sqlparser.NotExpr:
		return b.callAST(ctx, "not", e.Expr)
	case *sqlparser.ComparisonExpr:
		return b.comparison(e, ctx)
	case *sqlparser.BetweenExpr:
		x, err := b.callAST(ctx, "between", e.Left, e.From, e.To)
		if err != nil || e.IsBetween {
			return x, err
		}
		return b.call("not", x)
	case *sqlparser.IsExpr:
		return b.isExpr(e, ctx)
	case *sqlparser.BinaryExpr:
		return b.binary(e, ctx)
	case *sqlparser.UnaryExpr:
		return b.unary(e, ctx)
	case *sqlparser.IntroducerExpr:
		return b.expr(e.Expr, ctx)
	case *sqlparser.CollateExpr:
		return b.expr(e.Expr, ctx)
	case *sqlparser.ConvertUsingExpr:
		return b.expr(e.Expr, ctx)
	case *sqlparser.CaseExpr:
		return b.caseExpr(e, ctx)
	case *sqlparser.CastExpr:
		if e.Array {
			return nil, errs.Unsupportedf("CAST … ARRAY is not supported")
		}
		return b.cast(e.Expr, e.Type, ctx)
	case *sqlparser.ConvertExpr:
		return b.cast(e.Expr, e.Type, ctx)
	case *sqlparser.FuncExpr:
		return b.function(e, ctx)
	case *sqlparser.SubstrExpr:
		args := []sqlparser.Expr{e.Name, e.From}
		if e.To != nil {
			args = append(args, e.To)
		}
		return b.callAST(ctx, "substring", args...)
	case *sqlparser.LocateExpr:
		args := []sqlparser.Expr{e.SubStr, e.Str}
		if e.Pos != nil {
			args = append(args, e.Pos)
		}
		return b.callAST(ctx, "locate", args...)
	case *sqlparser.TrimFuncExpr:
		return b.trim(e, ctx)
	case *sqlparser.CurTimeFuncExpr:
		return b.curTime(e)
	case *sqlparser.IntervalDateExpr:
		return b.intervalDate(e, ctx)
	case *sqlparser.ExtractFuncExpr:
		return b.extract(e, ctx)
	case *sqlparser.TimestampDiffExpr:
		return b.timestampDiff(e, ctx)
	case *sqlparser.Subquery:
		return b.scalarSubquery(e, ctx)
	case *sqlparser.ExistsExpr:
		p, err := b.tableStatement(e.Subquery.Select, ctx.scope)
		if err != nil {
			return nil, err
		}
		return &planner.Exists{Plan: p}, nil
	case sqlparser.AggrFunc:
		return b.aggregate(e, ctx)
	case *sqlparser.Variable:
		return b.systemVariable(e)
	case sqlparser.ValTuple:
		if len(e) == 1 {
			return b.expr(e[0], ctx)
		}
		return nil, errs.Invalidf("Operand should contain 1 column(s)")
	}
	return nil, errs.Unsupportedf("expression %s is not supported", sqlparser.String(e))
}

// callAST binds the arguments and applies the function or operator name.
func (b *binder) callAST(ctx *exprContext, name string, args ...sqlparser.Expr) (planner.Expr, error) {
	bound, err := b.exprs(args, ctx)
	if err != nil {
		return nil, err
	}
	return b.call(name, bound...)
}

// call builds a typed call of a scalar function or operator, failing (InvalidInput or
// NotFound) when the registry rejects the argument types.
func (b *binder) call(name string, args ...planner.Expr) (planner.Expr, error) {
	args = temporalOperands(name, args)
	types := make([]arrow.DataType, len(args))
	for i, a := range args {
		types[i] = a.Type()
	}
	t, err := resolveScalarType(name, types)
	if err != nil {
		return nil, err
	}
	return b.widenQuotients(&planner.Call{Func: name, Args: args, T: t})
}

// column resolves a column name: the query block's own FROM columns first, then (unqualified
// names only) the select-list aliases, then the enclosing query blocks' columns, innermost
// first, which makes a correlated reference.
func (b *binder) column(c *sqlparser.ColName, ctx *exprContext) (planner.Expr, error) {
	qualifier := c.Qualifier.Name.String()
	name := c.Name.String()
	col, ok, err := ctx.scope.lookupLocal(qualifier, name, ctx.clause)
	if err != nil {
		return nil, err
	}
	if ok {
		return columnRef(col), nil
	}
	if qualifier == "" {
		if x, ok, err := b.alias(name, ctx); ok || err != nil {
			return x, err
		}
	}
	for s := ctx.scope.outer; s != nil; s = s.outer {
		col, ok, err := s.lookupLocal(qualifier, name, ctx.clause)
		if err != nil {
			return nil, err
		}
		if ok {
			return columnRef(col), nil
		}
	}
	return nil, errs.NotFoundf("Unknown column '%s' in '%s'", qualifiedName(qualifier, name), ctx.clause)
}

// alias resolves name against the select-list aliases of ctx.
func (b *binder) alias(name string, ctx *exprContext) (planner.Expr, bool, error) {
	for _, a := range ctx.aliases {
		if !strings.EqualFold(a.name, name) {
			continue
		}
		if a.bound != nil {
			return a.bound, true, nil
		}
		// GROUP BY alias: bind the item itself, without aliases (no self reference) and
		// without aggregates (MySQL: "Can't group on").
		inner := &exprContext{scope: ctx.scope, clause: ctx.clause}
		if containsAggregate(a.ast) {
			return nil, true, errs.Invalidf("Can't group on '%s'", name)
		}
		x, err := b.expr(a.ast, inner)
		return x, true, err
	}
	return nil, false, nil
}

// param binds a ? placeholder: the given value as a literal, or a planner.Param when binding
// without values (PREPARE).
func (b *binder) param(a *sqlparser.Argument) (planner.Expr, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(a.Name, "v"))
	if err != nil || n < 1 {
		return nil, errs.Unsupportedf("named parameter :%s is not supported", a.Name)
	}
	idx := n - 1
	b.numParams = max(b.numParams, n)
	if b.params == nil {
		if idx < len(b.paramTypes) {
			return &planner.Param{Index: idx, T: b.paramTypes[idx]}, nil
		}
		return &planner.Param{Index: idx, T: arrow.Null}, nil
	}
	if idx >= len(b.params) {
		return nil, errs.Invalidf("statement has more ? placeholders than the %d parameter values given", len(b.params))
	}
	return &planner.Literal{Value: b.params[idx]}, nil
}

// comparison binds =, <>, <, <=, >, >=, <=>, [NOT] IN, [NOT] LIKE and [NOT] REGEXP.
func (b *binder) comparison(e *sqlparser.ComparisonExpr, ctx *exprContext) (planner.Expr, error) {
	op, negated := "", false
	switch e.Operator {
	case sqlparser.EqualOp:
		op = "="
	case sqlparser.NotEqualOp:
		op = "<>"
	case sqlparser.LessThanOp:
		op = "<"
	case sqlparser.LessEqualOp:
		op = "<="
	case sqlparser.GreaterThanOp:
		op = ">"
	case sqlparser.GreaterEqualOp:
		op = ">="
	case sqlparser.NullSafeEqualOp:
		op = "<=>"
	case sqlparser.InOp, sqlparser.NotInOp:
		return b.in(e, ctx, e.Operator == sqlparser.NotInOp)
	case sqlparser.LikeOp, sqlparser.NotLikeOp:
		op, negated = "like", e.Operator == sqlparser.NotLikeOp
		if e.Escape != nil && sqlparser.String(e.Escape) != `'\\'` {
			return nil, errs.Unsupportedf("LIKE … ESCAPE %s is not supported", sqlparser.String(e.Escape))
		}
	case sqlparser.RegexpOp, sqlparser.NotRegexpOp:
		op, negated = "regexp_like", e.Operator == sqlparser.NotRegexpOp
	default:
		return nil, errs.Unsupportedf("operator %s is not supported", e.Operator.ToString())
	}
	if isRow(e.Left) || isRow(e.Right) {
		return nil, errs.Unsupportedf("row comparisons are not supported: %s", sqlparser.String(e))
	}
	if e.Modifier != sqlparser.Missing {
		return b.quantified(e, op, ctx)
	}
	x, err := b.callAST(ctx, op, e.Left, e.Right)
	if err != nil || !negated {
		return x, err
	}
	return b.call("not", x)
}

// quantified binds x op ANY|SOME|ALL (SELECT …). = ANY is IN and <> ALL is NOT IN (the same
// truth values, NULLs included), so they become InSubquery and can be decorrelated into joins;
// the other forms become a QuantifiedSubquery.
func (b *binder) quantified(e *sqlparser.ComparisonExpr, op string, ctx *exprContext) (planner.Expr, error) {
	all := e.Modifier == sqlparser.All
	sub, ok := e.Right.(*sqlparser.Subquery)
	if !ok {
		return nil, errs.Invalidf("ANY, SOME and ALL need a subquery: %s", sqlparser.String(e))
	}
	switch op {
	case "=", "<>", "<", "<=", ">", ">=":
	default:
		return nil, errs.Unsupportedf("operator %s with ANY/ALL is not supported", op)
	}
	left, err := b.expr(e.Left, ctx)
	if err != nil {
		return nil, err
	}
	p, err := b.tableStatement(sub.Select, ctx.scope)
	if err != nil {
		return nil, err
	}
	if len(p.Schema()) != 1 {
		return nil, errs.Invalidf("Operand should contain 1 column(s)")
	}
	switch {
	case op == "=" && !all:
		return &planner.InSubquery{Expr: left, Plan: p}, nil
	case op == "<>" && all:
		return &planner.InSubquery{Expr: left, Plan: p, Negated: true}, nil
	}
	return &planner.QuantifiedSubquery{Expr: left, Op: op, All: all, Plan: p}, nil
}

// isRow reports whether e is a row constructor (a tuple of more than one value).
func isRow(e sqlparser.Expr) bool {
	t, ok := e.(sqlparser.ValTuple)
	return ok && len(t) > 1
}

// in binds x [NOT] IN (list) as in(x, v…) and x [NOT] IN (SELECT …) as an InSubquery.
func (b *binder) in(e *sqlparser.ComparisonExpr, ctx *exprContext, negated bool) (planner.Expr, error) {
	if isRow(e.Left) {
		return nil, errs.Unsupportedf("row IN is not supported: %s", sqlparser.String(e))
	}
	left, err := b.expr(e.Left, ctx)
	if err != nil {
		return nil, err
	}
	switch r := e.Right.(type) {
	case *sqlparser.Subquery:
		p, err := b.tableStatement(r.Select, ctx.scope)
		if err != nil {
			return nil, err
		}
		if len(p.Schema()) != 1 {
			return nil, errs.Invalidf("Operand should contain 1 column(s)")
		}
		return &planner.InSubquery{Expr: left, Plan: p, Negated: negated}, nil
	case sqlparser.ValTuple:
		list, err := b.exprs(r, ctx)
		if err != nil {
			return nil, err
		}
		x, err := b.call("in", append([]planner.Expr{left}, list...)...)
		if err != nil || !negated {
			return x, err
		}
		return b.call("not", x)
	}
	return nil, errs.Unsupportedf("IN %s is not supported", sqlparser.String(e.Right))
}

// isExpr binds IS [NOT] NULL / TRUE / FALSE.
func (b *binder) isExpr(e *sqlparser.IsExpr, ctx *exprContext) (planner.Expr, error) {
	name := map[sqlparser.IsExprOperator]string{
		sqlparser.IsNullOp:     "is_null",
		sqlparser.IsNotNullOp:  "is_not_null",
		sqlparser.IsTrueOp:     "is_true",
		sqlparser.IsNotTrueOp:  "is_not_true",
		sqlparser.IsFalseOp:    "is_false",
		sqlparser.IsNotFalseOp: "is_not_false",
	}[e.Right]
	if name == "" {
		return nil, errs.Unsupportedf("IS operator in %s is not supported", sqlparser.String(e))
	}
	return b.callAST(ctx, name, e.Left)
}

// binary binds arithmetic and bitwise operators.
func (b *binder) binary(e *sqlparser.BinaryExpr, ctx *exprContext) (planner.Expr, error) {
	name := map[sqlparser.BinaryExprOperator]string{
		sqlparser.BitAndOp:     "&",
		sqlparser.BitOrOp:      "|",
		sqlparser.BitXorOp:     "^",
		sqlparser.PlusOp:       "+",
		sqlparser.MinusOp:      "-",
		sqlparser.MultOp:       "*",
		sqlparser.DivOp:        "/",
		sqlparser.IntDivOp:     "div",
		sqlparser.ModOp:        "%",
		sqlparser.ShiftLeftOp:  "<<",
		sqlparser.ShiftRightOp: ">>",
	}[e.Operator]
	if name == "" {
		return nil, errs.Unsupportedf("operator %s is not supported", e.Operator.ToString())
	}
	return b.callAST(ctx, name, e.Left, e.Right)
}

// unary binds unary +, -, ~ and !. The minus of a numeric literal folds into the literal, so
// -9223372036854775808 is a BIGINT as in MySQL.
func (b *binder) unary(e *sqlparser.UnaryExpr, ctx *exprContext) (planner.Expr, error) {
	switch e.Operator {
	case sqlparser.UPlusOp:
		return b.expr(e.Expr, ctx)
	case sqlparser.UMinusOp:
		if lit, ok := e.Expr.(*sqlparser.Literal); ok && isNumericLiteral(lit) {
			return literal(&sqlparser.Literal{Type: lit.Type, Val: negateText(lit.Val)})
		}
		return b.callAST(ctx, "neg", e.Expr)
	case sqlparser.TildaOp:
		return b.callAST(ctx, "~", e.Expr)
	case sqlparser.BangOp:
		return b.callAST(ctx, "not", e.Expr)
	case sqlparser.NStringOp:
		return b.expr(e.Expr, ctx)
	}
	return nil, errs.Unsupportedf("operator %s is not supported", e.Operator.ToString())
}

// caseExpr binds CASE [operand] WHEN … THEN … [ELSE …] END; its type is the common type of the
// THEN and ELSE branches.
func (b *binder) caseExpr(e *sqlparser.CaseExpr, ctx *exprContext) (planner.Expr, error) {
	out := &planner.Case{}
	var err error
	if e.Expr != nil {
		if out.Operand, err = b.expr(e.Expr, ctx); err != nil {
			return nil, err
		}
	}
	var branchTypes []arrow.DataType
	for _, w := range e.Whens {
		cond, err := b.expr(w.Cond, ctx)
		if err != nil {
			return nil, err
		}
		if out.Operand == nil {
			if cond, err = b.truth(cond); err != nil {
				return nil, err
			}
		}
		then, err := b.expr(w.Val, ctx)
		if err != nil {
			return nil, err
		}
		out.Whens = append(out.Whens, planner.When{Cond: cond, Then: then})
		branchTypes = append(branchTypes, then.Type())
	}
	if e.Else != nil {
		if out.Else, err = b.expr(e.Else, ctx); err != nil {
			return nil, err
		}
		branchTypes = append(branchTypes, out.Else.Type())
	}
	if out.T, err = commonType(branchTypes...); err != nil {
		return nil, err
	}
	return out, nil
}

// cast binds CAST(e AS type) / CONVERT(e, type).
func (b *binder) cast(e sqlparser.Expr, ct *sqlparser.ConvertType, ctx *exprContext) (planner.Expr, error) {
	to, err := castType(ct)
	if err != nil {
		return nil, err
	}
	x, err := b.expr(e, ctx)
	if err != nil {
		return nil, err
	}
	return &planner.Cast{Expr: x, To: to}, nil
}

// function binds a call of a scalar function by its lower-case MySQL name.
func (b *binder) function(e *sqlparser.FuncExpr, ctx *exprContext) (planner.Expr, error) {
	if x, ok, err := b.currentTimeFunction(e, ctx); ok {
		return x, err
	}
	if x, ok, err := b.sessionFunction(e); ok {
		return x, err
	}
	x, err := b.callAST(ctx, e.Name.Lowered(), e.Exprs...)
	if err != nil {
		return nil, err
	}
	return roundedScale(x), nil
}

// roundedScale gives ROUND(x, d) and TRUNCATE(x, d) of a DECIMAL with a constant d the scale
// MySQL gives them, max(d, 0) up to 30: ROUND(93.27, 0) is 93, not 93.00, and ROUND(1.5, 3) is
// 1.500. The value is already rounded to d places, so a narrowing cast only drops zeros and a
// widening one appends them. With a d that is not constant the result keeps the scale of x (a
// type cannot depend on a row's value).
func roundedScale(x planner.Expr) planner.Expr {
	call, ok := x.(*planner.Call)
	if !ok || (call.Func != "round" && call.Func != "truncate") || len(call.Args) != 2 {
		return x
	}
	dt, ok := call.T.(*arrow.Decimal128Type)
	if !ok {
		return x
	}
	lit, ok := call.Args[1].(*planner.Literal)
	if !ok || lit.Value == nil || !lit.Value.IsValid() {
		return x
	}
	var d int64
	switch v := lit.Value.(type) {
	case *scalar.Int64:
		d = v.Value
	default:
		return x
	}
	scale := int32(min(max(d, 0), 30))
	precision := max(dt.Precision-(dt.Scale-scale), 1)
	if scale == dt.Scale || precision > 38 { // no wider than a decimal128
		return x
	}
	return &planner.Cast{Expr: x, To: &arrow.Decimal128Type{Precision: precision, Scale: scale}}
}

// trim binds TRIM/LTRIM/RTRIM; TRIM with a custom remove string maps to trim(x, remstr) for
// BOTH, and to ltrim/rtrim(x, remstr) for LEADING / TRAILING.
func (b *binder) trim(e *sqlparser.TrimFuncExpr, ctx *exprContext) (planner.Expr, error) {
	name := "trim"
	switch {
	case e.TrimFuncType == sqlparser.LTrimType || e.Type == sqlparser.LeadingTrimType:
		name = "ltrim"
	case e.TrimFuncType == sqlparser.RTrimType || e.Type == sqlparser.TrailingTrimType:
		name = "rtrim"
	}
	args := []sqlparser.Expr{e.StringArg}
	if e.TrimArg != nil {
		args = append(args, e.TrimArg)
	}
	return b.callAST(ctx, name, args...)
}

// scalarSubquery binds (SELECT …) used as a value: exactly one column.
func (b *binder) scalarSubquery(e *sqlparser.Subquery, ctx *exprContext) (planner.Expr, error) {
	p, err := b.tableStatement(e.Select, ctx.scope)
	if err != nil {
		return nil, err
	}
	if len(p.Schema()) != 1 {
		return nil, errs.Invalidf("Operand should contain 1 column(s)")
	}
	return &planner.ScalarSubquery{Plan: p}, nil
}
