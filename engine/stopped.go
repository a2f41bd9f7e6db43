package engine

import (
	"context"
	"errors"

	"github.com/cachedb/cachedb/internal/errs"
)

// stopped is the error of work whose context ended: the cause it was canceled with when that
// is a categorized error or a deadline, else errs.Canceled. It is nil while ctx runs. Long
// steps (planning, statement setup) check it between phases so that a statement whose client
// went away stops there.
func stopped(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	cause := context.Cause(ctx)
	var categorized *errs.Error
	if errors.As(cause, &categorized) || errors.Is(cause, context.DeadlineExceeded) {
		return cause
	}
	return &errs.Error{Category: errs.Canceled, Msg: "the statement was canceled", Err: cause}
}
