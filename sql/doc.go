// Package sql is cachedb's SQL front end. It parses one MySQL statement with vitess's sqlparser
// and binds it against a catalog into a planner.Statement: names are resolved to column IDs,
// expressions are typed with the exec registry, and queries become logical plans in the shapes
// docs/architecture.md describes. It is the only package that imports vitess; the AST never
// leaves it.
package sql
