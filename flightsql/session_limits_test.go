package flightsql

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"google.golang.org/grpc/codes"

	"github.com/cachedb/cachedb/engine"
)

// sessionOption is a session option's value as the server reports it (GetSessionOptions).
func sessionOption(t *testing.T, cnxn adbc.Connection, name string) int64 {
	t.Helper()
	v, err := cnxn.(adbc.GetSetOptions).GetOptionInt(adbcflight.OptionSessionOptionPrefix + name)
	if err != nil {
		t.Fatalf("session option %s: %v", name, err)
	}
	return v
}

// runSession runs a statement that changes the session (SET, USE) as a query: ADBC's Go
// ExecuteUpdate does not read the headers of its DoPut response, so the session cookie the
// server sets there never reaches the client's cookie jar (ExecuteQuery's GetFlightInfo does).
func runSession(t *testing.T, cnxn adbc.Connection, query string) {
	t.Helper()
	if _, err := tryQuery(testContext(t), cnxn, query); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// trySQL runs a statement for its effect through ADBC.
func trySQL(cnxn adbc.Connection, query string) error {
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return err
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(query); err != nil {
		return err
	}
	_, err = stmt.ExecuteUpdate(context.Background())
	return err
}

// TestSessionLimitsThroughOptionsAndSET: memory_limit and statement_timeout are set through
// Flight SQL session options and through SET, reported by GetSessionOptions, kept across
// statements and USE, bounded by the server's statement timeout, and refused with
// InvalidArgument when they do not read, changing nothing.
func TestSessionLimitsThroughOptionsAndSET(t *testing.T) {
	ts := startServer(t, engine.Config{}, Options{StatementTimeout: time.Minute})
	cnxn := ts.sessionConn(t)
	opts := cnxn.(adbc.GetSetOptions)

	if got := sessionOption(t, cnxn, optionMemoryLimit); got != 0 {
		t.Errorf("memory_limit before any is set = %d, want 0", got)
	}
	if got := sessionOption(t, cnxn, optionStatementTimeout); got != 60000 {
		t.Errorf("statement_timeout before any is set = %d, want the server's 60000 ms", got)
	}

	if err := opts.SetOption(adbcflight.OptionSessionOptionPrefix+optionMemoryLimit, "256MiB"); err != nil {
		t.Fatal(err)
	}
	if err := opts.SetOptionInt(adbcflight.OptionSessionOptionPrefix+optionStatementTimeout, 1500); err != nil {
		t.Fatal(err)
	}
	// Values survive statements.
	if _, rows := adbcQuery(t, cnxn, "SELECT count(*) FROM demo"); len(rows) != 1 {
		t.Fatalf("count: %v", rows)
	}
	if got := sessionOption(t, cnxn, optionMemoryLimit); got != 256<<20 {
		t.Errorf("memory_limit = %d, want %d", got, 256<<20)
	}
	if got := sessionOption(t, cnxn, optionStatementTimeout); got != 1500 {
		t.Errorf("statement_timeout = %d, want 1500", got)
	}
	// The server's timeout is the upper bound.
	if err := opts.SetOption(adbcflight.OptionSessionOptionPrefix+optionStatementTimeout, "2m"); err != nil {
		t.Fatal(err)
	}
	if got := sessionOption(t, cnxn, optionStatementTimeout); got != 60000 {
		t.Errorf("statement_timeout set to 2m under a 1m server timeout = %d, want 60000", got)
	}

	// SET, as MySQL clients write it, changes the same session; USE keeps the limits.
	for _, stmt := range []string{
		"SET max_execution_time = 2500",
		"SET SESSION cachedb_memory_limit = '1GiB'",
		"USE " + ts.eng.Catalog().Name(),
		"SET NAMES utf8mb4", // other variables are accepted and change nothing
	} {
		runSession(t, cnxn, stmt)
	}
	if _, rows := adbcQuery(t, cnxn, "SELECT 1"); len(rows) != 1 {
		t.Fatalf("SELECT 1: %v", rows)
	}
	if got := sessionOption(t, cnxn, optionStatementTimeout); got != 2500 {
		t.Errorf("statement_timeout after SET max_execution_time = 2500: %d", got)
	}
	if got := sessionOption(t, cnxn, optionMemoryLimit); got != 1<<30 {
		t.Errorf("memory_limit after SET cachedb_memory_limit = '1GiB': %d", got)
	}
	// Another connection has its own session.
	if got := sessionOption(t, ts.sessionConn(t), optionMemoryLimit); got != 0 {
		t.Errorf("a second connection's memory_limit = %d, want 0", got)
	}

	// Refused values: InvalidArgument, and the session is unchanged.
	for _, bad := range []func() error{
		func() error { return opts.SetOption(adbcflight.OptionSessionOptionPrefix+optionMemoryLimit, "lots") },
		func() error {
			return opts.SetOption(adbcflight.OptionSessionOptionPrefix+optionStatementTimeout, "soon")
		},
		func() error {
			return opts.SetOptionInt(adbcflight.OptionSessionOptionPrefix+optionStatementTimeout, -5)
		},
		func() error { return trySQL(cnxn, "SET max_execution_time = -5") },
		func() error { return trySQL(cnxn, "SET cachedb_memory_limit = 'lots'") },
		func() error { return trySQL(cnxn, "SET cachedb_memory_limit = 1 + 1") },
	} {
		err := bad()
		var ae adbc.Error
		if !errors.As(err, &ae) || ae.Code != adbc.StatusInvalidArgument {
			t.Errorf("a bad limit: %v, want InvalidArgument", err)
		}
	}
	if err := trySQL(cnxn, "SET GLOBAL max_execution_time = 5"); grpcCode(err) != codes.Unimplemented {
		t.Errorf("SET GLOBAL max_execution_time: %v, want UNIMPLEMENTED", err)
	}
	if got := sessionOption(t, cnxn, optionStatementTimeout); got != 2500 {
		t.Errorf("a refused value changed statement_timeout to %d", got)
	}
	if got := sessionOption(t, cnxn, optionMemoryLimit); got != 1<<30 {
		t.Errorf("a refused value changed memory_limit to %d", got)
	}

	// DEFAULT and erasing clear them.
	runSession(t, cnxn, "SET @@session.max_execution_time = DEFAULT")
	if got := sessionOption(t, cnxn, optionStatementTimeout); got != 60000 {
		t.Errorf("statement_timeout after SET ... = DEFAULT: %d, want the server's", got)
	}
	if err := opts.SetOption(adbcflight.OptionEraseSessionOptionPrefix+optionMemoryLimit, ""); err != nil {
		t.Fatal(err)
	}
	if got := sessionOption(t, cnxn, optionMemoryLimit); got != 0 {
		t.Errorf("memory_limit after erasing it: %d", got)
	}
}

// countTriples is long because of its data: a count over the billion rows of the demo table
// joined with itself twice.
const countTriples = "SELECT count(*) FROM demo a, demo b, demo c WHERE a.label + b.label + c.label >= 0"

// TestSessionStatementTimeoutCancelsLongQuery: a session's statement timeout, set through SET
// max_execution_time or the statement_timeout option, stops a long query with
// DEADLINE_EXCEEDED, while the server (which has no timeout of its own) and other sessions go on.
func TestSessionStatementTimeoutCancelsLongQuery(t *testing.T) {
	ts := startServer(t, engine.Config{}, Options{})
	bySQL := ts.sessionConn(t)
	runSession(t, bySQL, "SET max_execution_time = 200")
	byOption := ts.sessionConn(t)
	if err := byOption.(adbc.GetSetOptions).SetOption(adbcflight.OptionSessionOptionPrefix+optionStatementTimeout, "200ms"); err != nil {
		t.Fatal(err)
	}
	for name, cnxn := range map[string]adbc.Connection{"SET max_execution_time": bySQL, "statement_timeout option": byOption} {
		ctx := testContext(t)
		_, err := tryQuery(ctx, cnxn, countTriples)
		if ctx.Err() != nil {
			t.Fatalf("%s: the test's own deadline stopped the query, not the session's timeout: %v", name, err)
		}
		if grpcCode(err) != codes.DeadlineExceeded {
			t.Errorf("%s: a count over a billion rows under a 200 ms timeout: %v, want DEADLINE_EXCEEDED", name, err)
		}
	}
	other := ts.sessionConn(t)
	if _, rows := adbcQuery(t, other, "SELECT count(*) FROM demo a, demo b"); len(rows) != 1 || rows[0] != "1000000" {
		t.Errorf("another session's join: %v", rows)
	}
}

// TestSessionMemoryLimitFailsOnlyItsQueries: a distributed join whose shuffles hold more than
// its session's memory limit fails with RESOURCE_EXHAUSTED, on a cluster where another session
// runs the same join to its end; nothing stays reserved on any process afterwards.
func TestSessionMemoryLimitFailsOnlyItsQueries(t *testing.T) {
	c := startCancelCluster(t)
	const join = "SELECT count(*) FROM demo.rides a JOIN demo.rides b ON a.ride_id = b.ride_id"
	limited := c.head.sessionConn(t)
	runSession(t, limited, "SET cachedb_memory_limit = '1KiB'")
	free := c.head.sessionConn(t)

	err := retryUnavailable(t, func() error {
		_, err := tryQuery(testContext(t), limited, join)
		return err
	})
	if grpcCode(err) != codes.ResourceExhausted {
		t.Errorf("a shuffle join under a 1 KiB session limit: %v, want RESOURCE_EXHAUSTED", err)
	}
	var count string
	err = retryUnavailable(t, func() (err error) {
		count, err = firstValue(t, free, join)
		return err
	})
	if err != nil || count == "0" {
		t.Fatalf("the same join in a session without a limit: %s, %v", count, err)
	}
	// The finished join leaves its plans on the nodes until their idle timeout; nothing else.
	pollUntil(t, "no process holds reservations or producers", func() bool {
		for _, s := range append([]*testServer{c.head}, c.nodes...) {
			if s.eng.Pool().Stats().Reserved != 0 || s.node.Stages().Producers != 0 {
				return false
			}
		}
		return true
	})
}
