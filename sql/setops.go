package sql

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
)

// MySQL 8 has INTERSECT and EXCEPT; the vitess parser does not. A query that uses them at the
// top level is split into its SELECT operands at the set operators, each operand is parsed by
// vitess, and the operators are bound here: INTERSECT binds tighter than UNION and EXCEPT,
// which apply left to right. A trailing ORDER BY / LIMIT on the last operand applies to the
// whole result, as in MySQL.

type setOpKind int

const (
	setUnion setOpKind = iota
	setIntersect
	setExcept
)

type setOp struct {
	kind setOpKind
	all  bool
}

// splitSetOps splits text at the set operators outside parentheses, quotes and comments. ok is
// false unless there is at least one INTERSECT or EXCEPT.
func splitSetOps(text string) (operands []string, ops []setOp, ok bool) {
	depth, start := 0, 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			i = skipQuoted(text, i)
			continue
		case c == '-' && strings.HasPrefix(text[i:], "-- "), c == '#':
			for i < len(text) && text[i] != '\n' {
				i++
			}
			continue
		case c == '/' && strings.HasPrefix(text[i:], "/*"):
			if end := strings.Index(text[i+2:], "*/"); end >= 0 {
				i += end + 3
			} else {
				i = len(text)
			}
			continue
		case c == '(':
			depth++
			continue
		case c == ')':
			depth--
			continue
		}
		if depth != 0 || !isIdentByte(c) || (i > 0 && isIdentByte(text[i-1])) {
			continue
		}
		word := identAt(text, i)
		var kind setOpKind
		switch strings.ToUpper(word) {
		case "UNION":
			kind = setUnion
		case "INTERSECT":
			kind = setIntersect
			ok = true
		case "EXCEPT":
			kind = setExcept
			ok = true
		default:
			i += len(word) - 1
			continue
		}
		operands = append(operands, text[start:i])
		end := i + len(word)
		op := setOp{kind: kind}
		j := end
		for j < len(text) && (text[j] == ' ' || text[j] == '\t' || text[j] == '\n' || text[j] == '\r') {
			j++
		}
		switch strings.ToUpper(identAt(text, j)) {
		case "ALL":
			op.all = true
			end = j + 3
		case "DISTINCT":
			end = j + 8
		}
		ops = append(ops, op)
		start = end
		i = end - 1
	}
	operands = append(operands, text[start:])
	return operands, ops, ok
}

// skipQuoted returns the index of the quote that closes the string starting at i.
func skipQuoted(text string, i int) int {
	q := text[i]
	for j := i + 1; j < len(text); j++ {
		switch {
		case text[j] == '\\' && q != '`':
			j++
		case text[j] == q:
			if j+1 < len(text) && text[j+1] == q {
				j++
				continue
			}
			return j
		}
	}
	return len(text)
}

// identAt returns the identifier-like word starting at i.
func identAt(text string, i int) string {
	j := i
	for j < len(text) && isIdentByte(text[j]) {
		j++
	}
	return text[i:j]
}

// setOperation binds a top-level query with INTERSECT or EXCEPT. ok is false when text has
// none, so the caller reports its original error.
func (b *binder) setOperation(text string) (q *planner.Query, ok bool, err error) {
	operands, ops, ok := splitSetOps(text)
	if !ok {
		return nil, false, nil
	}
	plans := make([]planner.Plan, len(operands))
	var order sqlparser.OrderBy
	var limit *sqlparser.Limit
	for i, operand := range operands {
		stmt, err := parse(operand)
		if err != nil {
			return nil, true, err
		}
		ts, isQuery := stmt.(sqlparser.TableStatement)
		if !isQuery {
			return nil, true, errs.Invalidf("operand %d of a set operation is not a query", i+1)
		}
		if sel, isSelect := ts.(*sqlparser.Select); isSelect && i == len(operands)-1 {
			order, limit = sel.OrderBy, sel.Limit
			sel.OrderBy, sel.Limit = nil, nil
		}
		if plans[i], err = b.tableStatement(ts, nil); err != nil {
			return nil, true, err
		}
	}
	// INTERSECT first, then UNION and EXCEPT from left to right.
	terms := []planner.Plan{plans[0]}
	var termOps []setOp
	for i, op := range ops {
		if op.kind == setIntersect {
			last := len(terms) - 1
			if terms[last], err = b.combine(terms[last], plans[i+1], op); err != nil {
				return nil, true, err
			}
			continue
		}
		terms = append(terms, plans[i+1])
		termOps = append(termOps, op)
	}
	result := terms[0]
	for i, op := range termOps {
		if result, err = b.combine(result, terms[i+1], op); err != nil {
			return nil, true, err
		}
	}
	out, err := b.setOrderBy(result, result.Schema(), order)
	if err != nil {
		return nil, true, err
	}
	if out, err = b.limit(out, limit); err != nil {
		return nil, true, err
	}
	return &planner.Query{Plan: out, NumParams: b.numParams}, true, nil
}

// combine applies one set operator. INTERSECT and EXCEPT compare whole rows with NULLs equal
// (<=>) and return distinct rows of the left side; their ALL forms are not supported.
func (b *binder) combine(l, r planner.Plan, op setOp) (planner.Plan, error) {
	if op.kind == setUnion {
		return b.newUnion([]planner.Plan{l, r}, op.all)
	}
	name := map[setOpKind]string{setIntersect: "INTERSECT", setExcept: "EXCEPT"}[op.kind]
	if op.all {
		return nil, errs.Unsupportedf("%s ALL is not supported", name)
	}
	if len(l.Schema()) != len(r.Schema()) {
		return nil, errs.Invalidf("The used SELECT statements have a different number of columns")
	}
	// Like UNION, the result has the common type of both sides, and rows compare in it.
	types := make([]arrow.DataType, len(l.Schema()))
	for i := range types {
		t, err := commonType(l.Schema()[i].Type, r.Schema()[i].Type)
		if err != nil {
			return nil, err
		}
		types[i] = t
	}
	l, r = b.castColumns(l, types), b.castColumns(r, types)
	ls, rs := l.Schema(), r.Schema()
	var on planner.Expr
	for i := range ls {
		eq := &planner.Call{Func: "<=>", Args: []planner.Expr{columnRef(ls[i]), columnRef(rs[i])}, T: arrow.FixedWidthTypes.Boolean}
		if on == nil {
			on = eq
		} else {
			on = &planner.Call{Func: "and", Args: []planner.Expr{on, eq}, T: arrow.FixedWidthTypes.Boolean}
		}
	}
	kind := planner.SemiJoin
	if op.kind == setExcept {
		kind = planner.AntiJoin
	}
	return &planner.Distinct{Input: &planner.Join{Left: l, Right: r, Kind: kind, On: on, Columns: ls}}, nil
}

// castColumns projects p's columns to types, casting those of another type (fresh IDs) and
// passing the others through; p itself when every column already has its type.
func (b *binder) castColumns(p planner.Plan, types []arrow.DataType) planner.Plan {
	in := p.Schema()
	same := true
	for i, c := range in {
		same = same && arrow.TypeEqual(c.Type, types[i])
	}
	if same {
		return p
	}
	pr := &planner.Project{Input: p}
	for i, c := range in {
		if arrow.TypeEqual(c.Type, types[i]) {
			pr.Exprs = append(pr.Exprs, columnRef(c))
			pr.Columns = append(pr.Columns, c)
			continue
		}
		pr.Exprs = append(pr.Exprs, &planner.Cast{Expr: columnRef(c), To: types[i]})
		pr.Columns = append(pr.Columns, planner.Column{ID: b.newID(), Name: c.Name, Type: types[i], Nullable: true})
	}
	return pr
}
