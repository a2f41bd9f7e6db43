package exec

import (
	"context"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/internal/errs"
)

// Kernel computes a scalar function over argument arrays that all have numRows elements, typed
// as the argument types the kernel was resolved for. It returns a new array of numRows elements
// of the resolved result type (the caller releases it) and never retains its arguments.
type Kernel func(ctx context.Context, tc *TaskContext, args []arrow.Array, numRows int) (arrow.Array, error)

// ScalarResolver picks the kernel and the result type of a function for the given argument
// types, applying MySQL's implicit conversions. It returns an errs.InvalidInput error naming the
// function when the arity or the types are wrong.
type ScalarResolver func(argTypes []arrow.DataType) (Kernel, arrow.DataType, error)

var scalarFunctions = map[string]ScalarResolver{}

// RegisterScalar adds a function under its canonical lower-case name. It is called from init
// functions only.
func RegisterScalar(name string, r ScalarResolver) {
	if _, dup := scalarFunctions[name]; dup {
		panic("exec: scalar function registered twice: " + name)
	}
	scalarFunctions[name] = r
}

// ResolveScalar finds the kernel and result type of the scalar function or operator called name
// (case-insensitive) for the given argument types.
//
// Canonical operator names, which the SQL binder produces:
//
//	arithmetic  "+" "-" "*" "/" "div" "%" "neg"            (MySQL: int/int is DECIMAL, x/0 is NULL)
//	comparison  "=" "<>" "<" "<=" ">" ">=" "<=>"            (result BOOLEAN; "<=>" is NULL-safe)
//	logic       "and" "or" "xor" "not"                      (Kleene three-valued logic)
//	predicates  "is_null" "is_not_null" "is_true" "is_false" "is_not_true" "is_not_false"
//	            "in" (x, v1, …, vn)   "like" (x, pattern)   "between" (x, lo, hi)
//	bitwise     "&" "|" "^" "<<" ">>" "~"
//
// Every other function is registered under its MySQL name in lower case (abs, coalesce, ifnull,
// nullif, if, concat, lower, …).
func ResolveScalar(name string, argTypes []arrow.DataType) (Kernel, arrow.DataType, error) {
	r, ok := scalarFunctions[strings.ToLower(name)]
	if !ok {
		return nil, nil, errs.NotFoundf("function %s does not exist", name)
	}
	return r(argTypes)
}

// IsScalarFunction reports whether name is a registered scalar function.
func IsScalarFunction(name string) bool {
	_, ok := scalarFunctions[strings.ToLower(name)]
	return ok
}
