package sql

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
)

// The engine computes with a small set of canonical Arrow types (docs/architecture.md); these
// functions map SQL type names onto them.

// castType is the target of CAST(… AS t) / CONVERT(…, t).
func castType(ct *sqlparser.ConvertType) (arrow.DataType, error) {
	name := strings.ToLower(strings.TrimSpace(ct.Type))
	switch {
	case strings.HasPrefix(name, "signed"), strings.HasPrefix(name, "unsigned"), name == "integer", name == "int":
		return arrow.PrimitiveTypes.Int64, nil
	case name == "decimal" || name == "numeric" || name == "dec":
		return decimalType(ct.Length, ct.Scale)
	case name == "double" || name == "float" || name == "real" || name == "double precision":
		return arrow.PrimitiveTypes.Float64, nil
	case name == "char" || name == "nchar" || name == "binary" || name == "varchar":
		return arrow.BinaryTypes.String, nil
	case name == "date":
		return arrow.FixedWidthTypes.Date32, nil
	case name == "datetime" || name == "timestamp":
		return timestampType, nil
	case name == "time":
		return exec.TimeType, nil
	}
	return nil, errs.Unsupportedf("CAST to %s is not supported", strings.ToUpper(ct.Type))
}

// columnType is the Arrow type of a CREATE TABLE column type.
func columnType(ct *sqlparser.ColumnType) (arrow.DataType, error) {
	switch strings.ToLower(ct.Type) {
	case "int", "integer", "bigint", "smallint", "tinyint", "mediumint":
		return arrow.PrimitiveTypes.Int64, nil
	case "double", "float", "real", "double precision", "float4", "float8":
		return arrow.PrimitiveTypes.Float64, nil
	case "decimal", "numeric", "dec", "fixed":
		return decimalType(ct.Length, ct.Scale)
	case "varchar", "char", "text", "tinytext", "mediumtext", "longtext", "nvarchar", "nchar", "string":
		return arrow.BinaryTypes.String, nil
	case "boolean", "bool":
		return arrow.FixedWidthTypes.Boolean, nil
	case "date":
		return arrow.FixedWidthTypes.Date32, nil
	case "datetime", "timestamp":
		return timestampType, nil
	case "time":
		return exec.TimeType, nil
	}
	return nil, errs.Unsupportedf("column type %s is not supported", strings.ToUpper(ct.Type))
}

// declaredType is the SQL type of a CREATE TABLE column that holds less than its engine type,
// as exec.DeclaredTypeKey spells it (tinyint, int unsigned, char(5), varchar(12)), or "".
func declaredType(ct *sqlparser.ColumnType) string {
	name := strings.ToLower(ct.Type)
	switch name {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint":
		if name == "integer" {
			name = "int"
		}
		if ct.Unsigned {
			return name + " unsigned"
		}
		if name == "bigint" {
			return ""
		}
		return name
	case "char", "nchar":
		n := 1
		if ct.Length != nil {
			n = *ct.Length
		}
		return fmt.Sprintf("char(%d)", n)
	case "varchar", "nvarchar":
		if ct.Length == nil {
			return ""
		}
		return fmt.Sprintf("varchar(%d)", *ct.Length)
	}
	return ""
}

// decimalType is DECIMAL(p,s): (10,0) when p is absent, s defaults to 0. MySQL allows up to 65
// digits; the engine's decimal128 holds 38.
func decimalType(length, scale *int) (arrow.DataType, error) {
	p, s := 10, 0
	if length != nil {
		p = *length
	}
	if scale != nil {
		s = *scale
	}
	if s > p {
		return nil, errs.Invalidf("For float(M,D), double(M,D) or decimal(M,D), M must be >= D")
	}
	if p > maxDecimalDigits {
		return nil, errs.Unsupportedf("DECIMAL precision %d is larger than the supported %d", p, maxDecimalDigits)
	}
	return &arrow.Decimal128Type{Precision: int32(max(p, 1)), Scale: int32(s)}, nil
}
