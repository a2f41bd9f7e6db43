package flightsql

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/status"

	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/auth"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/metrics"
)

// DoPutCommandStatementIngest stores the batches a client sends in a memory table (ADBC bulk
// ingest: adbc_ingest, pandas DataFrame.to_sql, polars write_database), or, when the target's db
// schema is "datasets", in a dataset held by the data nodes (engine.IngestMakesDataset), and
// returns the rows stored. The modes are ADBC's: create (TABLE_NOT_EXIST_OPTION_CREATE, TABLE_EXISTS_OPTION_FAIL),
// append (FAIL, APPEND), replace (CREATE, REPLACE) and create_append (CREATE, APPEND). The ingest
// holds one of the connection's statement slots while it runs, is bounded by the statement
// timeout, and is all or nothing (engine.Ingest). Each batch is one gRPC message, so it must fit
// in Options.MaxRecvBytes. Temporary tables, transactions and backend options are refused.
func (s *Server) DoPutCommandStatementIngest(ctx context.Context, cmd fsql.StatementIngest, rdr flight.MessageReader) (_ int64, err error) {
	defer endStatement(metrics.KindIngest, time.Now(), &err)
	if err := noTransaction(cmd.GetTransactionId()); err != nil {
		return 0, err
	}
	if err := s.authorizeSomewhere(ctx, auth.Writer, "bulk ingest"); err != nil {
		return 0, err
	}
	req, err := ingestRequest(cmd)
	if err != nil {
		return 0, err
	}
	if s.eng.IngestMakesDataset(req) {
		// Making datasets (and so the data nodes' memory) is the admin's, as a load is.
		if err := s.authorizeOn(ctx, auth.Admin, "bulk ingest into", s.eng.TableTarget(req.Table)); err != nil {
			return 0, err
		}
	} else {
		target, err := s.eng.IngestTarget(req)
		if err != nil {
			return 0, err
		}
		if err := s.authorizeOn(ctx, auth.Writer, "change", target); err != nil {
			return 0, err
		}
	}
	release, err := s.slots.acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer release()
	ctx, done := s.statementContext(ctx)
	defer done()
	return s.eng.Ingest(ctx, req, &ingestReader{RecordReader: rdr})
}

// ingestRequest reads the target and mode of a bulk ingest.
func ingestRequest(cmd fsql.StatementIngest) (engine.IngestRequest, error) {
	req := engine.IngestRequest{Catalog: cmd.GetCatalog(), Schema: cmd.GetSchema(), Table: cmd.GetTable()}
	if cmd.GetTemporary() {
		return req, errs.Unsupportedf("temporary tables are not supported: ingest into a regular memory table (it lives until DROP TABLE or the server stops)")
	}
	if options := cmd.GetOptions(); len(options) > 0 {
		return req, errs.Invalidf("bulk ingest option %q is not known: cachedb takes no ingest options", slices.Sorted(maps.Keys(options))[0])
	}
	opts := cmd.GetTableDefinitionOptions()
	if opts == nil {
		return req, errs.Invalidf("bulk ingest needs table definition options (what to do when the table exists and when it does not)")
	}
	switch opts.GetIfNotExist() {
	case fsql.TableDefinitionOptionsTableNotExistOptionCreate:
		req.IfMissing = engine.MissingCreates
	case fsql.TableDefinitionOptionsTableNotExistOptionFail:
		req.IfMissing = engine.MissingFails
	default:
		return req, errs.Invalidf("bulk ingest: if_not_exist is %s; it must be CREATE or FAIL", opts.GetIfNotExist())
	}
	switch opts.GetIfExists() {
	case fsql.TableDefinitionOptionsTableExistsOptionFail:
		req.IfExists = engine.ExistingFails
	case fsql.TableDefinitionOptionsTableExistsOptionAppend:
		req.IfExists = engine.ExistingAppends
	case fsql.TableDefinitionOptionsTableExistsOptionReplace:
		req.IfExists = engine.ExistingReplaced
	default:
		return req, errs.Invalidf("bulk ingest: if_exists is %s; it must be FAIL, APPEND or REPLACE", opts.GetIfExists())
	}
	return req, nil
}

// ingestReader reads a client's batches for the engine. arrow-go's IPC reader can panic on a
// malformed message and reports decoding failures as plain errors: both become InvalidInput
// errors here, while failures of the call itself (gRPC statuses: a message over the size
// limit, a cancelled call) keep their codes. (gRPC itself answers the client when a message is
// over the size limit: "grpc: received message larger than max".)
type ingestReader struct {
	array.RecordReader
	err error
}

func (r *ingestReader) Next() (ok bool) {
	if r.err != nil {
		return false
	}
	defer func() {
		if p := recover(); p != nil {
			slog.Debug("malformed ingest batch", "panic", p)
			ok, r.err = false, errs.Invalidf("a batch is malformed (its IPC message cannot be decoded)")
		}
	}()
	return r.RecordReader.Next()
}

func (r *ingestReader) Err() error {
	if r.err != nil {
		return r.err
	}
	err := r.RecordReader.Err()
	var categorized *errs.Error
	if err == nil || errors.As(err, &categorized) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if _, isStatus := status.FromError(err); isStatus {
		return err
	}
	return errs.Invalidf("a batch cannot be decoded: %v", err)
}
