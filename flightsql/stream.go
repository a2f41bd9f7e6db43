package flightsql

import (
	"context"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/safe"
)

// activeCounter counts live result streams.
type activeCounter struct{ n atomic.Int64 }

func (c *activeCounter) load() int64 { return c.n.Load() }

// readerFunc opens the i-th result of a stream (a statement run with one parameter row).
type readerFunc func(ctx context.Context, i int) (array.RecordReader, error)

// streamResults sends the batches of first, then of each later result opened by more(ctx, i)
// for i in [1, count), on the returned channel, split so that no batch exceeds maxBytes. Every
// result must have schema. The goroutine stops as soon as ctx ends (the client went away), and
// releases every reader and every batch it did not hand over; arrow-go's DoGet releases the
// batches it received. The channel is closed when the goroutine ends, after done (when not
// nil) was called: a client that read the stream to its end sees done's effect. rec (when not
// nil) counts what is sent and ends with the stream.
func (s *Server) streamResults(ctx context.Context, rec *statementRecord, schema *arrow.Schema, first array.RecordReader, count int, more readerFunc, done func()) <-chan flight.StreamChunk {
	ch := make(chan flight.StreamChunk)
	s.streams.n.Add(1)
	send := func() error {
		rdr := first
		defer func() {
			if rdr != nil {
				rdr.Release()
			}
		}()
		for i := 0; ; {
			if !rdr.Schema().Equal(schema) {
				return errs.Internalf("result %d has schema %s, the stream promised %s", i+1, rdr.Schema(), schema)
			}
			if !s.sendReader(ctx, rec, ch, rdr) {
				return nil
			}
			rdr.Release()
			rdr = nil
			i++
			if i >= count {
				return nil
			}
			next, err := more(ctx, i)
			if err != nil {
				return err
			}
			rdr = next
		}
	}
	safe.Spawn("result stream", send, func(err error) {
		defer s.streams.n.Add(-1)
		defer close(ch)
		if done != nil {
			defer done()
		}
		if err != nil {
			rec.fail(err)
			sendErr(ctx, ch, err)
		}
		rec.end(ctx.Err())
	})
	return ch
}

// appMetadataReader is a reader whose batches each carry app_metadata (a training read's runs,
// node.epochStream): AppMetadata is the current batch's.
type appMetadataReader interface {
	AppMetadata() []byte
}

// rowsMetadataReader is an appMetadataReader whose app_metadata describes the batch's rows one
// by one (a training read's runs place every row), so that each piece of a batch split under
// the cap needs its own: PieceMetadata is that of the current batch's rows [from, to).
type rowsMetadataReader interface {
	appMetadataReader
	PieceMetadata(from, to int64) []byte
}

// sendReader sends every batch of rdr; it reports false when the stream must stop (ctx ended,
// or an error was sent). A batch's app_metadata (appMetadataReader) goes with the first piece
// it is split into, or, from a rowsMetadataReader, each piece carries its rows' own.
func (s *Server) sendReader(ctx context.Context, rec *statementRecord, ch chan<- flight.StreamChunk, rdr array.RecordReader) bool {
	withMeta, _ := rdr.(appMetadataReader)
	perRow, _ := rdr.(rowsMetadataReader)
	for rdr.Next() {
		pieces := splitBatch(rdr.RecordBatch(), s.opts.MaxBatchBytes)
		var at int64 // the piece's first row in the batch
		for i, p := range pieces {
			rows, bytes := p.NumRows(), recordBytes(p)
			chunk := flight.StreamChunk{Data: p}
			switch {
			case perRow != nil && len(pieces) > 1:
				chunk.AppMetadata = perRow.PieceMetadata(at, at+rows)
			case withMeta != nil && i == 0:
				chunk.AppMetadata = withMeta.AppMetadata()
			}
			at += rows
			select {
			case ch <- chunk:
				rec.sent(rows, bytes)
			case <-ctx.Done():
				for _, rest := range pieces[i:] {
					rest.Release()
				}
				return false
			}
		}
	}
	if err := rdr.Err(); err != nil {
		rec.fail(err)
		sendErr(ctx, ch, err)
		return false
	}
	return ctx.Err() == nil
}

func sendErr(ctx context.Context, ch chan<- flight.StreamChunk, err error) {
	select {
	case ch <- flight.StreamChunk{Err: err}:
	case <-ctx.Done():
	}
}

// emptyStream is a finished stream with no batches.
func emptyStream() <-chan flight.StreamChunk {
	ch := make(chan flight.StreamChunk)
	close(ch)
	return ch
}
