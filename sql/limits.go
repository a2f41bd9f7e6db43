package sql

import (
	"context"
	"strings"

	"github.com/cachedb/cachedb/internal/errs"
)

// Limits bound what one statement may cost to plan. Every pass from the parser to execution
// walks expressions and plans recursively, and Go cannot recover from a stack overflow, so the
// nesting a statement can ask for is bounded before anything walks it; and a statement's size
// bounds the planner's time and memory, since planning is linear in it.
type Limits struct {
	// MaxStatementBytes is the longest statement text accepted (default 16 MiB; MySQL's
	// max_allowed_packet is 64 MiB).
	MaxStatementBytes int
	// MaxNestingDepth bounds the nesting of a statement (default 5,000), as counted by
	// nestingDepth: every open parenthesis and CASE, plus every operator between two operands
	// at one level of parentheses. Chains of AND, OR and UNION do not count: they are
	// rebalanced after parsing.
	MaxNestingDepth int
	// MaxPlanSize bounds the number of expressions and query blocks bound for a statement,
	// views expanded (default 2,000,000: a 1,000,000-item IN list fits).
	MaxPlanSize int
}

// DefaultLimits are the limits of a context without WithLimits, and of any zero field.
var DefaultLimits = Limits{MaxStatementBytes: 16 << 20, MaxNestingDepth: 5000, MaxPlanSize: 2_000_000}

type limitsKey struct{}

// WithLimits returns ctx carrying the limits that Bind applies; zero fields keep their default.
func WithLimits(ctx context.Context, l Limits) context.Context {
	return context.WithValue(ctx, limitsKey{}, l)
}

// limitsOf returns the limits ctx carries, defaults filled in.
func limitsOf(ctx context.Context) Limits {
	l, _ := ctx.Value(limitsKey{}).(Limits)
	if l.MaxStatementBytes <= 0 {
		l.MaxStatementBytes = DefaultLimits.MaxStatementBytes
	}
	if l.MaxNestingDepth <= 0 {
		l.MaxNestingDepth = DefaultLimits.MaxNestingDepth
	}
	if l.MaxPlanSize <= 0 {
		l.MaxPlanSize = DefaultLimits.MaxPlanSize
	}
	return l
}

// checkText applies the limits that are checked on a statement's text, before it is parsed.
func (l Limits) checkText(text string) error {
	if len(text) > l.MaxStatementBytes {
		return errs.Exhaustedf("statement is %d bytes long, more than the limit of %d bytes", len(text), l.MaxStatementBytes)
	}
	if d := nestingDepth(text, l.MaxNestingDepth); d > l.MaxNestingDepth {
		return errs.Exhaustedf("statement is nested too deeply: more than %d levels of parentheses, CASE and operators", l.MaxNestingDepth)
	}
	return nil
}

// nestingDepth bounds from above the depth of the syntax tree vitess builds for text, apart
// from AND, OR and UNION chains, in one pass over the text without recursion. It stops counting
// once the depth passes limit.
//
// Parentheses and CASE … END open a level; an operator (a symbol character such as + - * / = <
// ! ~, or NOT, XOR, DIV, MOD, IS, LIKE, REGEXP, BETWEEN, IN, JOIN, INTERVAL, BINARY, COLLATE,
// INTERSECT, EXCEPT) deepens the level it is in by one, since vitess nests a chain of
// operators one level per operator; a comma, WHEN, THEN or ELSE starts a sibling and resets
// the level's count, and so do AND, OR (&&, ||) and UNION, whose operands become siblings in
// the balanced tree — except that a UNION of the other kind (ALL after DISTINCT or back) than
// the level's last one nests, and counts. Quoted strings, identifiers and comments (not /*! */,
// which vitess reads) count nothing. It may overcount (a+b*c counts 2 for a tree 2 deep, a*b+c
// too); it undercounts only the chains of one kind of AND, OR or UNION shorter than 64, which
// keep vitess's shape: by at most 64 + log2 n per level. The binder counts exactly again.
func nestingDepth(text string, limit int) int {
	// level is one open level: ops counts its operators since the last sibling; unions counts
	// the switches between UNION ALL and UNION DISTINCT in it (a chain that mixes them cannot be
	// rebalanced, so every switch nests), and union is the kind of its last UNION (0 for none).
	type level struct{ ops, unions, union int }
	levels := []level{{}}
	depth, deepest := 1, 1 // depth is len(levels) + the sums of ops and unions
	open := func() {
		levels = append(levels, level{})
		depth++
	}
	closeLevel := func() {
		if top := levels[len(levels)-1]; len(levels) > 1 {
			depth -= 1 + top.ops + top.unions
			levels = levels[:len(levels)-1]
		}
	}
	sibling := func() {
		depth -= levels[len(levels)-1].ops
		levels[len(levels)-1].ops = 0
	}
	operator := func() {
		levels[len(levels)-1].ops++
		depth++
	}
	for i := 0; i < len(text) && deepest <= limit; i++ {
		c := text[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			i = skipQuoted(text, i)
		case c == '-' && i+2 < len(text) && text[i+1] == '-' && (text[i+2] == ' ' || text[i+2] == '\t' || text[i+2] == '\n'), c == '#':
			for i < len(text) && text[i] != '\n' {
				i++
			}
		case c == '/' && strings.HasPrefix(text[i:], "/*") && !strings.HasPrefix(text[i:], "/*!"):
			// A /*! … */ comment holds SQL that vitess parses: it is scanned as text.
			if end := strings.Index(text[i+2:], "*/"); end >= 0 {
				i += end + 3
			} else {
				i = len(text)
			}
		case c == '(':
			open()
		case c == ')':
			closeLevel()
		case c == ',':
			sibling()
		case (c == '&' || c == '|') && i+1 < len(text) && text[i+1] == c:
			i++ // && and || are AND and OR
			sibling()
		case strings.IndexByte("+-*/%&|^~!=<>", c) >= 0:
			operator()
		case isIdentByte(c) && (i == 0 || !isIdentByte(text[i-1])):
			word := identAt(text, i)
			i += len(word) - 1
			if len(word) < 2 || len(word) > 13 || c >= '0' && c <= '9' {
				continue
			}
			switch strings.ToUpper(word) {
			case "CASE":
				open()
			case "END":
				closeLevel()
			case "WHEN", "THEN", "ELSE", "AND", "OR":
				sibling()
			case "UNION":
				sibling()
				kind := 2
				j := i + 1
				for j < len(text) && (text[j] == ' ' || text[j] == '\t' || text[j] == '\n' || text[j] == '\r') {
					j++
				}
				if strings.EqualFold(identAt(text, j), "ALL") {
					kind = 1
				}
				if top := &levels[len(levels)-1]; top.union != kind {
					top.union = kind
					top.unions++
					depth++
				}
			case "NOT", "XOR", "DIV", "MOD", "IS", "LIKE", "REGEXP", "RLIKE", "BETWEEN", "IN", "JOIN",
				"STRAIGHT_JOIN", "INTERVAL", "BINARY", "COLLATE", "INTERSECT", "EXCEPT":
				operator()
			}
		}
		deepest = max(deepest, depth)
	}
	return deepest
}

// countNode counts one expression or query block against the plan size limit and checks, every
// so often, whether the statement's client has gone.
func (b *binder) countNode() error {
	b.nodes++
	if b.nodes > b.limits.MaxPlanSize {
		return errs.Exhaustedf("statement is too large: more than %d expressions and query blocks", b.limits.MaxPlanSize)
	}
	return b.checkEvery(b.nodes)
}

// enter counts one level of nesting of expressions and query blocks being bound; leave ends it.
// nestingDepth bounds the nesting of the text, but views expand into more, and this bound holds
// whatever the source of the nesting.
// A failed enter leaves the count as it was.
func (b *binder) enter() error {
	if b.depth >= b.limits.MaxNestingDepth {
		return errs.Exhaustedf("statement is nested too deeply: more than %d levels of expressions and queries", b.limits.MaxNestingDepth)
	}
	if err := b.countNode(); err != nil {
		return err
	}
	b.depth++
	return nil
}

func (b *binder) leave() { b.depth-- }

// maxQueryNesting is how deep query blocks (subqueries, derived tables, views) may nest: MySQL's
// limit, which also bounds the passes that look at every subquery below the one at hand.
const maxQueryNesting = 63

// enterQuery is enter for a query block, which also counts against maxQueryNesting;
// leaveQuery ends it.
func (b *binder) enterQuery() error {
	if b.queries >= maxQueryNesting {
		return errs.Exhaustedf("Too high level of nesting for select: more than %d nested query blocks", maxQueryNesting)
	}
	if err := b.enter(); err != nil {
		return err
	}
	b.queries++
	return nil
}

func (b *binder) leaveQuery() {
	b.leave()
	b.queries--
}

// checkEvery returns the statement context's error on every 1024th item i of a long list, so
// that binding a huge statement stops soon after its client has gone.
func (b *binder) checkEvery(i int) error {
	if i%1024 != 1023 || b.ctx == nil {
		return nil
	}
	return b.ctx.Err()
}
