package rpcerr

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/safe"
)

// categories lists every errs category: those after Internal (the zero value) until String
// falls back to "internal", so a category added to errs without a code here fails the test.
func categories() []errs.Category {
	all := []errs.Category{errs.Internal}
	for c := errs.Internal + 1; c.String() != errs.Internal.String(); c++ {
		all = append(all, c)
	}
	return all
}

func TestEveryCategoryMapsToItsOwnCodeAndBack(t *testing.T) {
	want := map[errs.Category]codes.Code{
		errs.Internal: codes.Internal, errs.InvalidInput: codes.InvalidArgument, errs.NotFound: codes.NotFound,
		errs.AlreadyExists: codes.AlreadyExists, errs.Unsupported: codes.Unimplemented,
		errs.ResourceExhausted: codes.ResourceExhausted, errs.Canceled: codes.Canceled,
		errs.Unavailable: codes.Unavailable, errs.Unauthenticated: codes.Unauthenticated,
		errs.PermissionDenied: codes.PermissionDenied, errs.DataLoss: codes.DataLoss,
	}
	seen := map[codes.Code]errs.Category{}
	for _, c := range categories() {
		t.Run(c.String(), func(t *testing.T) {
			code, ok := want[c]
			if !ok {
				t.Fatalf("category %q has no expected code in this test", c)
			}
			if other, dup := seen[code]; dup {
				t.Fatalf("categories %q and %q share code %s: the way back is ambiguous", c, other, code)
			}
			seen[code] = c
			sent := ToStatus(&errs.Error{Category: c, Msg: "what went wrong"})
			st, _ := status.FromError(sent)
			if st.Code() != code || st.Message() != "what went wrong" {
				t.Fatalf("server side: %s %q, want %s %q", st.Code(), st.Message(), code, "what went wrong")
			}
			got := FromStatus(sent)
			if errs.CategoryOf(got) != c || got.Error() != "what went wrong" || status.Code(got) != code {
				t.Fatalf("client side: %q (%v, code %s), want category %q with the sender's message", got, errs.CategoryOf(got), status.Code(got), c)
			}
			// The receiver wraps it and answers its own caller: same code, one message.
			again, _ := status.FromError(ToStatus(fmt.Errorf("partition 2 on data node n1: %w", got)))
			if again.Code() != code || again.Message() != "partition 2 on data node n1: what went wrong" {
				t.Fatalf("forwarded: %s %q", again.Code(), again.Message())
			}
		})
	}
}

func TestContextErrorsAndUncategorizedErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		code codes.Code
		msg  string
	}{
		{"canceled", fmt.Errorf("reading: %w", context.Canceled), codes.Canceled, "reading: context canceled"},
		{"deadline", context.DeadlineExceeded, codes.DeadlineExceeded, "context deadline exceeded"},
		{"deadline categorized as canceled", &errs.Error{Category: errs.Canceled, Msg: "query timed out", Err: context.DeadlineExceeded}, codes.DeadlineExceeded, "query timed out: context deadline exceeded"},
		{"cancel wrapped as internal", &errs.Error{Category: errs.Internal, Msg: "scan", Err: context.Canceled}, codes.Canceled, "scan: context canceled"},
		{"category wins over a context error", &errs.Error{Category: errs.Unavailable, Msg: "node gone", Err: context.DeadlineExceeded}, codes.Unavailable, "node gone: context deadline exceeded"},
		{"plain error", errors.New("boom"), codes.Internal, "boom"},
		{"panic", safe.Recovered("WHERE", "index out of range"), codes.Internal, "internal error in WHERE: index out of range"},
		{"bare status kept", status.Error(codes.PermissionDenied, "no"), codes.PermissionDenied, "no"},
		{"wrapped bare status", fmt.Errorf("arrow/flight: %w", status.Error(codes.Unknown, "odd")), codes.Unknown, "arrow/flight: odd"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, ok := status.FromError(ToStatus(tt.err))
			if !ok || st.Code() != tt.code || st.Message() != tt.msg {
				t.Fatalf("ToStatus(%v) = %s %q, want %s %q", tt.err, st.Code(), st.Message(), tt.code, tt.msg)
			}
			if Code(tt.err) != tt.code {
				t.Fatalf("Code = %s, want %s", Code(tt.err), tt.code)
			}
		})
	}
	if ToStatus(nil) != nil || FromStatus(nil) != nil || Code(nil) != codes.OK {
		t.Error("nil is not kept")
	}
}

func TestCancellationAndDeadlineSurviveEveryHop(t *testing.T) {
	for _, tt := range []struct {
		code codes.Code
		ctx  error
	}{{codes.Canceled, context.Canceled}, {codes.DeadlineExceeded, context.DeadlineExceeded}} {
		got := FromStatus(status.Error(tt.code, "stopped on node n2"))
		if !errors.Is(got, tt.ctx) || errs.CategoryOf(got) != errs.Canceled {
			t.Errorf("%s: %v is not a canceled error wrapping %v", tt.code, got, tt.ctx)
		}
		if c := Code(fmt.Errorf("gather: %w", got)); c != tt.code {
			t.Errorf("%s forwarded as %s", tt.code, c)
		}
	}
}

func TestFromStatus(t *testing.T) {
	plain := errors.New("dial: no route")
	if FromStatus(plain) != plain || FromStatus(context.Canceled) != context.Canceled {
		t.Error("an error that is not a status changed")
	}
	inner := fmt.Errorf("arrow/flight: could not create flight reader: %w", status.Error(codes.InvalidArgument, "bad column x"))
	got := FromStatus(inner)
	if got.Error() != "bad column x" || errs.CategoryOf(got) != errs.InvalidInput {
		t.Errorf("wrapped status read as %q (%v)", got, errs.CategoryOf(got))
	}
	if again := FromStatus(got); again != got {
		t.Error("reading a read error again changed it")
	}
	unknown := FromStatus(status.Error(codes.Aborted, "aborted"))
	if errs.CategoryOf(unknown) != errs.Internal || Code(unknown) != codes.Aborted {
		t.Errorf("a code without a category: category %v, code %s; want none and Aborted kept", errs.CategoryOf(unknown), Code(unknown))
	}
	closed := FromStatus(fmt.Errorf("recv: %w", errConnClosing))
	if errs.CategoryOf(closed) != errs.Unavailable || !errors.Is(closed, errConnClosing) {
		t.Errorf("a closed connection read as %v (%v), want Unavailable", closed, errs.CategoryOf(closed))
	}
}

func TestRetryable(t *testing.T) {
	live := context.Background()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"unavailable node", live, status.Error(codes.Unavailable, "connection refused"), true},
		{"unavailable category", live, errs.Unavailablef("partition being rebuilt"), true},
		{"connection closed under a live caller", live, errConnClosing, true},
		{"connection closed after the caller went away", ended, errConnClosing, false},
		{"unavailable after the caller went away", ended, status.Error(codes.Unavailable, "x"), false},
		{"internal", live, status.Error(codes.Internal, "bug"), false},
		{"unknown", live, status.Error(codes.Unknown, "?"), false},
		{"invalid", live, status.Error(codes.InvalidArgument, "bad"), false},
		{"exhausted", live, status.Error(codes.ResourceExhausted, "memory"), false},
		{"remote cancel", live, status.Error(codes.Canceled, "execution canceled"), false},
		{"deadline", live, status.Error(codes.DeadlineExceeded, "late"), false},
		{"plain", live, errors.New("x"), false},
		{"nil", live, nil, false},
	} {
		if got := Retryable(tt.ctx, tt.err); got != tt.want {
			t.Errorf("%s: Retryable = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// errConnClosing is what gRPC returns for a call on a connection this process closed.
//
//lint:ignore SA1019 the error FromStatus and Retryable must recognize
var errConnClosing = grpc.ErrClientConnClosing
