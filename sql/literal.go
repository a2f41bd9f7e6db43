package sql

import (
	"encoding/hex"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
)

// maxDecimalDigits is the widest exact literal kept as a decimal128.
const maxDecimalDigits = 38

// literal types a constant the way MySQL does: integers are BIGINT, or DECIMAL when they
// overflow it; 1.50 is DECIMAL(3,2); 1e3 is DOUBLE; 'x' is a string; DATE '…' and
// TIMESTAMP '…' are date32 and timestamp[us]; 0x41 and b'101' are integers.
func literal(l *sqlparser.Literal) (planner.Expr, error) {
	switch l.Type {
	case sqlparser.StrVal:
		if err := errs.CheckUTF8(l.Val, "a string literal"); err != nil {
			return nil, err
		}
		return &planner.Literal{Value: scalar.NewStringScalar(l.Val)}, nil
	case sqlparser.IntVal:
		if v, err := strconv.ParseInt(l.Val, 10, 64); err == nil {
			return &planner.Literal{Value: scalar.NewInt64Scalar(v)}, nil
		}
		return decimalLiteral(l.Val)
	case sqlparser.DecimalVal:
		return decimalLiteral(l.Val)
	case sqlparser.FloatVal:
		v, err := strconv.ParseFloat(l.Val, 64)
		if err != nil {
			return nil, errs.Invalidf("invalid number %s", l.Val)
		}
		return &planner.Literal{Value: scalar.NewFloat64Scalar(v)}, nil
	case sqlparser.HexNum:
		return integerLiteral(strings.TrimPrefix(strings.ToLower(l.Val), "0x"), 16, l.Val)
	case sqlparser.BitNum:
		return integerLiteral(strings.TrimPrefix(strings.ToLower(l.Val), "0b"), 2, l.Val)
	case sqlparser.HexVal:
		raw, err := hex.DecodeString(l.Val)
		if err != nil {
			return nil, errs.Invalidf("invalid hexadecimal literal X'%s'", l.Val)
		}
		return &planner.Literal{Value: scalar.NewStringScalar(string(raw))}, nil
	case sqlparser.DateVal:
		return dateLiteral(l.Val)
	case sqlparser.TimeVal:
		return timeLiteral(l.Val)
	case sqlparser.TimestampVal:
		return timestampLiteral(l.Val)
	}
	return nil, errs.Unsupportedf("literal %s is not supported", sqlparser.String(l))
}

// timestampType is the engine's DATETIME / TIMESTAMP type.
var timestampType = &arrow.TimestampType{Unit: arrow.Microsecond}

// integerLiteral reads digits in base as a BIGINT.
func integerLiteral(digits string, base int, text string) (planner.Expr, error) {
	v, err := strconv.ParseUint(digits, base, 64)
	if err != nil || v > 1<<63-1 {
		return nil, errs.Unsupportedf("literal %s does not fit a BIGINT", text)
	}
	return &planner.Literal{Value: scalar.NewInt64Scalar(int64(v))}, nil
}

// decimalLiteral types an exact number as DECIMAL(p,s) with the literal's own scale; beyond 38
// digits it falls back to DOUBLE, as the engine has no wider exact type.
func decimalLiteral(text string) (planner.Expr, error) {
	digits := strings.TrimLeft(text, "+-")
	intPart, frac, _ := strings.Cut(digits, ".")
	intPart = strings.TrimLeft(intPart, "0")
	scale := int32(len(frac))
	precision := max(int32(len(intPart))+scale, 1)
	if precision > maxDecimalDigits {
		v, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, errs.Invalidf("invalid number %s", text)
		}
		return &planner.Literal{Value: scalar.NewFloat64Scalar(v)}, nil
	}
	unscaled, ok := new(big.Int).SetString(strings.Replace(strings.TrimPrefix(text, "+"), ".", "", 1), 10)
	if !ok {
		return nil, errs.Invalidf("invalid number %s", text)
	}
	t := &arrow.Decimal128Type{Precision: precision, Scale: scale}
	return &planner.Literal{Value: scalar.NewDecimal128Scalar(decimal128.FromBigInt(unscaled), t)}, nil
}

// isNumericLiteral reports whether l is a number a unary minus can fold into.
func isNumericLiteral(l *sqlparser.Literal) bool {
	switch l.Type {
	case sqlparser.IntVal, sqlparser.DecimalVal, sqlparser.FloatVal:
		return true
	}
	return false
}

// negateText negates the text of a numeric literal.
func negateText(s string) string {
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		return rest
	}
	return "-" + s
}

// nullLiteral is the untyped SQL NULL.
func nullLiteral() planner.Expr {
	return &planner.Literal{Value: scalar.MakeNullScalar(arrow.Null)}
}

func boolLiteral(v bool) planner.Expr {
	return &planner.Literal{Value: scalar.NewBooleanScalar(v)}
}

func trueLiteral() planner.Expr { return boolLiteral(true) }

// int64Value reads an integer literal.
func int64Value(l *planner.Literal) (int64, bool) {
	if s, ok := l.Value.(*scalar.Int64); ok && s.Valid {
		return s.Value, true
	}
	return 0, false
}

// unsignedLimit reports whether lit is a whole number in (math.MaxInt64, math.MaxUint64]: an
// unsigned BIGINT that int64 cannot hold (a decimal literal, or an unsigned parameter).
func unsignedLimit(lit *planner.Literal) bool {
	var v *big.Int
	switch s := lit.Value.(type) {
	case *scalar.Uint64:
		v = new(big.Int).SetUint64(s.Value)
	case *scalar.Decimal128:
		if s.Type.(*arrow.Decimal128Type).Scale != 0 {
			return false
		}
		v = s.Value.BigInt()
	default:
		return false
	}
	return v.Cmp(big.NewInt(math.MaxInt64)) > 0 && v.Cmp(new(big.Int).SetUint64(math.MaxUint64)) <= 0
}
