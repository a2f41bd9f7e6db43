package flightsql

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cachedb/cachedb/engine"
)

// TestStatementTimeoutBoundsEveryKindOfStatement: under a statement timeout that has always
// passed by the time a statement runs, a query, an update and a prepared query with
// parameters all fail with DEADLINE_EXCEEDED, and the server goes on serving.
func TestStatementTimeoutBoundsEveryKindOfStatement(t *testing.T) {
	ts := startServer(t, engine.Config{}, Options{StatementTimeout: time.Nanosecond})
	ctx := testContext(t)
	cl := ts.arrowClient(t)
	if _, err := cl.Execute(ctx, "SELECT count(*) FROM demo"); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("query: %v, want DEADLINE_EXCEEDED", err)
	}
	if _, err := cl.ExecuteUpdate(ctx, "CREATE TABLE t (n BIGINT)"); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("update: %v, want DEADLINE_EXCEEDED", err)
	}
	prep, err := cl.Prepare(ctx, "SELECT ? + 1")
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(ctx)
	params := paramBatch(t, []int64{1, 2}, nil)
	prep.SetParameters(params)
	params.Release()
	info, err := prep.Execute(ctx)
	if err == nil {
		rdr, derr := cl.DoGet(ctx, info.Endpoint[0].Ticket)
		if derr == nil {
			for rdr.Next() {
			}
			derr = rdr.Err()
			rdr.Release()
		}
		err = derr
	}
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("prepared query with parameters: %v, want DEADLINE_EXCEEDED", err)
	}
}
