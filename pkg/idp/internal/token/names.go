package token

import (
	"errors"
	"math"
)

// Member names given twice. RFC 7519 §4 lets a JWT parser reject
// duplicate claim names or keep the last; RFC 7493 (I-JSON) §2.3 forbids
// them outright. Keeping one of two values would let a token say two
// things, read differently by whichever reader (a claim rule, a claim
// header, encoding/json in ClaimAt, an upstream) picks the other, so a
// name twice in any object of a header or payload makes the token
// invalid: scanValue refuses it while it validates the JSON, the one pass
// every token already takes, so no claim path read later (known at
// configuration time or not) can meet one.

// DuplicateError is a member name given twice in one object. It wraps
// ErrInvalid; the decoders turn it into an *Error whose reason says where.
type DuplicateError struct {
	Name string
	// Nested is false for a name of the object a decoder was given (a
	// claim, a header parameter), true for one of an object inside it.
	Nested bool
	// In is the member of the object a decoder was given that holds a
	// nested name (the claim it is in), when known.
	In string
}

func (e *DuplicateError) Error() string { return "idp: invalid token: a name twice" }
func (e *DuplicateError) Unwrap() error { return ErrInvalid }

// duplicateReason is the client-safe reason of err when it is a
// DuplicateError: "duplicate <what> <name>" for a name of the top object,
// "duplicate name <name> inside <what> <in>" for a nested one, a name left
// out unless it is short printable ASCII without quotes or backslashes (it
// goes into WWW-Authenticate's error_description).
func duplicateReason(err error, what string) (string, bool) {
	if err == nil {
		return "", false // before errors.As, whose target would escape
	}
	var de *DuplicateError
	if !errors.As(err, &de) {
		return "", false
	}
	name := ""
	if safeName(de.Name) {
		name = " " + de.Name
	}
	if !de.Nested {
		return "duplicate " + what + name, true
	}
	if safeName(de.In) {
		return "duplicate name" + name + " inside " + what + " " + de.In, true
	}
	return "duplicate name" + name + " inside a " + what, true
}

// safeName reports whether name may appear in a client-safe reason.
func safeName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// nameSet holds the member names of one object while scanObject scans it.
// The names of an ordinary object (at most nameSpans of them, none
// escaped) are kept as offsets into the JSON text, behind a 64-bit filter
// of their hashes, so that checking costs no allocation and, for most
// names, one bit test; an object with more names or an escaped one (rare,
// or hostile) moves to a map of the decoded names, so the check stays
// linear whatever the object.
type nameSet struct {
	filter uint64
	n      int
	spans  [nameSpans]nameSpan
	big    map[string]struct{}
}

// nameSpan is a name's text in the JSON, quotes excluded, and its hash.
type nameSpan struct {
	start, end int32
	hash       uint8
}

const nameSpans = 32

// add records the name whose JSON string token is b[start:end] (quotes
// included; escaped says it holds an escape) and refuses a name seen
// before. The common case (a new, plain name whose hash is new in the
// object) is kept small enough to be inlined into scanObject.
func (s *nameSet) add(b []byte, start, end int, escaped bool, depth int) error {
	if s.big != nil || escaped || s.n == nameSpans || end > math.MaxInt32 {
		return s.addToMap(b, start, end, escaped, depth)
	}
	h := nameHash(b[start+1 : end-1])
	if s.filter&(1<<h) != 0 {
		return s.addColliding(b, start, end, h, depth)
	}
	s.filter |= 1 << h
	s.spans[s.n] = nameSpan{start: int32(start + 1), end: int32(end - 1), hash: h}
	s.n++
	return nil
}

// addColliding is add for a plain name whose hash an earlier name of the
// object has: the names are compared.
func (s *nameSet) addColliding(b []byte, start, end int, h uint8, depth int) error {
	name := b[start+1 : end-1]
	for _, sp := range s.spans[:s.n] {
		if sp.hash == h && string(b[sp.start:sp.end]) == string(name) {
			return &DuplicateError{Name: string(name), Nested: depth > 0}
		}
	}
	s.spans[s.n] = nameSpan{start: int32(start + 1), end: int32(end - 1), hash: h}
	s.n++
	return nil
}

// addToMap is add for an object with an escaped name or more than
// nameSpans names: the names go to a map, decoded.
func (s *nameSet) addToMap(b []byte, start, end int, escaped bool, depth int) error {
	if s.big == nil {
		s.big = make(map[string]struct{}, 2*nameSpans)
		for _, sp := range s.spans[:s.n] {
			s.big[string(b[sp.start:sp.end])] = struct{}{}
		}
	}
	name, err := stringValue(nil, b[start:end], escaped)
	if err != nil {
		return err
	}
	if _, seen := s.big[name]; seen {
		return &DuplicateError{Name: name, Nested: depth > 0}
	}
	s.big[name] = struct{}{}
	return nil
}

// nameHash is a 6-bit hash of a name's length and first, middle and last
// bytes (Fibonacci hashing): names of one object rarely agree on all
// four.
func nameHash(name []byte) uint8 {
	h := uint64(len(name))
	if len(name) > 0 {
		h = h<<24 | uint64(name[0])<<16 | uint64(name[len(name)/2])<<8 | uint64(name[len(name)-1])
	}
	return uint8((h * 0x9E3779B97F4A7C15) >> 58)
}
