package flightsql

import (
	"context"
	"fmt"

	"google.golang.org/grpc"

	"github.com/cachedb/cachedb/internal/rpcerr"
	"github.com/cachedb/cachedb/internal/safe"
)

// recoveredError turns a recovered panic value into an Internal error and logs the stack, so a
// bug in one request is reported to its client instead of killing the server.
func recoveredError(where string, v any) error {
	return safe.Recovered(where, v)
}

// unaryInterceptor recovers panics and maps errors (rpcerr.ToStatus) for unary calls (GetFlightInfo, GetSchema).
func unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if v := recover(); v != nil {
			resp, err = nil, recoveredError(info.FullMethod, v)
		}
		err = rpcerr.ToStatus(err)
	}()
	return handler(ctx, req)
}

// streamInterceptor recovers panics and maps errors (rpcerr.ToStatus) for streaming calls (DoGet, DoPut,
// DoAction).
func streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = recoveredError(info.FullMethod, v)
		}
		err = rpcerr.ToStatus(err)
	}()
	return handler(srv, ss)
}

// wrapf adds context to an error while keeping its category.
func wrapf(err error, format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, err)...)
}
