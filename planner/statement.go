package planner

import "github.com/apache/arrow-go/v18/arrow"

// Statement is a bound SQL statement: a query, or a command the engine carries out. The set of
// implementations is closed.
type Statement interface{ statement() }

// Query is a SELECT (or UNION, …) whose result goes to the client. Names are the output column
// names as the client sees them (Plan's column names may be deduplicated internally).
type Query struct {
	Plan Plan
	// NumParams is the number of ? placeholders.
	NumParams int
}

// Explain is EXPLAIN [ANALYZE] of a query.
type Explain struct {
	Query   *Query
	Analyze bool
	// SQL is the text of the query, as it can be planned again elsewhere (the data nodes of a
	// distributed EXPLAIN ANALYZE).
	SQL string
}

// CreateTable is CREATE TABLE name (…) or CREATE TABLE name AS SELECT ….
type CreateTable struct {
	Name        string
	Schema      *arrow.Schema // for AS SELECT, the query's output schema
	IfNotExists bool
	AsSelect    *Query // nil for a plain CREATE TABLE
	// AsSelectSQL is the text of the AS SELECT query, as it can be run again elsewhere (a data
	// node materializing a dataset).
	AsSelectSQL string
	// Keys are the PRIMARY KEY and UNIQUE keys declared with the columns (none for AS SELECT).
	Keys []TableKey
}

// TableKey is a PRIMARY KEY or UNIQUE key of CREATE TABLE. Its columns are distinct, the
// primary key's are NOT NULL in Schema, and the names of a table's keys are distinct.
type TableKey struct {
	// Name is "PRIMARY" for the primary key; a UNIQUE key has its declared name or, as MySQL
	// names it, its first column's name (suffixed _2, _3, … when that is taken).
	Name    string
	Primary bool
	Columns []int // Schema indexes, in key order
	// PrefixLengths gives, per column, the leading characters the key compares (a MySQL prefix
	// key part such as UNIQUE (a(1))); 0 compares the whole value.
	PrefixLengths []int
}

// Insert is INSERT INTO table [(cols)] VALUES … | SELECT …. Source yields one column per
// Columns entry, already cast to the table's column types; table columns not listed get NULL.
type Insert struct {
	Table   string
	Columns []int // table column index of each Source column
	Source  *Query
	// OnDuplicate says what happens to a row whose PRIMARY or UNIQUE key value is taken:
	// INSERT fails (the zero value), INSERT IGNORE skips the row, REPLACE deletes the holders.
	OnDuplicate OnDuplicate
}

// OnDuplicate is the way an INSERT treats a row that repeats a key value.
type OnDuplicate int

const (
	// DuplicateFails fails the statement, which then adds no row (INSERT).
	DuplicateFails OnDuplicate = iota
	// DuplicateSkipped leaves such rows out (INSERT IGNORE).
	DuplicateSkipped
	// DuplicateReplaces deletes the rows holding the new row's key values first (REPLACE).
	DuplicateReplaces
)

// DropTable is DROP TABLE [IF EXISTS] names.
type DropTable struct {
	Names    []string
	IfExists bool
}

// Delete is DELETE FROM table [WHERE …]: Keep yields the rows that stay (every table column,
// typed as the table's), Deleted counts the rows that go.
type Delete struct {
	Table   string
	Keep    *Query
	Deleted *Query
}

// Update is UPDATE table SET … [WHERE …]: NewContents yields every row of the table after the
// update (every column, typed as the table's), Matched counts the rows the WHERE selects.
type Update struct {
	Table       string
	NewContents *Query
	Matched     *Query
}

// CreateView is CREATE [OR REPLACE] VIEW name AS query. Query is the view's SELECT as text; it
// was bound once to check it.
type CreateView struct {
	Name      string
	Query     string
	OrReplace bool
}

// DropView is DROP VIEW [IF EXISTS] names.
type DropView struct {
	Names    []string
	IfExists bool
}

// CreateIndex is CREATE INDEX name ON table (…); DropIndex is DROP INDEX name [ON table]. They
// are recorded in the catalog; no index structure is built.
type CreateIndex struct{ Table, Name string }

// DropIndex is DROP INDEX name [ON table] (Table empty without ON).
type DropIndex struct{ Table, Name string }

// CreateTrigger is CREATE TRIGGER name {BEFORE|AFTER} {INSERT|UPDATE|DELETE} ON table FOR EACH
// ROW BEGIN END: a trigger with an empty body, recorded by name.
type CreateTrigger struct {
	Name, Table, Timing, Event string
	IfNotExists                bool
}

// DropTrigger is DROP TRIGGER [IF EXISTS] name.
type DropTrigger struct {
	Name     string
	IfExists bool
}

// Set is a session statement (SET …) that cachedb accepts and ignores.
type Set struct{ Text string }

func (*Query) statement()         {}
func (*Explain) statement()       {}
func (*CreateTable) statement()   {}
func (*Insert) statement()        {}
func (*DropTable) statement()     {}
func (*Set) statement()           {}
func (*Delete) statement()        {}
func (*Update) statement()        {}
func (*CreateView) statement()    {}
func (*DropView) statement()      {}
func (*CreateIndex) statement()   {}
func (*DropIndex) statement()     {}
func (*CreateTrigger) statement() {}
func (*DropTrigger) statement()   {}
