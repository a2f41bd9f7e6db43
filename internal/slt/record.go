// Package slt runs sqllogictest files against a cachedb server. It parses the files into
// records, runs each record through a Conn (in production the ADBC Flight SQL driver talking to
// a real `cachedb serve` process), formats results the way the sqllogictest reference
// implementation does, and reports pass, fail and skip counts per file.
//
// File format: https://www.sqlite.org/sqllogictest/doc/trunk/about.wiki
package slt

// Kind is what a record asks the runner to do.
type Kind int

const (
	// KindStatement runs SQL that returns no rows and checks that it succeeds or fails.
	KindStatement Kind = iota + 1
	// KindQuery runs SQL and compares its result with the expected values.
	KindQuery
	// KindHashThreshold changes the number of values above which results are hashed.
	KindHashThreshold
	// KindHalt stops the file.
	KindHalt
)

func (k Kind) String() string {
	switch k {
	case KindStatement:
		return "statement"
	case KindQuery:
		return "query"
	case KindHashThreshold:
		return "hash-threshold"
	case KindHalt:
		return "halt"
	default:
		return "unknown"
	}
}

// SortMode is how a query's values are ordered before they are compared or hashed.
type SortMode int

const (
	// NoSort compares values in the order the engine returned them.
	NoSort SortMode = iota
	// RowSort sorts rows, comparing their formatted values left to right as strings.
	RowSort
	// ValueSort sorts every value on its own, ignoring row boundaries.
	ValueSort
	// Matches is this project's one extension of the format, for output whose exact text is not
	// the point (EXPLAIN): every expected line is a regular expression, and the lines must match
	// rows of the result in order, skipping rows in between. A row is matched as its values
	// joined by single spaces. Corpus files never use it.
	Matches
)

func (m SortMode) String() string {
	switch m {
	case RowSort:
		return "rowsort"
	case ValueSort:
		return "valuesort"
	case Matches:
		return "matches"
	default:
		return "nosort"
	}
}

// Condition is a `skipif ENGINE` or `onlyif ENGINE` line in front of a record.
type Condition struct {
	// Only is true for onlyif, false for skipif.
	Only   bool
	Engine string
}

// Hashed is an expected result written as `<Count> values hashing to <MD5>`.
type Hashed struct {
	Count int
	MD5   string
}

// Record is one record of a test file. Fields that do not apply to its Kind are zero.
type Record struct {
	// File and Line locate the record's command line (1-based), for reports.
	File string
	Line int
	Kind Kind
	// Conditions are the skipif / onlyif lines in front of the record, in file order.
	Conditions []Condition

	// SQL is the statement or query text, lines joined with "\n".
	SQL string
	// ExpectError is true for `statement error`.
	ExpectError bool

	// Types holds one letter per result column: I (integer), R (real), T (text).
	Types string
	Sort  SortMode
	// Label names a query whose result must equal that of every other query with the same
	// label in the file.
	Label string
	// Expected holds the lines after `----`, unless the result is given as a hash.
	Expected []string
	// ExpectedHash is set when the result is written as `N values hashing to MD5`.
	ExpectedHash *Hashed

	// Threshold is the argument of hash-threshold.
	Threshold int
}

// AppliesTo reports whether the record runs for the given engine label: no skipif names it, and
// every onlyif names it. This matches the reference implementation, where any onlyif for another
// engine skips the record.
func (r *Record) AppliesTo(engine string) bool {
	for _, c := range r.Conditions {
		if c.Only != (c.Engine == engine) {
			return false
		}
	}
	return true
}

// Counted reports whether the record counts towards ok / fail / skip totals: statements and
// queries do, control records (hash-threshold, halt) do not.
func (r *Record) Counted() bool {
	return r.Kind == KindStatement || r.Kind == KindQuery
}
