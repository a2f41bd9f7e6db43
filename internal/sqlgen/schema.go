// Package sqlgen generates random tables and random MySQL 8 queries over them, and checks the
// answers of an engine against themselves with SQLancer's oracles (ternary logic partitioning
// and non-optimizing reference engine construction). It needs no second engine: an oracle
// derives two queries whose results must agree and reports when they do not.
//
// Every generated query is valid MySQL 8 with a deterministic result: no LIMIT without a total
// ORDER BY, no SUM or AVG over DOUBLE where partitions are recombined, no nondeterministic
// functions. Generation is a pure function of the seed.
package sqlgen

import (
	"fmt"
	"math/big"
	"math/rand"
	"strings"
)

// Type is the SQL type class of a column or generated expression.
type Type int

const (
	Int Type = iota
	BigInt
	Decimal
	Double
	Varchar
	Date
	DateTime
	Bool
)

// numeric reports whether values of t compare and compute as numbers.
func (t Type) numeric() bool { return t <= Double }

// temporal reports whether t is DATE or DATETIME.
func (t Type) temporal() bool { return t == Date || t == DateTime }

// Column is one column of a generated table.
type Column struct {
	Name string
	Type Type
	SQL  string // the column type as CREATE TABLE spells it
	prec int    // DECIMAL precision
	scl  int    // DECIMAL scale
}

// Table is a generated table: its columns and its rows as SQL literals.
type Table struct {
	Name    string
	Columns []Column
	Rows    [][]string
}

// Schema is the set of tables one run of the generator queries.
type Schema struct {
	Tables []Table
}

// Statements returns the CREATE TABLE and INSERT statements that build s.
func (s *Schema) Statements() []string {
	var out []string
	for _, t := range s.Tables {
		cols := make([]string, len(t.Columns))
		for i, c := range t.Columns {
			cols[i] = c.Name + " " + c.SQL
		}
		out = append(out, fmt.Sprintf("CREATE TABLE %s (%s)", t.Name, strings.Join(cols, ", ")))
		if len(t.Rows) == 0 {
			continue
		}
		rows := make([]string, len(t.Rows))
		for i, r := range t.Rows {
			rows[i] = "(" + strings.Join(r, ", ") + ")"
		}
		out = append(out, fmt.Sprintf("INSERT INTO %s VALUES %s", t.Name, strings.Join(rows, ", ")))
	}
	return out
}

// RandomSchema makes two or three small tables whose values are rich in NULLs, duplicates,
// negatives, zeros, empty and mixed-case strings and edge-of-month dates.
func RandomSchema(r *rand.Rand) *Schema {
	s := &Schema{}
	for ti := 0; ti < 2+r.Intn(2); ti++ {
		t := Table{Name: fmt.Sprintf("t%d", ti)}
		for ci := 0; ci < 2+r.Intn(4); ci++ {
			t.Columns = append(t.Columns, randomColumn(r, fmt.Sprintf("c%d", ci)))
		}
		n := []int{0, 3, 9, 20}[r.Intn(4)]
		for ri := 0; ri < n; ri++ {
			row := make([]string, len(t.Columns))
			for ci, c := range t.Columns {
				row[ci] = randomValue(r, c)
			}
			t.Rows = append(t.Rows, row)
		}
		// Duplicate rows make multiset bugs visible.
		if len(t.Rows) > 0 && r.Intn(2) == 0 {
			t.Rows = append(t.Rows, t.Rows[r.Intn(len(t.Rows))])
		}
		s.Tables = append(s.Tables, t)
	}
	return s
}

func randomColumn(r *rand.Rand, name string) Column {
	switch r.Intn(7) {
	case 0:
		return Column{Name: name, Type: Int, SQL: "INT"}
	case 1:
		return Column{Name: name, Type: BigInt, SQL: "BIGINT"}
	case 2:
		p := 4 + r.Intn(9)
		s := r.Intn(4)
		return Column{Name: name, Type: Decimal, SQL: fmt.Sprintf("DECIMAL(%d,%d)", p, s), prec: p, scl: s}
	case 3:
		return Column{Name: name, Type: Double, SQL: "DOUBLE"}
	case 4:
		return Column{Name: name, Type: Varchar, SQL: "VARCHAR(20)"} // the longest pooled string has 19 characters
	case 5:
		return Column{Name: name, Type: Date, SQL: "DATE"}
	default:
		return Column{Name: name, Type: DateTime, SQL: "DATETIME"}
	}
}

var (
	stringPool   = []string{"", "2020-01-31", "2021-02-29", "1999-3-15", "2024-06-30 10:30:00", "a", "A", "abc", "Abc", "ABC", "b", "a%b", "a_c", " x", "x ", "10", "-3", "2.5", "zz", "hello", "Hello World"}
	datePool     = []string{"2020-01-01", "2020-01-31", "2020-02-29", "2021-12-31", "1999-03-15", "2024-06-30", "1970-01-01", "2038-01-19"}
	timeOfDay    = []string{"00:00:00", "10:30:00", "23:59:59", "12:00:01", "06:07:08"}
	doublePool   = []string{"0", "1", "-1", "0.5", "-2.25", "3.125", "100", "1e10", "-7.75"}
	smallIntPool = []int64{0, 1, -1, 2, -2, 3, 5, 7, 10, -10, 42, 100}
)

// randomValue is one value of c as a SQL literal; NULL about one time in six.
func randomValue(r *rand.Rand, c Column) string {
	if r.Intn(6) == 0 {
		return "NULL"
	}
	switch c.Type {
	case Int:
		if r.Intn(25) == 0 {
			return []string{"2147483647", "-2147483648"}[r.Intn(2)]
		}
		return fmt.Sprint(smallIntPool[r.Intn(len(smallIntPool))])
	case BigInt:
		if r.Intn(25) == 0 {
			return []string{"9223372036854775807", "-9223372036854775807", "4294967296"}[r.Intn(3)]
		}
		if r.Intn(4) == 0 {
			return fmt.Sprint(smallIntPool[r.Intn(len(smallIntPool))] * 1_000_000_007)
		}
		return fmt.Sprint(smallIntPool[r.Intn(len(smallIntPool))])
	case Decimal:
		return decimalLiteral(r, c.prec, c.scl)
	case Double:
		return doublePool[r.Intn(len(doublePool))]
	case Varchar:
		return quote(stringPool[r.Intn(len(stringPool))])
	case Date:
		return quote(datePool[r.Intn(len(datePool))])
	default:
		return quote(datePool[r.Intn(len(datePool))] + " " + timeOfDay[r.Intn(len(timeOfDay))])
	}
}

// decimalPool holds small values with many digits after the point, so that rounding to a
// column's scale makes duplicates and near-duplicates.
var decimalPool = []string{"0", "1", "-1", "0.5", "-0.5", "1.25", "-2.5", "2", "10", "3.333", "-7.125", "100.01", "0.01", "-0.001", "42", "999.999"}

// decimalLiteral is a value that fits DECIMAL(p,s), written with scale s.
func decimalLiteral(r *rand.Rand, p, s int) string {
	for {
		v, _ := new(big.Rat).SetString(decimalPool[r.Intn(len(decimalPool))])
		text := v.FloatString(s)
		digits := strings.TrimPrefix(text, "-")
		if i := strings.IndexByte(digits, '.'); i >= 0 {
			digits = digits[:i]
		}
		if len(digits) <= p-s {
			return text
		}
	}
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
