package token

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
)

// EachMember calls fn for every member of the JSON object b (the whole of
// b, surrounding space allowed) with the member's name, decoded (names
// that are not claim names go through in, which may be nil), and its raw
// value. Names are compared by the caller, exactly. b is validated first,
// in full: malformed JSON is errJSON, and a name twice in any object of b
// a *DuplicateError, before fn is called.
func EachMember(in *Interner, b []byte, fn func(name string, value []byte) error) error {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return errJSON
	}
	end, err := scanValue(b, i, 0, true)
	if err != nil {
		return err
	}
	if skipSpace(b, end) != len(b) {
		return errJSON
	}
	return eachValidMember(in, b, fn)
}

// eachMemberOnePass is EachMember in one pass over b: fn gets each member
// (and its bit in claimBits, 0 for a name decode does not read)
// as soon as its value is validated, and the rest of b is validated all
// the same. Malformed JSON and a name twice are the error whatever fn
// returned, as with EachMember; otherwise fn's first error, after which
// fn is not called again. For a fn that only fills in a result its caller
// drops on error (DecodeClaims): EachMember crossed the payload twice, to
// validate and then to call fn, about 8,000 instructions of a cache miss
// (bench/README.md).
func eachMemberOnePass(in *Interner, b []byte, fn func(name string, bit int, value []byte) error) error {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return errJSON
	}
	var set nameSet
	var fnErr error
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		if skipSpace(b, i+1) != len(b) {
			return errJSON
		}
		return nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return errJSON
		}
		nameAt := i
		nameEnd, escaped, err := scanString(b, i)
		if err != nil {
			return err
		}
		if err := set.add(b, nameAt, nameEnd, escaped, 0); err != nil {
			return err
		}
		i = skipSpace(b, nameEnd)
		if i >= len(b) || b[i] != ':' {
			return errJSON
		}
		valAt := skipSpace(b, i+1)
		valEnd, err := scanValue(b, valAt, 1, true)
		if err != nil {
			if de, ok := err.(*DuplicateError); ok && de.In == "" {
				de.In, _ = stringValue(nil, b[nameAt:nameEnd], escaped) // the claim it is in
			}
			return err
		}
		if fnErr == nil {
			name, bit, err := claimName(in, b[nameAt:nameEnd], escaped)
			if err == nil {
				err = fn(name, bit, b[valAt:valEnd])
			}
			fnErr = err
		}
		i = skipSpace(b, valEnd)
		if i >= len(b) {
			return errJSON
		}
		if b[i] == '}' {
			if skipSpace(b, i+1) != len(b) {
				return errJSON
			}
			return fnErr
		}
		if b[i] != ',' {
			return errJSON
		}
		i = skipSpace(b, i+1)
	}
}

// eachValidMember is EachMember for an object b that EachMember (or
// scanValue with names) has validated already, as a value inside a
// validated payload is: it does not validate b again.
func eachValidMember(in *Interner, b []byte, fn func(name string, value []byte) error) error {
	i := skipSpace(b, skipSpace(b, 0)+1)
	if b[i] == '}' {
		return nil
	}
	for {
		nameEnd, escaped, _ := scanString(b, i)
		name, err := memberName(in, b[i:nameEnd], escaped)
		if err != nil {
			return err
		}
		i = skipSpace(b, skipSpace(b, nameEnd)+1) // past ':'
		valEnd, _ := scanValue(b, i, 1, false)
		if err := fn(name, b[i:valEnd]); err != nil {
			return err
		}
		i = skipSpace(b, valEnd)
		if b[i] == '}' {
			return nil
		}
		i = skipSpace(b, i+1) // past ','
	}
}

// memberName decodes a member name without allocating for the names the
// verifier looks up (they are plain ASCII).
func memberName(in *Interner, s []byte, escaped bool) (string, error) {
	name, _, err := claimName(in, s, escaped)
	return name, err
}

// claimName is memberName returning also the name's bit in claimBits (0:
// a name decode does not read), in one look-up for the known names.
func claimName(in *Interner, s []byte, escaped bool) (string, int, error) {
	if !escaped {
		if n, ok := knownNames[string(s[1:len(s)-1])]; ok {
			return n.name, n.bit, nil
		}
	}
	name, err := stringValue(in, s, escaped)
	return name, claimBits[name], err
}

// knownNames interns the member names of the header and of the claims
// read, so that matching them allocates nothing, with their claimBits.
var knownNames = func() map[string]knownName {
	m := map[string]knownName{}
	for _, n := range []string{
		"alg", "kid", "typ", "crit", "cty", "jku", "jwk", "x5u", "x5c", "x5t", "x5t#S256",
		"iss", "sub", "aud", "exp", "nbf", "iat", "jti", "azp", "scope", "scp", "sid", "session_state",
		"realm_access", "resource_access", "roles", "preferred_username", "email", "email_verified",
		"name", "nonce", "at_hash", "c_hash", "groups", "auth_time", "acr", "given_name", "family_name", "cnf",
	} {
		m[n] = knownName{name: n, bit: claimBits[n]}
	}
	return m
}()

type knownName struct {
	name string
	bit  int
}

// FoldedName returns the header or claim name that name matches only
// when letter case is ignored ("EXP" for "exp"), and whether it does: a
// decoder that folds case (encoding/json) would read name as known.
func FoldedName(name string) (known string, folded bool) {
	if _, exact := knownNames[name]; exact {
		return "", false
	}
	for known := range knownNames {
		if strings.EqualFold(name, known) {
			return known, true
		}
	}
	return "", false
}

// String decodes v as a JSON string; ok is false for any other value.
// Strings that recur between tokens go through in (nil: none).
func String(in *Interner, v []byte) (s string, ok bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	escaped := bytes.IndexByte(v, '\\') >= 0
	s, err := stringValue(in, v, escaped)
	return s, err == nil
}

// jsonStrings decodes v as an array of strings, each through in (nil:
// none); ok is false for anything else (including an array holding a
// non-string).
func jsonStrings(in *Interner, v []byte) (out []string, ok bool) {
	if len(v) < 2 || v[0] != '[' {
		return nil, false
	}
	i := skipSpace(v, 1)
	if v[i] == ']' {
		return []string{}, true
	}
	for {
		if v[i] != '"' {
			return nil, false
		}
		end, escaped, err := scanString(v, i)
		if err != nil {
			return nil, false
		}
		s, err := stringValue(in, v[i:end], escaped)
		if err != nil {
			return nil, false
		}
		out = append(out, s)
		i = skipSpace(v, end)
		if v[i] == ']' {
			return out, true
		}
		i = skipSpace(v, i+1)
	}
}

// jsonNumber decodes v as a JSON number; ok is false for any other value
// (a numeric string included: exp, nbf and iat must be numbers). A number
// beyond float64's range (1e400) is still a number: it reads as ±Inf,
// which NumericTime takes as its bound; f is never NaN.
func jsonNumber(v []byte) (f float64, ok bool) {
	if len(v) == 0 || !(v[0] == '-' || '0' <= v[0] && v[0] <= '9') {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, true
}

// findMember returns the raw value of the member name of the JSON object
// b (the whole of b, surrounding space allowed), nil when absent, in one
// pass that allocates nothing for names without escapes; a name given
// twice is errTwice.
func findMember(b []byte, name string) ([]byte, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, errJSON
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		if skipSpace(b, i+1) != len(b) {
			return nil, errJSON
		}
		return nil, nil
	}
	var found []byte
	for {
		if i >= len(b) || b[i] != '"' {
			return nil, errJSON
		}
		nameEnd, escaped, err := scanString(b, i)
		if err != nil {
			return nil, err
		}
		match := false
		if !escaped {
			match = string(b[i+1:nameEnd-1]) == name
		} else {
			n, err := stringValue(nil, b[i:nameEnd], true)
			if err != nil {
				return nil, err
			}
			match = n == name
		}
		i = skipSpace(b, nameEnd)
		if i >= len(b) || b[i] != ':' {
			return nil, errJSON
		}
		i = skipSpace(b, i+1)
		valEnd, err := scanValue(b, i, 1, false)
		if err != nil {
			return nil, err
		}
		if match {
			if found != nil {
				return nil, errTwice
			}
			found = b[i:valEnd]
		}
		i = skipSpace(b, valEnd)
		if i >= len(b) {
			return nil, errJSON
		}
		if b[i] == '}' {
			if skipSpace(b, i+1) != len(b) {
				return nil, errJSON
			}
			return found, nil
		}
		if b[i] != ',' {
			return nil, errJSON
		}
		i = skipSpace(b, i+1)
	}
}
