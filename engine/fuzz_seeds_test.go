package engine

import (
	"fmt"
	"strings"
)

// hugeSeeds are statements with counts and lengths at the edges of the integer types, deep
// nesting and long lists: the inputs where a size computed from a value overflows, a
// recursion runs out of stack or an allocation asks for the whole machine. col is a string
// column and num a numeric column of the table the statements read (FROM tbl).
func hugeSeeds(tbl, col, num string) []string {
	counts := []string{"2305843009213693952", "4611686018427387904", "9223372036854775807", "-9223372036854775808", "18446744073709551615", "4294967296", "2147483648", "-1"}
	var out []string
	for _, n := range counts {
		out = append(out,
			fmt.Sprintf("SELECT REPEAT(%s, %s) FROM %s", col, n, tbl),
			fmt.Sprintf("SELECT LPAD(%s, %s, 'y') FROM %s", col, n, tbl),
			fmt.Sprintf("SELECT RPAD(%s, %s, 'y') FROM %s", col, n, tbl),
			fmt.Sprintf("SELECT SPACE(%s)", n),
			fmt.Sprintf("SELECT LEFT(%s, %s), RIGHT(%s, %s) FROM %s", col, n, col, n, tbl),
			fmt.Sprintf("SELECT SUBSTR(%s, %s, %s), SUBSTRING(%s, %s), MID(%s, 1, %s) FROM %s", col, n, n, col, n, col, n, tbl),
			fmt.Sprintf("SELECT LOCATE('a', %s, %s), INSERT(%s, %s, %s, 'z') FROM %s", col, n, col, n, n, tbl),
			fmt.Sprintf("SELECT ROUND(%s, %s), TRUNCATE(%s, %s) FROM %s", num, n, num, n, tbl),
			fmt.Sprintf("SELECT %s FROM %s LIMIT %s", num, tbl, n),
			fmt.Sprintf("SELECT %s FROM %s ORDER BY %s LIMIT %s, %s", num, tbl, num, n, n),
			fmt.Sprintf("SELECT CAST(%s AS CHAR(%s)) FROM %s", col, n, tbl),
			fmt.Sprintf("SELECT %s + INTERVAL %s DAY", "DATE '2020-01-01'", n),
		)
	}
	out = append(out,
		"SELECT REPEAT('x', 2305843009213693952)",
		fmt.Sprintf("SELECT LPAD(%s, 4611686018427387904, 'y') FROM %s", col, tbl),
		"SELECT SPACE(9223372036854775807)",
		fmt.Sprintf("SELECT * FROM %s LIMIT 18446744073709551615", tbl),
		fmt.Sprintf("SELECT CAST(%s AS DECIMAL(65,30)), CAST(%s AS DECIMAL(38,38)), CAST(%s AS DECIMAL(65,30)) FROM %s", num, num, col, tbl),
		"SELECT CAST('1e400' AS DECIMAL(65,30)), CAST(1e308 AS DECIMAL(38,0)), CAST(-1e308 AS SIGNED)",
		fmt.Sprintf("SELECT REPEAT(REPEAT(%s, 1000000), 1000000) FROM %s", col, tbl),
		fmt.Sprintf("SELECT CONCAT(REPEAT('a', 16777216), REPEAT('b', 16777216), %s) FROM %s", col, tbl),
		"SELECT 9223372036854775807 * 9223372036854775807, -9223372036854775808 DIV -1, -9223372036854775808 % -1",
		"SELECT 99999999999999999999999999999999999999 + 1, 1e308 * 10, 1 / 0.0000000000000000000000000000001",
		"SELECT "+strings.Repeat("(", 200)+"1"+strings.Repeat(")", 200),
		"SELECT "+strings.Repeat("ABS(", 200)+"-1"+strings.Repeat(")", 200),
		"SELECT "+strings.Repeat("-", 500)+"1",
		"SELECT "+strings.Repeat("NOT ", 500)+"1",
		"SELECT 1 "+strings.Repeat("+ 1 ", 2000),
		"SELECT CASE "+strings.Repeat("WHEN 0 THEN 1 ", 500)+"ELSE 2 END",
		fmt.Sprintf("SELECT %s FROM %s WHERE %s IN (%s)", num, tbl, num, numList(5000)),
		fmt.Sprintf("SELECT %s FROM %s WHERE %s NOT IN (%s)", col, tbl, col, strList(2000)),
		fmt.Sprintf("SELECT %s FROM %s WHERE %s IN (SELECT %s FROM %s WHERE %s IN (SELECT %s FROM %s))", num, tbl, num, num, tbl, num, num, tbl),
		fmt.Sprintf("SELECT (SELECT (SELECT (SELECT max(%s) FROM %s) FROM %s LIMIT 1) FROM %s LIMIT 1)", num, tbl, tbl, tbl),
	)
	return out
}

func numList(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprint(i*7919 - n)
	}
	return strings.Join(parts, ", ")
}

func strList(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("'s%d'", i)
	}
	return strings.Join(parts, ", ")
}
