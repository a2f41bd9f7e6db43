package slt

import (
	"context"

	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/internal/errs"
)

// Options configure a file run.
type Options struct {
	// Engine is the label that skipif / onlyif lines are matched against ("mysql").
	Engine string
	// QueryTimeout bounds each statement or query (0 = none).
	QueryTimeout time.Duration
	// FileTimeout bounds a whole file, server start included (0 = none).
	FileTimeout time.Duration
}

// Outcome of one record.
type Outcome int

const (
	// Skipped records did not run: a condition excluded them or the file halted before them.
	Skipped Outcome = iota
	// Passed records did what the file expects.
	Passed
	// Failed records did not, or could not run because the file's server died or timed out.
	Failed
)

// Failure describes one failing record for triage.
type Failure struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	SQL      string `json:"sql"`
	Expected string `json:"expected"`
	// Got is the formatted result, when there was one.
	Got string `json:"got,omitempty"`
	// Error is the error the engine returned, or why the record could not run.
	Error string `json:"error,omitempty"`
}

// FileResult is the outcome of one file.
type FileResult struct {
	File    string  `json:"file"`
	OK      int     `json:"ok"`
	Fail    int     `json:"fail"`
	Skip    int     `json:"skip"`
	Seconds float64 `json:"seconds"`
	// Error is a problem with the file as a whole (parse error, server failed to start or
	// crashed, file timeout); the records it affected are counted as failures.
	Error    string    `json:"error,omitempty"`
	Failures []Failure `json:"-"`
}

// RunFile parses and runs one file against a backend started for it, and closes the backend
// at the end. It never returns an error: every problem is recorded in the result as failures,
// so one broken file cannot stop a conformance run. displayName names the file in the result.
func RunFile(ctx context.Context, path, displayName string, start StartBackend, opts Options) (res FileResult) {
	began := time.Now()
	res.File = displayName
	defer func() { res.Seconds = time.Since(began).Seconds() }()

	records, err := ParseFile(path)
	if err != nil {
		res.Error = err.Error()
		res.Fail = 1
		res.Failures = append(res.Failures, Failure{File: displayName, Error: err.Error()})
		return res
	}
	for i := range records {
		records[i].File = displayName
	}
	if opts.FileTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.FileTimeout)
		defer cancel()
	}
	r := &fileRun{opts: opts, records: records, res: &res, labels: map[string]string{}}
	r.run(ctx, start)
	return res
}

type fileRun struct {
	opts      Options
	records   []Record
	res       *FileResult
	backend   Backend
	conn      Conn
	threshold int
	labels    map[string]string // label → hash of the first result with that label
}

func (r *fileRun) run(ctx context.Context, start StartBackend) {
	backend, err := start(ctx)
	if err != nil {
		r.abandon(0, fmt.Sprintf("server did not start: %v", err))
		return
	}
	r.backend = backend
	defer func() {
		if r.conn != nil {
			r.conn.Close()
		}
		if err := backend.Close(); err != nil && r.res.Error == "" {
			r.res.Error = err.Error()
		}
	}()
	for i := range r.records {
		rec := &r.records[i]
		if ctx.Err() != nil {
			r.abandon(i, fmt.Sprintf("file timed out after %s", r.opts.FileTimeout))
			return
		}
		if !rec.AppliesTo(r.opts.Engine) {
			if rec.Counted() {
				r.res.Skip++
			}
			continue
		}
		switch rec.Kind {
		case KindHashThreshold:
			r.threshold = rec.Threshold
			continue
		case KindHalt:
			for j := i + 1; j < len(r.records); j++ {
				if r.records[j].Counted() {
					r.res.Skip++
				}
			}
			return
		}
		failure := r.runRecord(ctx, rec)
		if failure == nil {
			r.res.OK++
			continue
		}
		r.res.Fail++
		r.res.Failures = append(r.res.Failures, *failure)
		if down := backend.Failure(); down != nil {
			r.abandon(i+1, down.Error())
			return
		}
	}
}

// abandon records every counted record from index from on as failed with reason, and notes
// the reason as the file's error.
func (r *fileRun) abandon(from int, reason string) {
	if r.res.Error == "" {
		r.res.Error = reason
	}
	for j := from; j < len(r.records); j++ {
		rec := &r.records[j]
		if !rec.Counted() || !rec.AppliesTo(r.opts.Engine) {
			if rec.Counted() {
				r.res.Skip++
			}
			continue
		}
		r.res.Fail++
		r.res.Failures = append(r.res.Failures, Failure{
			File: rec.File, Line: rec.Line, SQL: rec.SQL, Expected: expectedText(rec), Error: reason,
		})
	}
}

// runRecord runs one statement or query and returns nil when it behaved as expected.
func (r *fileRun) runRecord(ctx context.Context, rec *Record) *Failure {
	fail := func(got, msg string) *Failure {
		return &Failure{File: rec.File, Line: rec.Line, SQL: rec.SQL, Expected: expectedText(rec), Got: got, Error: msg}
	}
	if r.conn == nil {
		conn, err := r.backend.Connect(ctx)
		if err != nil {
			return fail("", fmt.Sprintf("connecting: %v", err))
		}
		r.conn = conn
	}
	if rec.Kind == KindStatement {
		err := r.call(ctx, func(ctx context.Context, c Conn) error { return c.Exec(ctx, rec.SQL) })
		switch {
		case err == nil && rec.ExpectError:
			return fail("", "statement succeeded but an error was expected")
		case err != nil && !rec.ExpectError:
			return fail("", err.Error())
		}
		return nil
	}

	var result Result
	result.Columns = len(rec.Types)
	query := func(ctx context.Context, c Conn) error {
		result.Rows = nil
		return c.Query(ctx, rec.SQL, func(b arrow.RecordBatch) error { return appendRows(&result, b, rec.Types) })
	}
	err := r.call(ctx, query)
	if err != nil && r.conn == nil && ctx.Err() == nil {
		// The call timed out and its connection was abandoned. A query changes nothing, so it is
		// safe to run once more on a fresh connection: a call lost in transport then costs one
		// timeout instead of a failed record.
		if conn, cerr := r.backend.Connect(ctx); cerr == nil {
			r.conn = conn
			err = r.call(ctx, query)
		}
	}
	if err != nil {
		return fail("", err.Error())
	}
	values := result.Values(rec.Sort)
	if msg := Check(rec, result, values); msg != "" {
		return fail(gotText(values), msg)
	}
	if rec.Label != "" {
		hash := HashValues(values)
		if first, seen := r.labels[rec.Label]; seen && first != hash {
			return fail(gotText(values), fmt.Sprintf("result differs from the earlier query labelled %s", rec.Label))
		} else if !seen {
			r.labels[rec.Label] = hash
		}
	}
	return nil
}

// call runs fn on the current connection under the query timeout. If the timeout passes first
// it returns at once; the connection is then abandoned (closed when fn finally returns) and
// the next record opens a new one, so a stuck call cannot wedge the rest of the file.
func (r *fileRun) call(ctx context.Context, fn func(context.Context, Conn) error) error {
	callCtx, cancel := ctx, context.CancelFunc(func() {})
	if r.opts.QueryTimeout > 0 {
		callCtx, cancel = context.WithTimeout(ctx, r.opts.QueryTimeout)
	}
	conn := r.conn
	done := make(chan error, 1)
	go func() {
		defer cancel()
		done <- fn(callCtx, conn)
	}()
	select {
	case err := <-done:
		return err
	case <-callCtx.Done():
	}
	r.conn = nil
	go func() {
		<-done
		conn.Close()
	}()
	if ctx.Err() != nil {
		return fmt.Errorf("file timed out after %s: %w", r.opts.FileTimeout, ctx.Err())
	}
	return errs.Exhaustedf("timed out after %s", r.opts.QueryTimeout)
}

// appendRows formats a batch's rows into result, checking the column count first.
func appendRows(result *Result, b arrow.RecordBatch, types string) error {
	if int(b.NumCols()) != len(types) {
		return errs.Invalidf("query returned %d columns, the test expects %d (%s)", b.NumCols(), len(types), types)
	}
	for row := 0; row < int(b.NumRows()); row++ {
		values := make([]string, len(types))
		for c := range values {
			v, err := FormatValue(b.Column(c), row, types[c])
			if err != nil {
				return fmt.Errorf("column %d (%s): %w", c+1, b.ColumnName(c), err)
			}
			values[c] = v
		}
		result.Rows = append(result.Rows, values)
	}
	return nil
}

// Failure texts list up to this many values before falling back to a hash.
const maxListedValues = 64

func expectedText(rec *Record) string {
	switch {
	case rec.Kind == KindStatement && rec.ExpectError:
		return "an error"
	case rec.Kind == KindStatement:
		return "success"
	case rec.ExpectedHash != nil:
		return fmt.Sprintf("%d values hashing to %s", rec.ExpectedHash.Count, rec.ExpectedHash.MD5)
	default:
		return strings.Join(rec.Expected, "\n")
	}
}

func gotText(values []string) string {
	if len(values) <= maxListedValues {
		return strings.Join(values, "\n")
	}
	return fmt.Sprintf("%s\n... (%s)", strings.Join(values[:maxListedValues], "\n"), Describe(values, 1))
}
