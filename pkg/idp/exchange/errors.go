package exchange

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// ErrUnavailable matches the errors of an identity provider that did not
// answer, answered a 5xx or 429, or answered something unusable.
var ErrUnavailable = errors.New("the identity provider's token endpoint is unavailable")

// UnavailableError is an outage of the token endpoint.
type UnavailableError struct {
	// RetryAfter is the provider's Retry-After when it sent one, else a
	// short default (DefaultRetryAfter).
	RetryAfter time.Duration
	// Err is the cause.
	Err error
}

// DefaultRetryAfter is UnavailableError.RetryAfter when the provider
// sent none.
const DefaultRetryAfter = 5 * time.Second

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("%v: %v", ErrUnavailable, e.Err)
}

// Is matches ErrUnavailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

func (e *UnavailableError) Unwrap() error { return e.Err }

// unavailable wraps err, reading the Retry-After of resp (nil: none).
func unavailable(resp *http.Response, err error) error {
	ra := DefaultRetryAfter
	if resp != nil {
		if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s > 0 && s <= 3600 {
			ra = time.Duration(s) * time.Second
		}
	}
	return &UnavailableError{RetryAfter: ra, Err: err}
}
