package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
)

// resultTable accumulates a query result as text, to print aligned.
type resultTable struct {
	header []string
	right  []bool // right-align the column (numbers)
	rows   [][]string
}

func newResultTable(schema *arrow.Schema) *resultTable {
	t := &resultTable{}
	for _, f := range schema.Fields() {
		t.header = append(t.header, f.Name)
		t.right = append(t.right, isNumeric(f.Type))
	}
	return t
}

// add appends the rows of rec; NULLs print as NULL.
func (t *resultTable) add(rec arrow.RecordBatch) {
	for r := 0; r < int(rec.NumRows()); r++ {
		row := make([]string, rec.NumCols())
		for c := range row {
			col := rec.Column(c)
			if col.IsNull(r) {
				row[c] = "NULL"
			} else {
				row[c] = cellText(col, r)
			}
		}
		t.rows = append(t.rows, row)
	}
}

// write prints the table in the MySQL client's box style, followed by a row count.
func (t *resultTable) write(w io.Writer) {
	t.writeBox(w)
	fmt.Fprintln(w, rowCount(len(t.rows)))
}

// rowCount says how many rows a result has, as the MySQL client does.
func rowCount(n int) string {
	if n == 1 {
		return "1 row in set"
	}
	return fmt.Sprintf("%d rows in set", n)
}

// writeBox prints the table in the MySQL client's box style.
func (t *resultTable) writeBox(w io.Writer) {
	widths := make([]int, len(t.header))
	for i, h := range t.header {
		widths[i] = utf8.RuneCountInString(h)
	}
	for _, row := range t.rows {
		for i, v := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(v))
		}
	}
	rule := "+"
	for _, w := range widths {
		rule += strings.Repeat("-", w+2) + "+"
	}
	line := func(cells []string, align bool) {
		var b strings.Builder
		b.WriteString("|")
		for i, v := range cells {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(v))
			if align && t.right[i] {
				b.WriteString(" " + pad + v + " |")
			} else {
				b.WriteString(" " + v + pad + " |")
			}
		}
		fmt.Fprintln(w, b.String())
	}
	if len(t.header) > 0 {
		fmt.Fprintln(w, rule)
		line(t.header, false)
		fmt.Fprintln(w, rule)
		for _, row := range t.rows {
			line(row, true)
		}
		fmt.Fprintln(w, rule)
	}
}

func isNumeric(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64,
		arrow.DECIMAL32, arrow.DECIMAL64, arrow.DECIMAL128, arrow.DECIMAL256:
		return true
	}
	return false
}
