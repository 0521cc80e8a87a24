package token

import (
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// A small JSON scanner for the JOSE header and the claims of a token. It
// exists for what encoding/json (v1) does not give: member names matched
// exactly (RFC 7519 §4 makes claim names case-sensitive; encoding/json
// would read "EXP" into exp), duplicate names detected, and a payload
// decoded once, without reflection, into exactly the claims the verifier
// and the guards read.

var errJSON = errors.New("malformed JSON")

// errTwice is findMember's error for a member name given twice.
var errTwice = errors.New("a name twice")

// maxJSONDepth bounds nesting in a token; real claims nest two levels.
const maxJSONDepth = 32

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainByte marks the bytes a JSON string holds as they are: printable
// ASCII other than '"' and '\\'.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanString returns the end (index after the closing quote) of the JSON
// string starting at b[i] == '"', and whether it holds an escape.
func scanString(b []byte, i int) (end int, escaped bool, err error) {
	i++
	for i < len(b) {
		for i < len(b) && plainByte[b[i]] {
			i++ // the common case, one table look-up per byte
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			if i+1 >= len(b) {
				return 0, false, errJSON
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return 0, false, errJSON
				}
				for _, h := range b[i+2 : i+6] {
					if !isHexDigit(h) {
						return 0, false, errJSON
					}
				}
				i += 6
			default:
				return 0, false, errJSON
			}
		case c < 0x20:
			return 0, false, errJSON
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return 0, false, errJSON
			}
			i += size
		}
	}
	return 0, false, errJSON
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// stringValue decodes the JSON string token s (with its quotes), through
// the Interner when in is not nil and s holds no escape.
func stringValue(in *Interner, s []byte, escaped bool) (string, error) {
	if !escaped {
		return in.Bytes(s[1 : len(s)-1]), nil
	}
	var v string
	if err := json.Unmarshal(s, &v); err != nil {
		return "", errJSON
	}
	return v, nil
}

// scanValue returns the end of the JSON value starting at b[i]. With
// names, a member name twice in an object is a *DuplicateError; without,
// the value is only delimited (the callers that cross JSON validated
// before, or that validate in full later).
func scanValue(b []byte, i, depth int, names bool) (int, error) {
	if i >= len(b) {
		return 0, errJSON
	}
	switch c := b[i]; {
	case c == '"':
		end, _, err := scanString(b, i)
		return end, err
	case c == '{':
		if depth >= maxJSONDepth {
			return 0, errJSON
		}
		return scanObject(b, i, depth, names)
	case c == '[':
		if depth >= maxJSONDepth {
			return 0, errJSON
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, nil
		}
		for {
			end, err := scanValue(b, i, depth+1, names)
			if err != nil {
				return 0, err
			}
			i = skipSpace(b, end)
			if i >= len(b) {
				return 0, errJSON
			}
			if b[i] == ']' {
				return i + 1, nil
			}
			if b[i] != ',' {
				return 0, errJSON
			}
			i = skipSpace(b, i+1)
		}
	case c == 't':
		return scanLiteral(b, i, "true")
	case c == 'f':
		return scanLiteral(b, i, "false")
	case c == 'n':
		return scanLiteral(b, i, "null")
	default:
		return scanNumber(b, i)
	}
}

// scanObject returns the end of the JSON object starting at b[i] == '{'
// (at nesting depth depth), with names refusing a member name given twice
// with a *DuplicateError (see names.go).
func scanObject(b []byte, i, depth int, names bool) (int, error) {
	var set *nameSet
	if names {
		set = &nameSet{}
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, errJSON
		}
		nameAt := i
		end, escaped, err := scanString(b, i)
		if err != nil {
			return 0, err
		}
		if set != nil {
			if err := set.add(b, i, end, escaped, depth); err != nil {
				return 0, err
			}
		}
		nameEnd := end
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return 0, errJSON
		}
		end, err = scanValue(b, skipSpace(b, i+1), depth+1, names)
		if err != nil {
			if de, ok := err.(*DuplicateError); ok && depth == 0 && de.In == "" {
				de.In, _ = stringValue(nil, b[nameAt:nameEnd], escaped) // the claim it is in
			}
			return 0, err
		}
		i = skipSpace(b, end)
		if i >= len(b) {
			return 0, errJSON
		}
		if b[i] == '}' {
			return i + 1, nil
		}
		if b[i] != ',' {
			return 0, errJSON
		}
		i = skipSpace(b, i+1)
	}
}

func scanLiteral(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, errJSON
	}
	return i + len(lit), nil
}

// scanNumber returns the end of the JSON number at b[i] (RFC 8259 grammar).
func scanNumber(b []byte, i int) (int, error) {
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if digits() == 0 {
		return 0, errJSON
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return 0, errJSON
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return 0, errJSON
		}
	}
	if i == start {
		return 0, errJSON
	}
	return i, nil
}
