// Package safe runs the server's goroutines so that a panic in one of them fails the statement
// it belongs to instead of ending the process.
//
// A panic that escapes a goroutine ends the whole process, whatever recovers elsewhere: gRPC
// recovers only in the goroutine of the call. Every goroutine the server starts therefore runs
// through Go or Spawn, which turn a panic into an Internal error ("internal error in WHERE:
// VALUE"), log it with its stack through slog, and hand it to whoever consumes the goroutine's
// result, so that consumer sees an error rather than waiting forever.
package safe

import (
	"log/slog"
	"runtime/debug"

	"golang.org/x/sync/errgroup"

	"github.com/cachedb/cachedb/internal/errs"
)

// Recovered turns a value recovered from a panic into an Internal error naming where it
// happened, and logs the value with the stack. Call it in the deferred function that recovered,
// so that the stack logged is the one that panicked.
func Recovered(where string, v any) error {
	slog.Error("recovered panic", "where", where, "panic", v, "stack", string(debug.Stack()))
	return errs.Internalf("internal error in %s: %v", where, v)
}

// Call runs fn in the calling goroutine and returns its error, or the error Recovered makes of a
// panic in fn.
func Call(where string, fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = Recovered(where, v)
		}
	}()
	return fn()
}

// Go runs fn in g like g.Go, except that a panic in fn becomes fn's error: g's context is
// canceled and g.Wait returns it, like any other failure of fn.
func Go(g *errgroup.Group, where string, fn func() error) {
	g.Go(func() error { return Call(where, fn) })
}

// Spawn runs fn in a new goroutine and then finish (when not nil) in the same goroutine with
// fn's error, or with the error Recovered makes of a panic in fn. finish always runs, so it is
// the place for what the goroutine's consumer waits on (recording the error, closing a
// channel). A panic in finish itself is logged and dropped.
func Spawn(where string, fn func() error, finish func(error)) {
	go func() {
		err := Call(where, fn)
		if finish == nil {
			return
		}
		_ = Call(where, func() error {
			finish(err)
			return nil
		})
	}()
}
