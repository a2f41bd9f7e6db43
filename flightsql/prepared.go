package flightsql

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/metrics"
)

// CreatePreparedStatement binds a statement without running it and returns a handle, the
// result schema (queries only), a parameter schema with the inferred type of each ? and whether
// the statement is an update.
func (s *Server) CreatePreparedStatement(ctx context.Context, req fsql.ActionCreatePreparedStatementRequest) (fsql.ActionCreatePreparedStatementResult, error) {
	var res fsql.ActionCreatePreparedStatementResult
	if err := noTransaction(req.GetTransactionId()); err != nil {
		return res, err
	}
	rec := startStatement(metrics.KindQuery)
	query := engine.SessionText(ctx, req.GetQuery())
	prep, err := s.eng.Prepare(ctx, query)
	if err != nil {
		rec.end(err) // a statement that fails to plan fails here; one that plans is counted when it runs
		return res, err
	}
	handle, err := s.prepared.add(clientOf(ctx), &preparedStatement{sql: query, info: prep})
	if err != nil {
		return res, err
	}
	isUpdate := !prep.IsQuery
	res.Handle = handle
	res.ParameterSchema = parameterSchema(prep.ParamTypes)
	res.IsUpdate = &isUpdate
	if prep.IsQuery {
		res.DatasetSchema = prep.Schema
	}
	return res, nil
}

// ClosePreparedStatement forgets a prepared statement. Closing one that is already gone
// (closed or expired) succeeds.
func (s *Server) ClosePreparedStatement(_ context.Context, req fsql.ActionClosePreparedStatementRequest) error {
	s.prepared.remove(req.GetPreparedStatementHandle())
	return nil
}

// DoPutPreparedStatementQuery binds the parameter rows the client sent, replacing any earlier
// binding, and hands back the same handle.
func (s *Server) DoPutPreparedStatementQuery(_ context.Context, cmd fsql.PreparedStatementQuery, rdr flight.MessageReader, _ flight.MetadataWriter) ([]byte, error) {
	ps, err := s.prepared.get(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	rows, err := readParameterRows(rdr, ps.info.NumParams)
	if err == nil {
		err = coerceParameterRows(rows, ps.info.ParamTypes)
	}
	if err != nil {
		return nil, err
	}
	ps.bind(rows)
	return cmd.GetPreparedStatementHandle(), nil
}

// GetFlightInfoPreparedStatement describes the result of running the statement with its bound
// parameters; the query runs at DoGet. A statement that returns no rows runs here, once per
// parameter row, and yields an empty result.
func (s *Server) GetFlightInfoPreparedStatement(ctx context.Context, cmd fsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (_ *flight.FlightInfo, err error) {
	// As GetFlightInfoStatement: a query is counted when its DoGet ends.
	rec := startStatement(metrics.KindQuery)
	defer func() { rec.endOnError(err) }()
	ps, err := s.prepared.get(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	if err := s.authorizePrepared(ctx, ps); err != nil {
		return nil, err
	}
	rows, err := ps.boundRows()
	if err != nil {
		return nil, err
	}
	release, err := s.slots.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	ctx, done := s.statementContext(ctx)
	defer done()
	if !ps.info.IsQuery {
		rec.kind = metrics.KindUpdate
		for _, row := range rows {
			if _, err := s.runUpdate(ctx, ps.sql, row); err != nil {
				return nil, err
			}
		}
		rec.end(nil)
		return s.flightInfo(desc, emptySchema, s.now().Add(s.opts.TicketTTL), emptyTicket{})
	}
	if ps.info.NumParams == 0 {
		// Clients that prepare every statement (the ADBC DB-API cursor) make training reads
		// this way too.
		if opts, ok, err := epochOptions(ctx, ps.sql); err != nil || ok {
			if err != nil {
				return nil, err
			}
			rec.kind = metrics.KindTraining
			return s.epochInfo(ctx, desc, ps.sql, opts)
		}
	}
	if ps.info.NumParams == 0 && s.opts.DataNodes != nil {
		// Without parameters the query is a plain statement: divide it among the data nodes as
		// GetFlightInfoStatement does, pinned to the snapshots current now.
		prep, err := s.eng.Prepare(ctx, ps.sql)
		if err != nil {
			return nil, err
		}
		st := newStage(ps.sql, engine.SessionFrom(ctx), prep.Pins, s.now().Add(s.opts.TicketTTL))
		st.DatasetRows = s.eng.DatasetRows(prep.Pins)
		if info, err := s.dataNodeInfo(ctx, desc, ps.info.Schema, st); info != nil || err != nil {
			if info != nil && onDataNodes(info) {
				rec.end(nil) // the data nodes stream it: each counts its share (kind stage)
			}
			return info, err
		}
	}
	return s.commandInfo(desc, ps.info.Schema), nil
}

// GetSchemaPreparedStatement reports the result schema of a prepared query.
func (s *Server) GetSchemaPreparedStatement(_ context.Context, cmd fsql.PreparedStatementQuery, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	ps, err := s.prepared.get(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	schema := ps.info.Schema
	if !ps.info.IsQuery || schema == nil {
		schema = emptySchema
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(schema, s.opts.Alloc)}, nil
}

// DoGetPreparedStatement runs the prepared query once per bound parameter row and streams the
// results one after the other. Every run must produce the schema of the first.
func (s *Server) DoGetPreparedStatement(ctx context.Context, cmd fsql.PreparedStatementQuery) (_ *arrow.Schema, _ <-chan flight.StreamChunk, err error) {
	rec := startStatement(metrics.KindQuery)
	defer func() { rec.endOnError(err) }()
	ps, err := s.prepared.get(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, nil, err
	}
	if err := s.authorizePrepared(ctx, ps); err != nil {
		return nil, nil, err
	}
	rows, err := ps.boundRows()
	if err != nil {
		return nil, nil, err
	}
	release, err := s.slots.acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	streaming := false
	defer func() {
		if !streaming { // an error or a panic before the stream took the slot over
			release()
		}
	}()
	// The runs share one statement context, which ends with the last run's reader (or with the
	// call); the stream itself sends on the call's context, so that a timeout is reported.
	stmtCtx, done := s.statementContext(ctx)
	open := func(_ context.Context, i int) (array.RecordReader, error) {
		res, err := s.eng.Execute(stmtCtx, ps.sql, rows[i])
		if err != nil {
			return nil, err
		}
		rdr, err := queryReader(res)
		if err != nil || i < len(rows)-1 {
			return rdr, err
		}
		return endWith(rdr, done), nil
	}
	first, err := open(ctx, 0)
	if err != nil {
		done()
		return nil, nil, err
	}
	streaming = true
	return first.Schema(), s.streamResults(ctx, rec, first.Schema(), first, len(rows), open, release), nil
}

// DoPutPreparedStatementUpdate runs the statement once per parameter row sent with the call
// (or, when none were sent, with the rows bound earlier) and returns the total rows changed.
func (s *Server) DoPutPreparedStatementUpdate(ctx context.Context, cmd fsql.PreparedStatementUpdate, rdr flight.MessageReader) (_ int64, err error) {
	defer endStatement(metrics.KindUpdate, time.Now(), &err)
	ps, err := s.prepared.get(cmd.GetPreparedStatementHandle())
	if err != nil {
		return 0, err
	}
	if err := s.authorizePrepared(ctx, ps); err != nil {
		return 0, err
	}
	release, err := s.slots.acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer release()
	rows, err := readParameterRows(rdr, ps.info.NumParams)
	if err == nil {
		err = coerceParameterRows(rows, ps.info.ParamTypes)
	}
	if err != nil {
		return 0, err
	}
	if len(rows) == 0 {
		if rows, err = ps.boundRows(); err != nil {
			return 0, err
		}
	}
	var total int64
	for i, row := range rows {
		n, err := s.runUpdate(ctx, ps.sql, row)
		if err != nil {
			if len(rows) > 1 {
				return 0, wrapf(err, "parameter row %d of %d (earlier rows were applied)", i+1, len(rows))
			}
			return 0, err
		}
		if n > 0 {
			total += n
		}
	}
	return total, nil
}
