package exec

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// callExpr applies a registered scalar function to its evaluated arguments.
type callExpr struct {
	name   string
	args   []Expr
	kernel Kernel
	t      arrow.DataType
}

// NewCall resolves the function or operator name (see ResolveScalar) for the argument types and
// returns the expression applying it. Errors are those of ResolveScalar (NotFound for an
// unknown function, InvalidInput for wrong arity or types).
func NewCall(name string, args []Expr) (Expr, error) {
	types := make([]arrow.DataType, len(args))
	for i, a := range args {
		types[i] = a.DataType()
	}
	k, t, err := ResolveScalar(name, types)
	if err != nil {
		return nil, err
	}
	call := &callExpr{name: strings.ToLower(name), args: args, kernel: k, t: t}
	if e := newCompareConst(call); e != nil {
		return e, nil
	}
	if e := newBetweenConst(call); e != nil {
		return e, nil
	}
	if e := newInConst(call); e != nil {
		return e, nil
	}
	if e := newLikeConst(call); e != nil {
		return e, nil
	}
	if e := newArithConst(call); e != nil {
		return e, nil
	}
	return call, nil
}

func (e *callExpr) DataType() arrow.DataType { return e.t }

func (e *callExpr) String() string {
	parts := make([]string, len(e.args))
	for i, a := range e.args {
		parts[i] = a.String()
	}
	switch {
	case len(e.args) == 2 && isInfixOperator(e.name):
		return fmt.Sprintf("(%s %s %s)", parts[0], e.name, parts[1])
	case e.name == "neg" && len(e.args) == 1:
		return "(-" + parts[0] + ")"
	}
	return e.name + "(" + strings.Join(parts, ", ") + ")"
}

func (e *callExpr) Eval(ctx context.Context, tc *TaskContext, batch arrow.RecordBatch) (arrow.Array, error) {
	vals := make([]arrow.Array, len(e.args))
	defer releaseArrays(vals)
	for i, a := range e.args {
		v, err := a.Eval(ctx, tc, batch)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	out, err := e.kernel(ctx, tc, vals, int(batch.NumRows()))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.name, err)
	}
	return out, nil
}

func isInfixOperator(name string) bool {
	switch name {
	case "+", "-", "*", "/", "div", "%", "=", "<>", "<", "<=", ">", ">=", "<=>",
		"and", "or", "xor", "&", "|", "^", "<<", ">>", "like":
		return true
	}
	return false
}
