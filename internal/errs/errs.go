// Package errs defines the small set of error categories that every layer of cachedb uses.
// Errors are created with one of the constructors below and wrapped with %w as they travel up;
// internal/rpcerr maps the category to a gRPC status code and back, in exactly one place.
package errs

import (
	"errors"
	"fmt"
)

// Category is the kind of an error, as a client should understand it.
type Category int

const (
	// Internal is a bug or an unexpected failure in cachedb itself.
	Internal Category = iota
	// InvalidInput is a statement or argument the client must fix (syntax, types, arity).
	InvalidInput
	// NotFound is a table, column, function or object that does not exist.
	NotFound
	// AlreadyExists is an object that a statement tried to create twice.
	AlreadyExists
	// Unsupported is valid SQL that cachedb does not implement.
	Unsupported
	// ResourceExhausted is a memory or capacity limit.
	ResourceExhausted
	// Canceled is work stopped because the caller went away or asked it to stop.
	Canceled
	// Unavailable is a part of the cluster that cannot be reached right now (a data node that
	// was lost, a partition being rebuilt): the same request may succeed when retried.
	Unavailable
	// Unauthenticated is a call that did not prove who makes it: no login or an invalid token
	// from a client, a missing or wrong signature with the cluster secret from a process.
	Unauthenticated
	// PermissionDenied is a call whose caller is known but may not do what it asks (a reader
	// writing, a client's statement sent to a data node).
	PermissionDenied
	// DataLoss is data that is gone for good: rows a client sent into a dataset, held only by
	// a data node that was lost. Retrying does not bring them back.
	DataLoss
)

func (c Category) String() string {
	switch c {
	case InvalidInput:
		return "invalid input"
	case NotFound:
		return "not found"
	case AlreadyExists:
		return "already exists"
	case Unsupported:
		return "unsupported"
	case ResourceExhausted:
		return "resource exhausted"
	case Canceled:
		return "canceled"
	case Unavailable:
		return "unavailable"
	case Unauthenticated:
		return "unauthenticated"
	case PermissionDenied:
		return "permission denied"
	case DataLoss:
		return "data loss"
	default:
		return "internal"
	}
}

// Error is a categorized error. Its message is meant for the client and names what was wrong.
type Error struct {
	Category Category
	Msg      string
	Err      error // optional cause
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

func newf(c Category, format string, args ...any) error {
	return &Error{Category: c, Msg: fmt.Sprintf(format, args...)}
}

// Invalidf reports input the client must fix.
func Invalidf(format string, args ...any) error { return newf(InvalidInput, format, args...) }

// NotFoundf reports a missing object.
func NotFoundf(format string, args ...any) error { return newf(NotFound, format, args...) }

// AlreadyExistsf reports an object created twice.
func AlreadyExistsf(format string, args ...any) error { return newf(AlreadyExists, format, args...) }

// Unsupportedf reports valid SQL or a feature cachedb does not implement.
func Unsupportedf(format string, args ...any) error { return newf(Unsupported, format, args...) }

// Exhaustedf reports a resource limit.
func Exhaustedf(format string, args ...any) error { return newf(ResourceExhausted, format, args...) }

// Unavailablef returns an Unavailable error: retrying later may succeed.
func Unavailablef(format string, args ...any) error { return newf(Unavailable, format, args...) }

// Unauthenticatedf reports a call that did not prove who makes it.
func Unauthenticatedf(format string, args ...any) error {
	return newf(Unauthenticated, format, args...)
}

// Deniedf reports a caller that may not do what it asks.
func Deniedf(format string, args ...any) error { return newf(PermissionDenied, format, args...) }

// DataLossf reports data that is gone for good.
func DataLossf(format string, args ...any) error { return newf(DataLoss, format, args...) }

// Internalf reports a bug.
func Internalf(format string, args ...any) error { return newf(Internal, format, args...) }

// CategoryOf returns the category of the first categorized error in err's chain, Internal when
// there is none.
func CategoryOf(err error) Category {
	var e *Error
	if errors.As(err, &e) {
		return e.Category
	}
	return Internal
}
