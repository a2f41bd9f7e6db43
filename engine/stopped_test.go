package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cachedb/cachedb/internal/errs"
)

// TestCanceledStatementStopsBeforeRunning: a statement whose client went away during planning
// stops at the next check, with errs.Canceled, and runs nothing.
func TestCanceledStatementStopsBeforeRunning(t *testing.T) {
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res, err := e.Execute(ctx, "SELECT count(*) FROM demo", nil); errs.CategoryOf(err) != errs.Canceled {
		if res != nil && res.Reader != nil {
			res.Reader.Release()
		}
		t.Errorf("Execute after the client went away: %v, want errs.Canceled", err)
	}
	if _, err := e.Prepare(ctx, "SELECT count(*) FROM demo"); errs.CategoryOf(err) != errs.Canceled {
		t.Errorf("Prepare after the client went away: %v, want errs.Canceled", err)
	}
	deadline, stop := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer stop()
	if _, err := e.Execute(deadline, "SELECT count(*) FROM demo", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Execute past its deadline: %v, want context.DeadlineExceeded", err)
	}
}
