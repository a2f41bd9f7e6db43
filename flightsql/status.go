package flightsql

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/safe"
)

// statusOf is the one place where errors become gRPC statuses. A categorized error (anywhere in
// the chain) keeps its message and gets its category's code; a context error is Canceled (or
// DeadlineExceeded); an error that already is a gRPC status (from arrow-go's routing or the
// transport) is kept; anything else is Internal. nil stays nil.
func statusOf(err error) error {
	if err == nil {
		return nil
	}
	var categorized *errs.Error
	if errors.As(err, &categorized) {
		return status.Error(codeOf(categorized.Category), err.Error())
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	if st, ok := status.FromError(err); ok {
		return st.Err()
	}
	return status.Error(codes.Internal, err.Error())
}

// codeOf maps an errs category to its gRPC code.
func codeOf(c errs.Category) codes.Code {
	switch c {
	case errs.InvalidInput:
		return codes.InvalidArgument
	case errs.NotFound:
		return codes.NotFound
	case errs.AlreadyExists:
		return codes.AlreadyExists
	case errs.Unsupported:
		return codes.Unimplemented
	case errs.ResourceExhausted:
		return codes.ResourceExhausted
	case errs.Canceled:
		return codes.Canceled
	case errs.Unavailable:
		return codes.Unavailable
	default:
		return codes.Internal
	}
}

// recoveredError turns a recovered panic value into an Internal error and logs the stack, so a
// bug in one request is reported to its client instead of killing the server.
func recoveredError(where string, v any) error {
	return safe.Recovered(where, v)
}

// unaryInterceptor recovers panics and maps errors for unary calls (GetFlightInfo, GetSchema).
func unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if v := recover(); v != nil {
			resp, err = nil, recoveredError(info.FullMethod, v)
		}
		err = statusOf(err)
	}()
	return handler(ctx, req)
}

// streamInterceptor recovers panics and maps errors for streaming calls (DoGet, DoPut,
// DoAction).
func streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = recoveredError(info.FullMethod, v)
		}
		err = statusOf(err)
	}()
	return handler(srv, ss)
}

// wrapf adds context to an error while keeping its category.
func wrapf(err error, format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, err)...)
}
