package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/cachedb/cachedb/internal/errs"
)

// notExist is an errs.NotFound error that also satisfies errors.Is(err, fs.ErrNotExist), which
// iceberg-go tests for when probing whether a file exists.
type notExist struct{ e *errs.Error }

func (n *notExist) Error() string        { return n.e.Error() }
func (n *notExist) Unwrap() error        { return n.e }
func (n *notExist) Is(target error) bool { return target == fs.ErrNotExist }

// redactedError shows its cause with the given secrets replaced; errors.Is and errors.As still
// see the cause.
type redactedError struct {
	err     error
	secrets []string
}

func (r *redactedError) Error() string { return redact(r.err.Error(), r.secrets) }
func (r *redactedError) Unwrap() error { return r.err }

func redact(s string, secrets []string) string {
	for _, v := range secrets {
		if v != "" {
			s = strings.ReplaceAll(s, v, redacted)
		}
	}
	return s
}

// errorCodes that mean the credentials (or the policy behind them) do not allow the request.
var accessDeniedCodes = map[string]bool{
	"AccessDenied":          true,
	"Forbidden":             true,
	"InvalidAccessKeyId":    true,
	"SignatureDoesNotMatch": true,
	"InvalidToken":          true,
	"InvalidTokenId":        true, // MinIO
	"ExpiredToken":          true,
	"TokenRefreshRequired":  true,
	"AllAccessDisabled":     true,
	"AccountProblem":        true,
	"InvalidSecurity":       true,
}

// mapError turns an SDK error for an operation ("reading", "writing", "removing") on uri into a
// categorized error whose message names uri (and, for connection failures, the endpoint) and
// never contains a secret of cfg.
func mapError(cfg Config, op, uri string, err error) error {
	if err == nil {
		return nil
	}
	secrets := cfg.secrets()
	cause := error(&redactedError{err: err, secrets: secrets})

	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &errs.Error{Category: errs.Canceled, Msg: fmt.Sprintf("%s %s canceled", op, uri), Err: cause}
	}

	attempts := ""
	var maxErr *retry.MaxAttemptsError
	if errors.As(err, &maxErr) {
		attempts = fmt.Sprintf(" after %d attempts", maxErr.Attempt)
	}

	code, status := "", 0
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		code = apiErr.ErrorCode()
	}
	var respErr *awshttp.ResponseError
	if errors.As(err, &respErr) {
		status = respErr.HTTPStatusCode()
	}

	switch {
	case code == "NoSuchBucket":
		bucket, _, _ := splitURI(uri)
		return &notExist{&errs.Error{Category: errs.NotFound,
			Msg: fmt.Sprintf("bucket %q not found %s %s", bucket, op, uri)}}
	case code == "NoSuchKey" || code == "NotFound" || status == http.StatusNotFound:
		return &notExist{&errs.Error{Category: errs.NotFound, Msg: fmt.Sprintf("object %s not found", uri)}}
	case accessDeniedCodes[code] || status == http.StatusForbidden:
		// Only the error code is shown: S3's messages for signature failures may echo the
		// signed request, which can contain the session token.
		if code == "" {
			code = http.StatusText(status)
		}
		return errs.Invalidf("access denied %s %s (check credentials): %s", op, uri, code)
	case code == "SlowDown" || status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests:
		return &errs.Error{Category: errs.ResourceExhausted,
			Msg: fmt.Sprintf("S3 throttled %s %s%s", op, uri, attempts), Err: cause}
	}

	var sendErr *smithyhttp.RequestSendError
	if errors.As(err, &sendErr) {
		endpoint := cfg.Endpoint
		var uerr *url.Error
		if errors.As(err, &uerr) {
			if u, perr := url.Parse(uerr.URL); perr == nil {
				endpoint = u.Scheme + "://" + u.Host
			}
		}
		if endpoint == "" {
			endpoint = "AWS S3"
		}
		reason := error(sendErr)
		var opErr *net.OpError
		if errors.As(err, &opErr) {
			reason = opErr
		}
		return &errs.Error{Category: errs.InvalidInput,
			Msg: fmt.Sprintf("cannot reach S3 endpoint %s %s %s%s: %s", endpoint, op, uri, attempts,
				redact(reason.Error(), secrets))}
	}
	return &errs.Error{Category: errs.Internal, Msg: fmt.Sprintf("S3 request failed %s %s%s", op, uri, attempts), Err: cause}
}
