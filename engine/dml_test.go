package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/cachedb/cachedb/internal/errs"
)

func TestUpdateAndDelete(t *testing.T) {
	e := newTestEngine(t)
	setupT1(t, e)
	if r := run(t, e, "UPDATE t1 SET b = b + 1, c = 'u' WHERE a >= 4"); r.RowsAffected != 2 {
		t.Errorf("UPDATE affected %d rows, want 2", r.RowsAffected)
	}
	if got := rows(t, e, "SELECT a, b, c FROM t1 ORDER BY a"); fmt.Sprint(got) != "[1,10,x 2,20,y 3,NULL,x 4,41,u 5,51,u]" {
		t.Errorf("after UPDATE: %v", got)
	}
	// A NULL condition matches nothing: row 3 (b NULL) stays.
	if r := run(t, e, "DELETE FROM t1 WHERE b > 15"); r.RowsAffected != 3 {
		t.Errorf("DELETE affected %d rows, want 3", r.RowsAffected)
	}
	if got := rows(t, e, "SELECT a FROM t1 ORDER BY a"); fmt.Sprint(got) != "[1 3]" {
		t.Errorf("after DELETE: %v", got)
	}
	run(t, e, "DELETE FROM t1")
	if got := rows(t, e, "SELECT count(*) FROM t1"); fmt.Sprint(got) != "[0]" {
		t.Errorf("after DELETE without WHERE: %v", got)
	}
	if _, err := e.Execute(context.Background(), "UPDATE t1 SET nope = 1", nil); errs.CategoryOf(err) != errs.NotFound {
		t.Errorf("UPDATE of an unknown column: %v, want a not-found error", err)
	}
}

func TestViewsExpandWhereReferenced(t *testing.T) {
	e := newTestEngine(t)
	setupT1(t, e)
	run(t, e, "CREATE VIEW big AS SELECT a, b FROM t1 WHERE b > 15")
	if got := rows(t, e, "SELECT x.a FROM big AS x JOIN big AS y ON x.a = y.a ORDER BY 1"); fmt.Sprint(got) != "[2 4 5]" {
		t.Errorf("self-join of a view: %v", got)
	}
	run(t, e, "INSERT INTO t1 VALUES (6, 60, 'w')")
	if got := rows(t, e, "SELECT count(*) FROM big"); fmt.Sprint(got) != "[4]" {
		t.Errorf("a view must see rows inserted after it was created: %v", got)
	}
	if _, err := e.Execute(context.Background(), "CREATE VIEW big AS SELECT 1", nil); errs.CategoryOf(err) != errs.AlreadyExists {
		t.Errorf("second CREATE VIEW: %v, want already exists", err)
	}
	if _, err := e.Execute(context.Background(), "CREATE VIEW bad AS SELECT nope FROM t1", nil); errs.CategoryOf(err) != errs.NotFound {
		t.Errorf("view over an unknown column: %v, want not found", err)
	}
	run(t, e, "DROP VIEW big")
	if _, err := e.Execute(context.Background(), "SELECT * FROM big", nil); errs.CategoryOf(err) != errs.NotFound {
		t.Errorf("query of a dropped view: %v, want not found", err)
	}
}

func TestIndexNamesAreTracked(t *testing.T) {
	e := newTestEngine(t)
	setupT1(t, e)
	run(t, e, "CREATE INDEX t1a ON t1(a)")
	if _, err := e.Execute(context.Background(), "CREATE INDEX t1a ON t1(b)", nil); errs.CategoryOf(err) != errs.AlreadyExists {
		t.Errorf("second index of one name: %v, want already exists", err)
	}
	run(t, e, "DROP INDEX t1a ON t1")
	if _, err := e.Execute(context.Background(), "DROP INDEX t1a ON t1", nil); errs.CategoryOf(err) != errs.NotFound {
		t.Errorf("drop of a dropped index: %v, want not found", err)
	}
	if _, err := e.Execute(context.Background(), "CREATE INDEX x ON nope(a)", nil); errs.CategoryOf(err) != errs.NotFound {
		t.Errorf("index on an unknown table: %v, want not found", err)
	}
}

func TestTriggersWithEmptyBodiesAreRecorded(t *testing.T) {
	e := newTestEngine(t)
	setupT1(t, e)
	ctx := context.Background()
	run(t, e, "CREATE TRIGGER t1r1 AFTER UPDATE ON t1 FOR EACH ROW BEGIN END;")
	if _, err := e.Execute(ctx, "CREATE TRIGGER t1r1 BEFORE INSERT ON t1 FOR EACH ROW BEGIN END", nil); errs.CategoryOf(err) != errs.AlreadyExists {
		t.Errorf("second trigger of one name: %v, want already exists", err)
	}
	if _, err := e.Execute(ctx, "CREATE TRIGGER t1r2 AFTER INSERT ON t1 FOR EACH ROW BEGIN UPDATE t2 SET d = 0; END", nil); errs.CategoryOf(err) != errs.Unsupported {
		t.Errorf("trigger with a body: %v, want unsupported (bodies never run, so they are refused)", err)
	}
	if _, err := e.Execute(ctx, "CREATE TRIGGER t1r3 AFTER INSERT ON nope FOR EACH ROW BEGIN END", nil); errs.CategoryOf(err) != errs.NotFound {
		t.Errorf("trigger on a missing table: %v, want not found", err)
	}
	run(t, e, "UPDATE t1 SET b = 1 WHERE a = 1")
	run(t, e, "DROP TRIGGER t1r1")
	if _, err := e.Execute(ctx, "DROP TRIGGER t1r1", nil); errs.CategoryOf(err) != errs.NotFound {
		t.Errorf("drop of a dropped trigger: %v, want not found", err)
	}
	run(t, e, "DROP TRIGGER IF EXISTS t1r1")
	run(t, e, "CREATE TRIGGER t1r4 BEFORE DELETE ON t1 FOR EACH ROW BEGIN END")
	run(t, e, "DROP TABLE t1")
	if _, err := e.Execute(ctx, "DROP TRIGGER t1r4", nil); errs.CategoryOf(err) != errs.NotFound {
		t.Errorf("a dropped table's triggers go with it: %v", err)
	}
}
