package token

import "errors"

// ErrInvalid is the sentinel every error of this package wraps; pkg/idp
// exports it as ErrInvalidToken.
var ErrInvalid = errors.New("idp: invalid token")

// Error is an invalid-token error with a reason that is safe to show to
// the client (it never contains the token or claim values).
type Error struct {
	Reason string // short, client-safe
	Err    error  // underlying cause, for logs
}

func (e *Error) Error() string {
	if e.Err != nil {
		return "idp: invalid token: " + e.Reason + ": " + e.Err.Error()
	}
	return "idp: invalid token: " + e.Reason
}

func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalid, e.Err}
	}
	return []error{ErrInvalid}
}

// Invalid returns an *Error with the client-safe reason and the cause
// (which may be nil).
func Invalid(reason string, cause error) error { return &Error{Reason: reason, Err: cause} }
