package sqlgen

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/slt"
)

// Render reads every row of rdr as MySQL client text, columns separated by " | ", with -0
// written 0.
func Render(rdr array.RecordReader) ([]string, error) {
	var rows []string
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			cells := make([]string, rec.NumCols())
			for j := range cells {
				s, err := slt.FormatValue(rec.Column(j), i, 'T')
				if err != nil {
					return nil, err
				}
				// -0 equals 0: DISTINCT, GROUP BY and UNION may keep either.
				if s == "-0" {
					s = "0"
				}
				cells[j] = s
			}
			rows = append(rows, strings.Join(cells, " | "))
		}
	}
	return rows, rdr.Err()
}
