package sqlgen

import (
	"fmt"
	"math/rand"
	"strings"
)

// ref is a column visible to an expression, already qualified (t0.c1).
type ref struct {
	name string
	typ  Type
}

// Gen generates expressions and queries over one schema.
type Gen struct {
	r      *rand.Rand
	schema *Schema
	// subqueries allows subquery predicates and scalar subqueries; off inside a subquery so
	// nesting stays shallow.
	subqueries bool
	aliasSeq   int
}

// NewGen returns a generator over schema driven by r.
func NewGen(r *rand.Rand, schema *Schema) *Gen {
	return &Gen{r: r, schema: schema, subqueries: true}
}

func (g *Gen) pick(n int) int { return g.r.Intn(n) }

func (g *Gen) chance(oneIn int) bool { return g.r.Intn(oneIn) == 0 }

// scopeOf lists the columns of tables under their aliases.
func scopeOf(tables []Table, aliases []string) []ref {
	var out []ref
	for i, t := range tables {
		for _, c := range t.Columns {
			out = append(out, ref{name: aliases[i] + "." + c.Name, typ: c.Type})
		}
	}
	return out
}

// column returns a column of scope whose type class matches want, or "" when there is none.
func (g *Gen) column(scope []ref, want Type) string {
	var match []string
	for _, c := range scope {
		if sameClass(c.typ, want) {
			match = append(match, c.name)
		}
	}
	if len(match) == 0 {
		return ""
	}
	return match[g.pick(len(match))]
}

// sameClass groups the types an expression generator may use interchangeably.
func sameClass(have, want Type) bool {
	switch want {
	case Int, BigInt:
		return have == Int || have == BigInt
	default:
		return have == want
	}
}

// Expr is a random expression of type class t over scope, at most depth levels deep.
func (g *Gen) Expr(scope []ref, t Type, depth int) string {
	if t == Bool {
		return g.boolExpr(scope, depth)
	}
	if depth <= 0 || g.chance(3) {
		return g.leaf(scope, t)
	}
	d := depth - 1
	switch g.pick(8) {
	case 6:
		u := g.comparable(scope)
		return fmt.Sprintf("CASE %s WHEN %s THEN %s WHEN %s THEN %s END", g.Expr(scope, u, d), g.Expr(scope, u, 0), g.Expr(scope, t, d), g.Expr(scope, u, 0), g.Expr(scope, t, d))
	case 7:
		return fmt.Sprintf("%s(%s, %s)", []string{"NULLIF", "IFNULL"}[g.pick(2)], g.Expr(scope, t, d), g.Expr(scope, t, d))
	case 0:
		return fmt.Sprintf("CASE WHEN %s THEN %s ELSE %s END", g.boolExpr(scope, d), g.Expr(scope, t, d), g.Expr(scope, t, d))
	case 1:
		return fmt.Sprintf("COALESCE(%s, %s)", g.Expr(scope, t, d), g.Expr(scope, t, d))
	case 2:
		return fmt.Sprintf("IF(%s, %s, %s)", g.boolExpr(scope, d), g.Expr(scope, t, d), g.Expr(scope, t, d))
	case 3:
		if g.subqueries && g.chance(2) {
			if s := g.scalarSubquery(scope, t); s != "" {
				return s
			}
		}
		fallthrough
	default:
		return g.typed(scope, t, d)
	}
}

// typed is an operator or function whose result is of class t.
func (g *Gen) typed(scope []ref, t Type, d int) string {
	switch t {
	case Int, BigInt:
		switch g.pick(14) {
		case 12:
			return fmt.Sprintf("%s(%s, %s)", []string{"LOCATE", "INSTR", "STRCMP"}[g.pick(3)], g.Expr(scope, Varchar, d), g.Expr(scope, Varchar, d))
		case 13:
			return fmt.Sprintf("CAST(%s AS SIGNED)", g.Expr(scope, Varchar, d))
		case 0:
			return fmt.Sprintf("(%s + %s)", g.Expr(scope, Int, d), g.Expr(scope, Int, d))
		case 1:
			return fmt.Sprintf("(%s - %s)", g.Expr(scope, Int, d), g.Expr(scope, Int, d))
		case 2:
			return fmt.Sprintf("(%s * %s)", g.Expr(scope, Int, d), g.smallInt())
		case 3:
			return fmt.Sprintf("(%s %% %s)", g.Expr(scope, Int, d), g.Expr(scope, Int, d))
		case 4:
			return fmt.Sprintf("(%s DIV %s)", g.Expr(scope, Int, d), g.Expr(scope, Int, d))
		case 5:
			return fmt.Sprintf("ABS(%s)", g.Expr(scope, Int, d))
		case 6:
			return fmt.Sprintf("%s(%s)", []string{"LENGTH", "CHAR_LENGTH"}[g.pick(2)], g.Expr(scope, Varchar, d))
		case 7:
			return fmt.Sprintf("%s(%s)", []string{"YEAR", "MONTH", "DAY", "DAYOFWEEK", "DAYOFYEAR", "QUARTER", "WEEKDAY", "TO_DAYS"}[g.pick(8)], g.Expr(scope, Date, d))
		case 8:
			return fmt.Sprintf("DATEDIFF(%s, %s)", g.Expr(scope, Date, d), g.Expr(scope, Date, d))
		case 9:
			return fmt.Sprintf("CAST(%s AS SIGNED)", g.Expr(scope, []Type{Decimal, Double, Int}[g.pick(3)], d))
		case 10:
			return fmt.Sprintf("(%s)", g.boolExpr(scope, d))
		default:
			return fmt.Sprintf("%s(%s, %s)", []string{"GREATEST", "LEAST"}[g.pick(2)], g.Expr(scope, Int, d), g.Expr(scope, Int, d))
		}
	case Decimal:
		switch g.pick(6) {
		case 0:
			return fmt.Sprintf("(%s + %s)", g.Expr(scope, Decimal, d), g.Expr(scope, []Type{Decimal, Int}[g.pick(2)], d))
		case 1:
			return fmt.Sprintf("(%s - %s)", g.Expr(scope, Decimal, d), g.Expr(scope, Decimal, d))
		case 2:
			return fmt.Sprintf("(%s * %s)", g.Expr(scope, Decimal, d), g.Expr(scope, Int, d))
		case 3:
			return fmt.Sprintf("(%s / %s)", g.Expr(scope, []Type{Decimal, Int}[g.pick(2)], d), g.Expr(scope, []Type{Decimal, Int}[g.pick(2)], d))
		case 4:
			return fmt.Sprintf("ROUND(%s, %d)", g.Expr(scope, Decimal, d), g.pick(3))
		default:
			return fmt.Sprintf("CAST(%s AS DECIMAL(12,%d))", g.Expr(scope, []Type{Int, Decimal, Double}[g.pick(3)], d), g.pick(4))
		}
	case Double:
		switch g.pick(5) {
		case 4:
			return fmt.Sprintf("(%s + 0e0)", g.Expr(scope, Varchar, d))
		case 0:
			return fmt.Sprintf("(%s * %s)", g.Expr(scope, Double, d), g.Expr(scope, []Type{Double, Int, Decimal}[g.pick(3)], d))
		case 1:
			return fmt.Sprintf("(%s + %s)", g.Expr(scope, Double, d), g.Expr(scope, []Type{Double, Int}[g.pick(2)], d))
		case 2:
			return fmt.Sprintf("ABS(%s)", g.Expr(scope, Double, d))
		default:
			return fmt.Sprintf("(-%s)", g.Expr(scope, Double, d))
		}
	case Varchar:
		switch g.pick(10) {
		case 0:
			return fmt.Sprintf("CONCAT(%s, %s)", g.Expr(scope, Varchar, d), g.Expr(scope, Varchar, d))
		case 1:
			return fmt.Sprintf("%s(%s)", []string{"UPPER", "LOWER", "TRIM", "LTRIM", "RTRIM", "REVERSE"}[g.pick(6)], g.Expr(scope, Varchar, d))
		case 2:
			return fmt.Sprintf("SUBSTRING(%s, %d, %d)", g.Expr(scope, Varchar, d), g.pick(5)-1, g.pick(4))
		case 3:
			return fmt.Sprintf("%s(%s, %d)", []string{"LEFT", "RIGHT"}[g.pick(2)], g.Expr(scope, Varchar, d), g.pick(4))
		case 4:
			return fmt.Sprintf("REPLACE(%s, %s, %s)", g.Expr(scope, Varchar, d), quote(stringPool[g.pick(len(stringPool))]), quote(stringPool[g.pick(len(stringPool))]))
		case 5:
			return fmt.Sprintf("CAST(%s AS CHAR)", g.Expr(scope, []Type{Int, Decimal, Date, DateTime}[g.pick(4)], d))
		case 6:
			return fmt.Sprintf("DATE_FORMAT(%s, %s)", g.Expr(scope, []Type{Date, DateTime}[g.pick(2)], d), quote([]string{"%Y-%m", "%d/%m/%Y", "%W %M", "%H:%i", "%j"}[g.pick(5)]))
		case 7:
			return fmt.Sprintf("%s(%s)", []string{"MONTHNAME", "DAYNAME"}[g.pick(2)], g.Expr(scope, Date, d))
		case 8:
			return fmt.Sprintf("LPAD(%s, %d, 'xy')", g.Expr(scope, Varchar, d), g.pick(6))
		default:
			return fmt.Sprintf("CONCAT_WS('-', %s, %s)", g.Expr(scope, Varchar, d), g.Expr(scope, Varchar, d))
		}
	case Date:
		switch g.pick(7) {
		case 5:
			return fmt.Sprintf("CAST(%s AS DATE)", g.Expr(scope, []Type{Varchar, DateTime}[g.pick(2)], d))
		case 6:
			return fmt.Sprintf("STR_TO_DATE(%s, '%%Y-%%m-%%d')", g.Expr(scope, Varchar, d))
		case 0:
			return fmt.Sprintf("(%s + INTERVAL %d %s)", g.Expr(scope, Date, d), g.pick(40)-20, []string{"DAY", "MONTH", "YEAR", "WEEK", "QUARTER"}[g.pick(5)])
		case 1:
			return fmt.Sprintf("DATE_SUB(%s, INTERVAL %d DAY)", g.Expr(scope, Date, d), g.pick(400))
		case 2:
			return fmt.Sprintf("LAST_DAY(%s)", g.Expr(scope, Date, d))
		case 3:
			return fmt.Sprintf("DATE(%s)", g.Expr(scope, DateTime, d))
		default:
			return fmt.Sprintf("DATE_ADD(%s, INTERVAL %d MONTH)", g.Expr(scope, Date, d), g.pick(30)-15)
		}
	case DateTime:
		switch g.pick(3) {
		case 0:
			return fmt.Sprintf("(%s + INTERVAL %d %s)", g.Expr(scope, DateTime, d), g.pick(100)-50, []string{"HOUR", "MINUTE", "SECOND", "DAY", "MONTH"}[g.pick(5)])
		case 1:
			return fmt.Sprintf("TIMESTAMP(%s)", g.Expr(scope, Date, d))
		default:
			return fmt.Sprintf("DATE_SUB(%s, INTERVAL %d HOUR)", g.Expr(scope, DateTime, d), g.pick(48))
		}
	}
	return g.leaf(scope, t)
}

// leaf is a column of class t, or a literal of it.
func (g *Gen) leaf(scope []ref, t Type) string {
	if !g.chance(5) {
		if c := g.column(scope, t); c != "" {
			return c
		}
	}
	return g.literal(t)
}

func (g *Gen) smallInt() string { return fmt.Sprint(smallIntPool[g.pick(len(smallIntPool))]) }

// literal is a constant of class t, NULL now and then.
func (g *Gen) literal(t Type) string {
	if g.chance(12) {
		return "NULL"
	}
	switch t {
	case Int, BigInt:
		return g.smallInt()
	case Decimal:
		return decimalLiteral(g.r, 8, 1+g.pick(3))
	case Double:
		if v := doublePool[g.pick(len(doublePool))]; strings.Contains(v, "e") {
			return v
		} else {
			return v + "e0"
		}
	case Varchar:
		return quote(stringPool[g.pick(len(stringPool))])
	case Date:
		return "DATE " + quote(datePool[g.pick(len(datePool))])
	case DateTime:
		return "TIMESTAMP " + quote(datePool[g.pick(len(datePool))]+" "+timeOfDay[g.pick(len(timeOfDay))])
	default:
		return []string{"TRUE", "FALSE", "NULL"}[g.pick(3)]
	}
}

// comparable is a type class to compare, weighted to the classes scope has columns of.
func (g *Gen) comparable(scope []ref) Type {
	if len(scope) > 0 && !g.chance(8) {
		t := scope[g.pick(len(scope))].typ
		if t == BigInt {
			return Int
		}
		return t
	}
	return []Type{Int, Decimal, Double, Varchar, Date, DateTime}[g.pick(6)]
}

// boolExpr is a random predicate over scope.
func (g *Gen) boolExpr(scope []ref, depth int) string {
	if depth <= 0 {
		return g.comparison(scope, 0)
	}
	d := depth - 1
	switch g.pick(14) {
	case 0:
		return fmt.Sprintf("(%s AND %s)", g.boolExpr(scope, d), g.boolExpr(scope, d))
	case 1:
		return fmt.Sprintf("(%s OR %s)", g.boolExpr(scope, d), g.boolExpr(scope, d))
	case 2:
		return fmt.Sprintf("(NOT %s)", g.boolExpr(scope, d))
	case 3:
		t := g.comparable(scope)
		return fmt.Sprintf("(%s IS %sNULL)", g.Expr(scope, t, d), g.not())
	case 4:
		t := g.comparable(scope)
		return fmt.Sprintf("(%s %sBETWEEN %s AND %s)", g.Expr(scope, t, d), g.not(), g.Expr(scope, t, 0), g.Expr(scope, t, 0))
	case 5:
		t := g.comparable(scope)
		items := make([]string, 1+g.pick(4))
		for i := range items {
			items[i] = g.Expr(scope, t, 0)
			// Text in the list converts to the type of the value tested.
			if (t.numeric() || t.temporal()) && g.chance(6) {
				if c := g.column(scope, Varchar); c != "" {
					items[i] = c
				} else {
					items[i] = quote([]string{"10", "2020-01-31", "1999-3-15", "abc", "-1"}[g.pick(5)])
				}
			}
		}
		return fmt.Sprintf("(%s %sIN (%s))", g.Expr(scope, t, d), g.not(), strings.Join(items, ", "))
	case 6:
		pat := []string{"a%", "%a%", "A%", "_", "%", "", "a_c", "%b", "1%", "2020%", "%-01%", "a\\%b"}[g.pick(12)]
		return fmt.Sprintf("(%s %sLIKE %s)", g.Expr(scope, Varchar, d), g.not(), quote(pat))
	case 7:
		return fmt.Sprintf("(%s IS %s%s)", g.boolExpr(scope, d), g.not(), []string{"TRUE", "FALSE"}[g.pick(2)])
	case 8, 9:
		if g.subqueries {
			return g.subqueryPredicate(scope)
		}
		return g.comparison(scope, d)
	default:
		return g.comparison(scope, d)
	}
}

func (g *Gen) not() string {
	if g.chance(3) {
		return "NOT "
	}
	return ""
}

var comparisonOps = []string{"=", "<>", "<", "<=", ">", ">=", "<=>", "!="}

// comparison compares two expressions of one class; dates are sometimes compared with date
// text, which MySQL reads as a date.
func (g *Gen) comparison(scope []ref, d int) string {
	t := g.comparable(scope)
	op := comparisonOps[g.pick(len(comparisonOps))]
	right := g.Expr(scope, t, d)
	if t.temporal() && g.chance(3) {
		right = quote(datePool[g.pick(len(datePool))])
	}
	if t == Int && g.chance(4) {
		right = g.Expr(scope, []Type{Decimal, Double}[g.pick(2)], d)
	}
	// MySQL compares a number with text as numbers, and a date with a number as YYYYMMDD.
	if t.numeric() && g.chance(8) {
		right = quote([]string{"10", "2.5", "-1", "abc", "", "1e1", " 3", "0x"}[g.pick(8)])
	}
	if t == Date && g.chance(10) {
		right = []string{"20200101", "20200229", "19991231"}[g.pick(3)]
	}
	// Text that is not a constant converts to the other side's type.
	if (t.numeric() || t.temporal()) && g.chance(8) {
		if c := g.column(scope, Varchar); c != "" {
			right = c
		}
	}
	return fmt.Sprintf("(%s %s %s)", g.Expr(scope, t, d), op, right)
}
