package slt

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/internal/errs"
)

// ADBCConn is a Conn over the ADBC Flight SQL driver (native Go API): statements run through
// ExecuteUpdate, queries through ExecuteQuery, exactly as any ADBC client would issue them.
type ADBCConn struct {
	db   adbc.Database
	conn adbc.Connection
}

// DialADBC connects to a Flight SQL server at uri ("grpc://127.0.0.1:32010"). rpcTimeout, when
// positive, is also handed to the driver as its per-call timeout, so a wedged server cannot
// block a call forever even if the caller's context is not honoured somewhere below.
func DialADBC(ctx context.Context, uri string, rpcTimeout time.Duration) (*ADBCConn, error) {
	opts := map[string]string{adbc.OptionKeyURI: uri}
	if rpcTimeout > 0 {
		secs := strconv.FormatFloat(rpcTimeout.Seconds(), 'f', 3, 64)
		opts[flightsql.OptionTimeoutFetch] = secs
		opts[flightsql.OptionTimeoutQuery] = secs
		opts[flightsql.OptionTimeoutUpdate] = secs
	}
	db, err := flightsql.NewDriver(memory.DefaultAllocator).NewDatabase(opts)
	if err != nil {
		return nil, fmt.Errorf("opening ADBC database %s: %w", uri, err)
	}
	conn, err := db.Open(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("connecting to %s: %w", uri, err)
	}
	return &ADBCConn{db: db, conn: conn}, nil
}

// Exec implements Conn.
func (c *ADBCConn) Exec(ctx context.Context, sql string) error {
	stmt, err := c.statement(sql)
	if err != nil {
		return err
	}
	defer stmt.Close()
	_, err = stmt.ExecuteUpdate(ctx)
	return err
}

// Query implements Conn.
func (c *ADBCConn) Query(ctx context.Context, sql string, onBatch func(arrow.RecordBatch) error) error {
	stmt, err := c.statement(sql)
	if err != nil {
		return err
	}
	defer stmt.Close()
	rdr, _, err := stmt.ExecuteQuery(ctx)
	if err != nil {
		return err
	}
	defer rdr.Release()
	sawBatch := false
	for rdr.Next() {
		sawBatch = true
		if err := onBatch(rdr.RecordBatch()); err != nil {
			return err
		}
	}
	if err := rdr.Err(); err != nil {
		return err
	}
	if !sawBatch {
		cols := emptyColumns(rdr.Schema())
		empty := array.NewRecordBatch(rdr.Schema(), cols, 0)
		for _, col := range cols {
			col.Release()
		}
		defer empty.Release()
		return onBatch(empty)
	}
	return nil
}

func emptyColumns(schema *arrow.Schema) []arrow.Array {
	cols := make([]arrow.Array, schema.NumFields())
	for i, f := range schema.Fields() {
		cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, 0)
	}
	return cols
}

func (c *ADBCConn) statement(sql string) (adbc.Statement, error) {
	stmt, err := c.conn.NewStatement()
	if err != nil {
		return nil, errs.Internalf("creating ADBC statement: %v", err)
	}
	if err := stmt.SetSqlQuery(sql); err != nil {
		stmt.Close()
		return nil, errs.Internalf("setting statement SQL: %v", err)
	}
	return stmt, nil
}

// Close implements Conn.
func (c *ADBCConn) Close() error {
	err := c.conn.Close()
	if dbErr := c.db.Close(); err == nil {
		err = dbErr
	}
	return err
}
