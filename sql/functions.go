package sql

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/exec"
)

// The binder types expressions with the same registry that executes them, so the two cannot
// disagree. The indirections below exist only so that tests can supply types for functions that
// the registry does not hold yet; Bind always uses the registry.

// resolveScalarType is the result type of a scalar function or operator (exec.ResolveScalar).
var resolveScalarType = func(name string, args []arrow.DataType) (arrow.DataType, error) {
	_, t, err := exec.ResolveScalar(name, args)
	return t, err
}

// resolveAggregateType is the result type of an aggregate function (exec.ResolveAggregate).
var resolveAggregateType = exec.ResolveAggregate

// commonType is the type MySQL gives CASE / UNION / COALESCE branches (exec.CommonType).
var commonType = exec.CommonType
