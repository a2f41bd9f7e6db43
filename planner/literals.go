package planner

import "github.com/apache/arrow-go/v18/arrow/scalar"

func trueLiteral() Expr { return &Literal{Value: scalar.NewBooleanScalar(true)} }
