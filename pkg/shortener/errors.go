package shortener

import "errors"

// Sentinel errors of the package and of every Store. Match them with
// errors.Is: stores and the Service wrap them with context.
var (
	// ErrNotFound means that no link has the requested code.
	ErrNotFound = errors.New("shortener: link not found")
	// ErrDuplicate means that the code of a new link is already taken; the
	// stored link is left untouched.
	ErrDuplicate = errors.New("shortener: short code already taken")
	// ErrInvalidURL means that a URL breaks the input rules; the error is
	// an *InvalidURLError that carries the reason.
	ErrInvalidURL = errors.New("shortener: invalid URL")
	// ErrClosed is returned by a Store that has been closed.
	ErrClosed = errors.New("shortener: store closed")
	// ErrCodeSpaceExhausted means that no free code could be found after
	// every retry, including longer codes. It indicates a broken random
	// source or an almost full code space.
	ErrCodeSpaceExhausted = errors.New("shortener: no free short code found")
	// ErrGone means that a link exists but no longer redirects: it has
	// expired or used up its visits (HTTP 410).
	ErrGone = errors.New("shortener: link expired or used up")
	// ErrConflict means that a custom short code asked for is taken
	// (HTTP 409). Errors matching it also match ErrDuplicate.
	ErrConflict = errors.New("shortener: short code already in use")
	// ErrInvalidInput means that a field of a request breaks the input
	// rules; the error is an *InputError that names the field.
	ErrInvalidInput = errors.New("shortener: invalid input")
	// ErrNoIdentity means that an operation needs the caller's identity
	// and the request carries none (HTTP 401).
	ErrNoIdentity = errors.New("shortener: no identity")
	// ErrOverLimit means that an edit would set a link's max_visits below
	// the visits it has already served (HTTP 409); nothing is changed.
	ErrOverLimit = errors.New("shortener: the link has already served more visits than the new limit")
)

// InputError explains which field of a request was refused and why. It
// matches ErrInvalidInput with errors.Is.
type InputError struct {
	// Field is the JSON member or query parameter, e.g. "short_code".
	Field string
	// Reason is a short, user-facing explanation.
	Reason string
}

// Error implements error.
func (e *InputError) Error() string {
	return "shortener: invalid " + e.Field + ": " + e.Reason
}

// Is reports whether target is ErrInvalidInput.
func (e *InputError) Is(target error) bool { return target == ErrInvalidInput }

// ErrCodeTaken is another name for ErrDuplicate.
var ErrCodeTaken = ErrDuplicate

// InvalidURLError explains why a URL was rejected. It matches ErrInvalidURL
// with errors.Is.
type InvalidURLError struct {
	// Reason is a short, user-facing explanation, e.g.
	// "scheme must be http or https".
	Reason string
}

// Error implements error.
func (e *InvalidURLError) Error() string { return "shortener: invalid URL: " + e.Reason }

// Is reports whether target is ErrInvalidURL.
func (e *InvalidURLError) Is(target error) bool { return target == ErrInvalidURL }
