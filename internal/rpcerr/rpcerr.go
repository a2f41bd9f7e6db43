// Package rpcerr is the one place where cachedb's error categories (internal/errs) and gRPC
// status codes meet, in both directions, so that an error keeps its meaning across every hop
// between processes:
//
//   - Servers answer with ToStatus: a category becomes its code (see the table below), a
//     canceled context Canceled, a passed deadline DeadlineExceeded, anything else Internal; the
//     message is the error's own text.
//   - Clients of another cachedb process read every error they receive with FromStatus: the
//     code becomes the category again and the message stays the sender's, so an InvalidInput
//     error on a data node is an InvalidInput error on the head, and ToStatus there sends the
//     same code on to the client, under the same message (plus whatever the head wrapped
//     around it, never a second "rpc error: code = …" prefix).
//   - Retries are decided by Retryable, on categories: only an unavailable peer is worth
//     calling again.
//
// Nothing else in cachedb constructs or inspects gRPC codes (tests aside).
package rpcerr

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cachedb/cachedb/internal/errs"
)

// categoryCodes is the mapping, both ways. errs.Canceled also receives DeadlineExceeded,
// whose sender's context error is kept (see FromStatus).
var categoryCodes = []struct {
	category errs.Category
	code     codes.Code
}{
	{errs.InvalidInput, codes.InvalidArgument},
	{errs.NotFound, codes.NotFound},
	{errs.AlreadyExists, codes.AlreadyExists},
	{errs.Unsupported, codes.Unimplemented},
	{errs.ResourceExhausted, codes.ResourceExhausted},
	{errs.Canceled, codes.Canceled},
	{errs.Unavailable, codes.Unavailable},
	{errs.Unauthenticated, codes.Unauthenticated},
	{errs.PermissionDenied, codes.PermissionDenied},
	{errs.DataLoss, codes.DataLoss},
	{errs.Internal, codes.Internal},
}

func codeOf(c errs.Category) codes.Code {
	for _, m := range categoryCodes {
		if m.category == c {
			return m.code
		}
	}
	return codes.Internal
}

func categoryOf(code codes.Code) (errs.Category, bool) {
	for _, m := range categoryCodes {
		if m.code == code {
			return m.category, true
		}
	}
	return errs.Internal, false
}

// ToStatus is the gRPC status a server answers err with (nil stays nil). The code is Code(err),
// the message Message(err). A bare gRPC status (one arrow-go or the transport made) is
// returned as it is.
func ToStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(interface{ GRPCStatus() *status.Status }); ok && !isRemote(err) {
		if st, _ := status.FromError(err); st != nil && st.Code() != codes.OK {
			return err
		}
	}
	return status.Error(Code(err), Message(err))
}

// Code is the gRPC code of err: its category's, unless it is uncategorized, Internal or
// Canceled and wraps a context error, which gives Canceled or DeadlineExceeded (a deadline is
// reported as such whichever layer wrapped it); an uncategorized gRPC status keeps its code;
// anything else is Internal. nil is OK.
func Code(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	var e *errs.Error
	categorized := errors.As(err, &e)
	if categorized && e.Category != errs.Internal && e.Category != errs.Canceled {
		return codeOf(e.Category)
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case categorized:
		return codeOf(e.Category)
	}
	if st, ok := status.FromError(err); ok {
		return st.Code()
	}
	return codes.Internal
}

// Message is err's text for a client: err.Error() without the "rpc error: code = … desc = "
// that a gRPC status wrapped inside it would add.
func Message(err error) string {
	msg := err.Error()
	var gs interface{ GRPCStatus() *status.Status }
	if errors.As(err, &gs) {
		if st := gs.GRPCStatus(); st != nil {
			msg = strings.Replace(msg, fmt.Sprintf("rpc error: code = %s desc = ", st.Code()), "", 1)
		}
	}
	return msg
}

// FromStatus reads an error a gRPC call returned. A status becomes an error with the status's
// message as its text, the category of its code (errors.As finds an *errs.Error), the context
// error for Canceled and DeadlineExceeded (errors.Is finds it), and the status itself (status.Code
// still works). A call cut because this process closed its connection to the peer (the peer was
// declared lost) is Unavailable: the peer failed, not the request. Codes without a category
// (Unknown, FailedPrecondition, ...) keep their code and have none. An error that is not a status
// (or was read already) is returned unchanged; nil stays nil.
func FromStatus(err error) error {
	if err == nil || isRemote(err) {
		return err
	}
	var gs interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &gs) || gs.GRPCStatus() == nil {
		return err
	}
	st := gs.GRPCStatus()
	// gRPC still returns this error for a call on a connection this process closed; its status
	// (Canceled) alone cannot tell that from a caller's cancellation.
	//lint:ignore SA1019 the only way to tell a closed connection from a canceled call
	if errors.Is(err, grpc.ErrClientConnClosing) {
		st = status.New(codes.Unavailable, "the connection to the peer was closed")
	}
	r := &remoteError{st: st, causes: []error{err}}
	switch st.Code() {
	case codes.DeadlineExceeded:
		r.causes = append(r.causes, &errs.Error{Category: errs.Canceled, Msg: st.Message()}, context.DeadlineExceeded)
	case codes.Canceled:
		r.causes = append(r.causes, &errs.Error{Category: errs.Canceled, Msg: st.Message()}, context.Canceled)
	default:
		if c, ok := categoryOf(st.Code()); ok {
			r.causes = append(r.causes, &errs.Error{Category: c, Msg: st.Message()})
		}
	}
	return r
}

// Retryable reports whether a failed call to another process may succeed when made again, on
// the same or another node: the peer is unavailable (gone, restarting, its connection closed)
// while the caller's own ctx still runs. Everything else (a wrong request, a failure of the
// work itself, Internal or Unknown included, a canceled caller) would fail the same way again.
func Retryable(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() == nil && errs.CategoryOf(FromStatus(err)) == errs.Unavailable
}

// remoteError is an error another process answered with.
type remoteError struct {
	st *status.Status
	// causes are what the call returned, then the category and context error it maps to.
	causes []error
}

func (r *remoteError) Error() string              { return r.st.Message() }
func (r *remoteError) Unwrap() []error            { return r.causes }
func (r *remoteError) GRPCStatus() *status.Status { return r.st }

func isRemote(err error) bool {
	var r *remoteError
	return errors.As(err, &r)
}
