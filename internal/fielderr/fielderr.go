// Package fielderr is the configuration error of pkg/proxy and pkg/idp: a
// problem of one field of an options struct, named by its Go field path
// ("Routes[2].Methods", "Upstream.URL", "Session.CookieDomain"), with a
// reason that names the fields it mentions by their Go paths too. A
// program that reads the options from a file of its own (idp-proxy's
// YAML) renders the reason with its own names (Error.ReasonNaming), so
// that the libraries never spell a file's keys.
package fielderr

import (
	"errors"
	"fmt"
	"strings"
)

// Error is a problem of the field Field. Match it with errors.As.
type Error struct {
	// Field is the Go path of the field at fault, from the options
	// struct the function was given: "Routes[2].CORS.AllowedOrigins[0]",
	// a map entry as "Headers.Claims[X-Tenant]".
	Field string
	// Also are the Go paths of the other fields the problem concerns.
	Also []string
	// Missing reports that the field is required and not set.
	Missing bool
	// Reason says what is wrong, naming fields by their Go paths.
	Reason string

	prefix string // of Error(): "proxy: ", "idp: invalid config: "
	format string
	args   []any
	cause  error // the Reason as an error, for the %w causes it wraps
	is     error // a sentinel the error also matches, or nil
}

// Ref is an argument of New's format: a field named by its Go path, which
// ReasonNaming renders with the caller's names.
type Ref struct {
	Path string
	// Last names only the path's last element ("AllowedOrigins" for
	// "Routes[0].CORS.AllowedOrigins"), where the message has named the
	// rest already.
	Last bool
}

// F returns a Ref to the field at the Go path fmt.Sprintf(format, args...).
func F(format string, args ...any) Ref { return Ref{Path: fmt.Sprintf(format, args...)} }

// L returns a Ref naming only the last element of the path.
func L(format string, args ...any) Ref { return Ref{Path: fmt.Sprintf(format, args...), Last: true} }

// New returns the problem of field (a Go path), whose reason is format
// formatted with args (fmt.Errorf's verbs, %w included); the Ref
// arguments name fields. prefix starts Error(); is, when not nil, is a
// sentinel errors.Is also matches.
func New(prefix string, is error, missing bool, field string, also []string, format string, args ...any) *Error {
	e := &Error{Field: field, Also: also, Missing: missing, prefix: prefix, format: format, args: args, is: is}
	e.cause = fmt.Errorf(format, e.render(goName)...)
	e.Reason = e.cause.Error()
	return e
}

func (e *Error) Error() string { return e.prefix + e.Reason }

// Unwrap returns the cause the reason wraps (%w), or nil. It is not a
// list, so that walking a tree of joined errors stops at an Error.
func (e *Error) Unwrap() error { return errors.Unwrap(e.cause) }

// Is matches the sentinel New was given.
func (e *Error) Is(target error) bool { return e.is != nil && target == e.is }

// ReasonNaming returns the reason with every field it mentions named by
// name(its Go path) instead; a path name returns "" for keeps its Go
// path.
func (e *Error) ReasonNaming(name func(path string) string) string {
	return fmt.Errorf(e.format, e.render(name)...).Error()
}

// render returns the arguments with each Ref replaced by its name.
func (e *Error) render(name func(string) string) []any {
	out := make([]any, len(e.args))
	for i, a := range e.args {
		r, ok := a.(Ref)
		if !ok {
			out[i] = a
			continue
		}
		n := name(r.Path)
		if n == "" {
			n = r.Path
		}
		if r.Last {
			n = LastElement(n)
		}
		out[i] = n
	}
	return out
}

func goName(path string) string { return path }

// LastElement returns the last dot-separated element of a path, outside
// brackets: "AllowedOrigins" of "Routes[0].CORS.AllowedOrigins",
// "Claims[x.y]" of "Headers.Claims[x.y]".
func LastElement(path string) string {
	depth := 0
	for i := len(path) - 1; i >= 0; i-- {
		switch path[i] {
		case ']':
			depth++
		case '[':
			depth--
		case '.':
			if depth == 0 {
				return path[i+1:]
			}
		}
	}
	return path
}

// Elements splits a Go path into its elements, a bracketed index kept
// with its name: "Routes[2].CORS" is ["Routes[2]", "CORS"].
func Elements(path string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(path); i++ {
		switch path[i] {
		case '[':
			depth++
		case ']':
			depth--
		case '.':
			if depth == 0 {
				out = append(out, path[start:i])
				start = i + 1
			}
		}
	}
	return append(out, path[start:])
}

// SplitIndex splits an element into its name and its bracketed index
// ("Routes[2]" is "Routes", "2", true).
func SplitIndex(elem string) (name, index string, ok bool) {
	i := strings.IndexByte(elem, '[')
	if i < 0 || !strings.HasSuffix(elem, "]") {
		return elem, "", false
	}
	return elem[:i], elem[i+1 : len(elem)-1], true
}

// String returns the Go path, or its last element.
func (r Ref) String() string {
	if r.Last {
		return LastElement(r.Path)
	}
	return r.Path
}
