package sql

import "vitess.io/vitess/go/vt/sqlparser"

// minBalancedChain is the number of operands from which a chain of AND, OR or UNION is
// rebalanced. Shorter chains keep vitess's shape, so the text of an unaliased select item (its
// column name) stays as written.
const minBalancedChain = 64

// balanceChains rebuilds the long chains of AND, OR and UNION (of one kind: ALL or DISTINCT,
// without ORDER BY, LIMIT, WITH or INTO of their own) in stmt as balanced trees of the same
// operands in the same order. vitess nests such a chain one level per operand, so a statement
// of a million ANDs would be a million levels deep, and every recursive walk of it — vitess's
// own printing and walking, the binder, the planner, evaluation — would risk overflowing the
// stack, which Go cannot recover from. The operators are associative (AND and OR under
// three-valued logic, and they evaluate every operand), so the balanced tree means the same.
// Chains are collected with an explicit stack; the walk into the rebalanced tree is log-deep.
func balanceChains(stmt sqlparser.Statement) sqlparser.Statement {
	built := map[sqlparser.SQLNode]bool{}
	out := sqlparser.Rewrite(stmt, func(c *sqlparser.Cursor) bool {
		// Only the nodes this function builds are looked up in built: other nodes may not be
		// comparable.
		switch n := c.Node().(type) {
		case *sqlparser.AndExpr:
			if built[n] {
				return true
			}
			if ops := chainOperands(sqlparser.Expr(n), andOperands); len(ops) >= minBalancedChain {
				c.ReplaceAndRevisit(balanced(ops, built, func(l, r sqlparser.Expr) sqlparser.Expr { return &sqlparser.AndExpr{Left: l, Right: r} }))
			}
		case *sqlparser.OrExpr:
			if built[n] {
				return true
			}
			if ops := chainOperands(sqlparser.Expr(n), orOperands); len(ops) >= minBalancedChain {
				c.ReplaceAndRevisit(balanced(ops, built, func(l, r sqlparser.Expr) sqlparser.Expr { return &sqlparser.OrExpr{Left: l, Right: r} }))
			}
		case *sqlparser.Union:
			if built[n] {
				return true
			}
			ops := unionOperands(n)
			if len(ops) < minBalancedChain {
				return true
			}
			half := len(ops) / 2
			join := func(l, r sqlparser.TableStatement) sqlparser.TableStatement {
				return &sqlparser.Union{Left: l, Right: r, Distinct: n.Distinct}
			}
			root := *n
			root.Left, root.Right = balanced(ops[:half], built, join), balanced(ops[half:], built, join)
			built[&root] = true
			c.ReplaceAndRevisit(&root)
		}
		return true
	}, nil)
	return out.(sqlparser.Statement)
}

// andOperands and orOperands return the operands of a node of their chain, nil for any other.
func andOperands(e sqlparser.Expr) []sqlparser.Expr {
	if a, ok := e.(*sqlparser.AndExpr); ok {
		return []sqlparser.Expr{a.Left, a.Right}
	}
	return nil
}

func orOperands(e sqlparser.Expr) []sqlparser.Expr {
	if o, ok := e.(*sqlparser.OrExpr); ok {
		return []sqlparser.Expr{o.Left, o.Right}
	}
	return nil
}

// chainOperands lists the operands of the chain rooted at e, left to right, without recursion.
func chainOperands(e sqlparser.Expr, operands func(sqlparser.Expr) []sqlparser.Expr) []sqlparser.Expr {
	var out []sqlparser.Expr
	stack := []sqlparser.Expr{e}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if ops := operands(x); ops != nil {
			stack = append(stack, ops[1], ops[0])
			continue
		}
		out = append(out, x)
	}
	return out
}

// balanced joins ops (at least one) into a tree of depth ⌈log2 len(ops)⌉, marking the nodes it
// builds in built. Its recursion is as deep as the tree.
func balanced[T sqlparser.SQLNode](ops []T, built map[sqlparser.SQLNode]bool, join func(l, r T) T) T {
	if len(ops) == 1 {
		return ops[0]
	}
	half := len(ops) / 2
	n := join(balanced(ops[:half], built, join), balanced(ops[half:], built, join))
	built[n] = true
	return n
}
