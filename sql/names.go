package sql

import (
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
)

// displayName names a column computed by e for EXPLAIN and messages: a column keeps its name,
// an aggregate reads like its SQL (sum(a)); other expressions use their String form.
func displayName(e planner.Expr) string {
	switch e := e.(type) {
	case *planner.ColumnRef:
		return e.Name
	case *planner.AggregateCall:
		if len(e.Args) == 0 {
			return e.Func + "(*)"
		}
		args := make([]string, len(e.Args))
		for i, a := range e.Args {
			args[i] = displayName(a)
		}
		d := ""
		if e.Distinct {
			d = "DISTINCT "
		}
		return e.Func + "(" + d + strings.Join(args, ", ") + ")"
	}
	return e.String()
}

// tableName is the name a catalog.Set resolves for tn: the qualifier (a catalog, a namespace,
// or `catalog.namespace` quoted as one identifier) and the table joined by a dot. The table part
// may carry a version suffix such as "@1234" (catalog.Set).
func tableName(tn sqlparser.TableName) string {
	if tn.Qualifier.IsEmpty() {
		return tn.Name.String()
	}
	return tn.Qualifier.String() + "." + tn.Name.String()
}

// defaultAlias is how columns of tn are qualified when the query gives no alias: the table's own
// name, without qualifier or version suffix.
func defaultAlias(tn sqlparser.TableName) string {
	name := tn.Name.String()
	if i := strings.LastIndexByte(name, '@'); i > 0 {
		name = name[:i]
	}
	return name
}

// writableName returns the name of a table a statement creates or changes. Only the engine's
// own catalog accepts writes; a name qualified with another catalog or a namespace is refused.
// inDatasetsSchema reports whether tn is qualified by the engine's schema of datasets:
// datasets.t or <catalog>.datasets.t (catalog.DatasetsSchema).
func (b *binder) inDatasetsSchema(tn sqlparser.TableName) bool {
	q := tn.Qualifier.String()
	return strings.EqualFold(q, catalog.DatasetsSchema) || strings.EqualFold(q, b.cat.Name()+"."+catalog.DatasetsSchema)
}

func (b *binder) writableName(tn sqlparser.TableName) (string, error) {
	q := tn.Qualifier.String()
	if tn.Qualifier.IsEmpty() || strings.EqualFold(q, b.cat.Name()) || strings.EqualFold(q, b.cat.Name()+"."+catalog.PublicSchema) ||
		strings.EqualFold(q, catalog.PublicSchema) {
		return tn.Name.String(), nil
	}
	return "", errs.Unsupportedf("table %s is read-only: CREATE, INSERT, UPDATE, DELETE and DROP work on tables of catalog %s",
		tableName(tn), b.cat.Name())
}
