package main

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// writeTimed prints the result as the mysql client does on a terminal: a box table (or, when
// vertical, one block per row), then the row count or "Query OK" with the time the statement
// took, then a blank line. A query without rows prints "Empty set".
func (r statementResult) writeTimed(out io.Writer, vertical bool, elapsed time.Duration) {
	took := fmt.Sprintf("(%.2f sec)", elapsed.Seconds())
	switch {
	case r.table != nil && len(r.table.rows) == 0:
		fmt.Fprintln(out, "Empty set", took)
	case r.table != nil:
		if vertical {
			r.table.writeVertical(out)
		} else {
			r.table.writeBox(out)
		}
		fmt.Fprintln(out, rowCount(len(r.table.rows)), took)
	case r.affected == 1:
		fmt.Fprintln(out, "Query OK, 1 row affected", took)
	case r.affected >= 0:
		fmt.Fprintf(out, "Query OK, %d rows affected %s\n", r.affected, took)
	default:
		fmt.Fprintln(out, "Query OK", took)
	}
	fmt.Fprintln(out)
}

// writeVertical prints each row as a block headed by its number, one "column: value" line per
// column with the names right-aligned, as the mysql client's \G does.
func (t *resultTable) writeVertical(w io.Writer) {
	width := 0
	for _, h := range t.header {
		width = max(width, utf8.RuneCountInString(h))
	}
	stars := strings.Repeat("*", 27)
	for n, row := range t.rows {
		fmt.Fprintf(w, "%s %d. row %s\n", stars, n+1, stars)
		for i, v := range row {
			pad := strings.Repeat(" ", width-utf8.RuneCountInString(t.header[i]))
			fmt.Fprintf(w, "%s%s: %s\n", pad, t.header[i], v)
		}
	}
}
