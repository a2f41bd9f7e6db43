package sql

import (
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
)

// Binding of MySQL's date and time syntax: INTERVAL arithmetic, EXTRACT, TIMESTAMPDIFF and the
// current-time functions. The unit of an interval is part of the function name
// (date_add_day, extract_year, timestampdiff_month) because it decides the result type.

// intervalDate binds `d ± INTERVAL n unit`, `INTERVAL n unit + d`, DATE_ADD, DATE_SUB, ADDDATE,
// SUBDATE (also their (d, days) form) and TIMESTAMPADD as date_add_<unit> / date_sub_<unit>.
func (b *binder) intervalDate(e *sqlparser.IntervalDateExpr, ctx *exprContext) (planner.Expr, error) {
	unit := "day"
	if e.Unit != sqlparser.IntervalNone {
		unit = e.Unit.ToString()
	}
	if !exec.IsIntervalUnit(unit) {
		return nil, errs.Unsupportedf("INTERVAL unit %s is not supported", unit)
	}
	name := "date_add_" + unit
	switch e.Syntax {
	case sqlparser.IntervalDateExprDateSub, sqlparser.IntervalDateExprSubdate, sqlparser.IntervalDateExprBinarySub:
		name = "date_sub_" + unit
	}
	return b.callAST(ctx, name, e.Date, e.Interval)
}

// extract binds EXTRACT(unit FROM x) as extract_<unit>(x).
func (b *binder) extract(e *sqlparser.ExtractFuncExpr, ctx *exprContext) (planner.Expr, error) {
	return b.callAST(ctx, "extract_"+e.IntervalType.ToString(), e.Expr)
}

// timestampDiff binds TIMESTAMPDIFF(unit, a, b) as timestampdiff_<unit>(a, b).
func (b *binder) timestampDiff(e *sqlparser.TimestampDiffExpr, ctx *exprContext) (planner.Expr, error) {
	return b.callAST(ctx, "timestampdiff_"+e.Unit.ToString(), e.Expr1, e.Expr2)
}

// statementTime is the time the statement started, fixed at its first use so that every
// NOW(), CURDATE(), … of one statement sees the same value, as in MySQL. The session time zone
// is UTC.
func (b *binder) statementTime() time.Time {
	if b.now.IsZero() {
		b.now = time.Now().UTC()
	}
	return b.now
}

// curTime binds NOW() and its synonyms, UTC_TIMESTAMP, SYSDATE, CURTIME and CURRENT_TIME to
// the statement time, with fsp fractional digits (0 by default).
func (b *binder) curTime(e *sqlparser.CurTimeFuncExpr) (planner.Expr, error) {
	fsp := e.Fsp
	if fsp < 0 || fsp > 6 {
		return nil, errs.Invalidf("Too-big precision %d specified for '%s'. Maximum is 6.", fsp, e.Name.String())
	}
	us := b.statementTime().UnixMicro()
	step := int64(1)
	for i := fsp; i < 6; i++ {
		step *= 10
	}
	us -= us % step
	switch e.Name.Lowered() {
	case "now", "current_timestamp", "localtime", "localtimestamp", "sysdate", "utc_timestamp":
		return &planner.Literal{Value: scalar.NewTimestampScalar(arrow.Timestamp(us), timestampType)}, nil
	case "curtime", "current_time", "utc_time":
		day := us / 86_400_000_000 * 86_400_000_000
		return &planner.Literal{Value: scalar.NewTime64Scalar(arrow.Time64(us-day), exec.TimeType)}, nil
	}
	return nil, errs.Unsupportedf("function %s is not supported", e.Name.String())
}

// currentTimeFunction binds CURDATE(), CURRENT_DATE, UTC_DATE and UNIX_TIMESTAMP() (no
// argument) to the statement time, and STR_TO_DATE by its format; ok is false for other
// functions.
func (b *binder) currentTimeFunction(e *sqlparser.FuncExpr, ctx *exprContext) (planner.Expr, bool, error) {
	switch e.Name.Lowered() {
	case "curdate", "current_date", "utc_date":
		if len(e.Exprs) != 0 {
			return nil, true, errs.Invalidf("function %s takes no arguments", e.Name.Lowered())
		}
		days := b.statementTime().Unix() / 86400
		return &planner.Literal{Value: scalar.NewDate32Scalar(arrow.Date32(days))}, true, nil
	case "unix_timestamp":
		if len(e.Exprs) == 0 {
			return &planner.Literal{Value: scalar.NewInt64Scalar(b.statementTime().Unix())}, true, nil
		}
	case "str_to_date":
		x, err := b.strToDate(e, ctx)
		return x, true, err
	}
	return nil, false, nil
}

// strToDate binds STR_TO_DATE(s, format) as str_to_date_date, _time or _datetime: the type
// MySQL gives the result follows from the format's specifiers (a DATETIME when the format is
// not a constant).
func (b *binder) strToDate(e *sqlparser.FuncExpr, ctx *exprContext) (planner.Expr, error) {
	if len(e.Exprs) != 2 {
		return nil, errs.Invalidf("function str_to_date takes 2 arguments, got %d", len(e.Exprs))
	}
	args, err := b.exprs(e.Exprs, ctx)
	if err != nil {
		return nil, err
	}
	kind := "datetime"
	if l, ok := args[1].(*planner.Literal); ok {
		if f, ok := l.Value.(*scalar.String); ok && f.Valid {
			kind = exec.StrToDateKind(string(f.Value.Bytes()))
		}
	}
	return b.call("str_to_date_"+kind, args...)
}

// timeLiteral is TIME '…'.
func timeLiteral(s string) (planner.Expr, error) {
	us, ok := exec.ParseTimeText(s)
	if !ok {
		return nil, errs.Invalidf("Incorrect TIME value: '%s'", s)
	}
	return &planner.Literal{Value: scalar.NewTime64Scalar(arrow.Time64(us), exec.TimeType)}, nil
}

// dateLiteral is DATE '…' (MySQL's formats: '2020-01-02', '2020-1-2', '20200102').
func dateLiteral(s string) (planner.Expr, error) {
	us, _, ok := exec.ParseDateTimeText(s)
	if !ok {
		return nil, errs.Invalidf("Incorrect DATE value: '%s'", s)
	}
	day := us / 86_400_000_000
	if us%86_400_000_000 < 0 {
		day--
	}
	return &planner.Literal{Value: scalar.NewDate32Scalar(arrow.Date32(day))}, nil
}

// timestampLiteral is TIMESTAMP '…'.
func timestampLiteral(s string) (planner.Expr, error) {
	us, _, ok := exec.ParseDateTimeText(s)
	if !ok {
		return nil, errs.Invalidf("Incorrect DATETIME value: '%s'", s)
	}
	return &planner.Literal{Value: scalar.NewTimestampScalar(arrow.Timestamp(us), timestampType)}, nil
}

// comparisonNames are the operators whose string constants temporalOperands types.
var comparisonNames = map[string]bool{
	"=": true, "<>": true, "!=": true, "<": true, "<=": true, ">": true, ">=": true, "<=>": true,
	"between": true, "in": true,
}

// temporalOperands types the string constants of a comparison with a date, time or date-time
// as MySQL reads them there: a DATE column compared with '2020-1-2' compares with DATE
// 2020-01-02, and with '2020-01-02 10:00:00' as a DATETIME (so `d = '2020-01-02 10:00:00'` is
// false). The constant then also reaches scan pushdown in its temporal form. Text that is no
// valid value is left alone. For IN and BETWEEN the first operand decides.
func temporalOperands(name string, args []planner.Expr) []planner.Expr {
	if !comparisonNames[name] || len(args) < 2 {
		return args
	}
	var kind arrow.DataType
	for i, a := range args {
		if t := a.Type(); t.ID() == arrow.DATE32 || t.ID() == arrow.TIMESTAMP || t.ID() == arrow.TIME64 {
			if kind == nil || t.ID() == arrow.TIMESTAMP {
				kind = t
			}
		}
		if i == 0 && (name == "in" || name == "between") {
			break
		}
	}
	if kind == nil {
		return args
	}
	out := args
	for i, a := range args {
		l, ok := a.(*planner.Literal)
		if !ok {
			continue
		}
		s, ok := l.Value.(*scalar.String)
		if !ok || !s.Valid {
			continue
		}
		if x := temporalConstant(kind, string(s.Value.Bytes())); x != nil {
			if &out[0] == &args[0] {
				out = append([]planner.Expr(nil), args...)
			}
			out[i] = x
		}
	}
	return out
}

// temporalConstant reads text compared with a value of type kind; nil when it is not one.
func temporalConstant(kind arrow.DataType, text string) planner.Expr {
	if kind.ID() == arrow.TIME64 {
		x, err := timeLiteral(text)
		if err != nil {
			return nil
		}
		return x
	}
	us, hasTime, ok := exec.ParseDateTimeText(text)
	if !ok {
		return nil
	}
	if kind.ID() == arrow.DATE32 && (!hasTime || us%86_400_000_000 == 0) {
		x, _ := dateLiteral(text)
		return x
	}
	return &planner.Literal{Value: scalar.NewTimestampScalar(arrow.Timestamp(us), timestampType)}
}
