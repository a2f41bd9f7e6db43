package flightsql

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cachedb/cachedb/internal/errs"
)

func TestStatusOfMapsCategoriesToCodes(t *testing.T) {
	tests := []struct {
		name string
		err  error
		code codes.Code
		msg  string
	}{
		{"invalid", errs.Invalidf("syntax error near %q", "FROM"), codes.InvalidArgument, `syntax error near "FROM"`},
		{"not found", errs.NotFoundf("table %q does not exist", "t"), codes.NotFound, `table "t" does not exist`},
		{"exists", errs.AlreadyExistsf("table %q already exists", "t"), codes.AlreadyExists, `table "t" already exists`},
		{"unsupported", errs.Unsupportedf("window functions"), codes.Unimplemented, "window functions"},
		{"exhausted", errs.Exhaustedf("memory limit"), codes.ResourceExhausted, "memory limit"},
		{"canceled category", &errs.Error{Category: errs.Canceled, Msg: "stopped"}, codes.Canceled, "stopped"},
		{"internal", errs.Internalf("bug"), codes.Internal, "bug"},
		{"wrapped", fmt.Errorf("binding: %w", errs.NotFoundf("column x")), codes.NotFound, "binding: column x"},
		{"context canceled", fmt.Errorf("reading: %w", context.Canceled), codes.Canceled, "reading: context canceled"},
		{"deadline", context.DeadlineExceeded, codes.DeadlineExceeded, "context deadline exceeded"},
		{"grpc status kept", status.Error(codes.InvalidArgument, "bad command"), codes.InvalidArgument, "bad command"},
		{"plain error", errors.New("boom"), codes.Internal, "boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, ok := status.FromError(statusOf(tt.err))
			if !ok {
				t.Fatalf("statusOf(%v) is not a gRPC status", tt.err)
			}
			if st.Code() != tt.code || st.Message() != tt.msg {
				t.Errorf("statusOf(%v) = %s %q, want %s %q", tt.err, st.Code(), st.Message(), tt.code, tt.msg)
			}
		})
	}
	if statusOf(nil) != nil {
		t.Error("statusOf(nil) is not nil")
	}
}
