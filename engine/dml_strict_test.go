package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/cachedb/cachedb/internal/errs"
)

// INSERT and UPDATE store values as MySQL's strict mode does: a value the column cannot hold
// fails the statement, names the column and the row, and changes nothing.
func TestInsertAndUpdateAreStrict(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE TABLE s(c BIGINT, d DECIMAL(5,2), f DOUBLE, day DATE)")
	run(t, e, "INSERT INTO s VALUES (1, 1, 1, '2020-01-01')")
	for _, c := range []struct{ sql, want string }{
		{"INSERT INTO s(c) VALUES ('x')", "Incorrect integer value: 'x' for column 'c' at row 1"},
		{"INSERT INTO s(c) VALUES (2), ('12abc')", "Data truncated for column 'c' at row 2"},
		{"INSERT INTO s(c) VALUES ('99999999999999999999')", "Out of range value for column 'c' at row 1"},
		{"INSERT INTO s(c) VALUES (1e30)", "Out of range value for column 'c' at row 1"},
		{"INSERT INTO s(d) VALUES ('y')", "Incorrect decimal value: 'y' for column 'd' at row 1"},
		{"INSERT INTO s(d) VALUES (1000)", "Out of range value for column 'd' at row 1"},
		{"INSERT INTO s(f) VALUES ('z')", "Data truncated for column 'f' at row 1"},
		{"INSERT INTO s(day) VALUES ('2020-02-30x')", "Incorrect date value: '2020-02-30x' for column 'day' at row 1"},
		{"INSERT INTO s(c) SELECT 'x'", "Incorrect integer value: 'x' for column 'c' at row 1"},
		{"UPDATE s SET c = 'x'", "Incorrect integer value: 'x' for column 'c' at row 1"},
	} {
		_, err := e.Execute(context.Background(), c.sql, nil)
		if err == nil || errs.CategoryOf(err) != errs.InvalidInput || err.Error() != c.want {
			t.Errorf("%s: %v, want invalid input %q", c.sql, err, c.want)
		}
	}
	// A parameter is bound as a value of its own type, so it is checked the same way.
	_, err := e.Execute(context.Background(), "INSERT INTO s(c) VALUES (?)", []scalar.Scalar{scalar.NewStringScalar("x")})
	if err == nil || err.Error() != "Incorrect integer value: 'x' for column 'c' at row 1" {
		t.Errorf("INSERT of a string parameter 'x': %v", err)
	}
	run(t, e, "INSERT INTO s VALUES (' 7 ', '2.5', '1e3', '2021-03-04'), ('2.5', 3, 4, NULL)")
	if got := rows(t, e, "SELECT c, d, f, day FROM s ORDER BY c"); fmt.Sprint(got) != "[1,1.00,1,2020-01-01 3,3.00,4,NULL 7,2.50,1000,2021-03-04]" {
		t.Errorf("table after the failed statements and valid inserts: %v", got)
	}
}
