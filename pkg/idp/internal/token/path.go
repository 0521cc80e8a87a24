package token

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Path is a parsed claim path (see ParsePath): the member names from the
// payload's top level down, and whether it names the keys of the object it
// reaches rather than its value.
type Path struct {
	Text  string   // as written
	Names []string // at least one
	Keys  bool     // keys(...): the member names of the object reached
}

// String returns the path as written.
func (p Path) String() string { return p.Text }

// PathError is a claim path that does not parse: Offset is the byte of
// Text where the problem is.
type PathError struct {
	Text   string
	Offset int
	Reason string
}

func (e *PathError) Error() string {
	return fmt.Sprintf("claim path %q: %s (at byte %d)", e.Text, e.Reason, e.Offset)
}

// Bounds of a claim path: real ones are a few names of a few dozen bytes.
const (
	MaxPathBytes = 512
	MaxPathNames = 8
)

// ParsePath parses a claim path:
//
//   - roles, realm_access.roles, resource_access.my-client.roles: member
//     names separated by '.', from the top level down;
//   - https://example.com/roles, urn:zitadel:iam:org:project:roles: a
//     path that contains ':' or '/' and no '[' is one top-level name, dots
//     included (the namespaced claims of Auth0, Zitadel, Okta);
//   - ["a.b"], ["https://example.com/app"].roles, resource_access["my.app"].roles:
//     a JSON string in brackets is one name, whatever it holds;
//   - keys(P): the names of the members of the object at P (Zitadel's
//     roles are the keys of an object).
//
// Names are matched exactly. Space, control characters, '"' and ']' are
// refused outside brackets; an empty name is refused everywhere.
func ParsePath(s string) (Path, error) {
	fail := func(at int, format string, args ...any) (Path, error) {
		return Path{}, &PathError{Text: s, Offset: at, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case s == "":
		return fail(0, "empty")
	case len(s) > MaxPathBytes:
		return fail(MaxPathBytes, "longer than %d bytes", MaxPathBytes)
	case !utf8.ValidString(s):
		return fail(invalidUTF8At(s), "not valid UTF-8")
	}
	p := Path{Text: s}
	body, start := s, 0
	if strings.HasPrefix(s, "keys(") {
		if !strings.HasSuffix(s, ")") {
			return fail(len(s), "keys( without its closing )")
		}
		p.Keys, body, start = true, s[len("keys("):len(s)-1], len("keys(")
		if body == "" {
			return fail(start, "keys() names no claim")
		}
	}
	if !strings.Contains(body, "[") && strings.ContainsAny(body, ":/") {
		for i, r := range body {
			if r < 0x20 || r == 0x7f || r == ' ' {
				return fail(start+i, "space or control character in a name")
			}
		}
		p.Names = []string{body}
		return p, nil
	}
	for i := 0; ; {
		var name string
		if body[i] == '[' {
			if i+1 >= len(body) || body[i+1] != '"' {
				return fail(start+i+1, `want ["name"]: a JSON string in brackets`)
			}
			end, _, err := scanString([]byte(body), i+1)
			if err != nil {
				return fail(start+i+1, `want ["name"]: the JSON string does not end, or holds a bad escape or a control character`)
			}
			if json.Unmarshal([]byte(body[i+1:end]), &name) != nil {
				return fail(start+i+1, "bad JSON string")
			}
			if name == "" {
				return fail(start+i+1, "empty name")
			}
			if end >= len(body) || body[end] != ']' {
				return fail(start+end, `want ] after the name in brackets`)
			}
			i = end + 1
		} else {
			j := i
			for j < len(body) && body[j] != '.' && body[j] != '[' {
				c := body[j]
				if c <= ' ' || c == 0x7f || c == '"' || c == ']' || c == ')' && p.Keys {
					return fail(start+j, "%q in a name (put the name in brackets: [\"...\"])", c)
				}
				j++
			}
			if j == i {
				return fail(start+i, "empty name (two dots, or a dot at an end)")
			}
			name, i = body[i:j], j
		}
		if len(p.Names) == MaxPathNames {
			return fail(start+i, "more than %d names", MaxPathNames)
		}
		p.Names = append(p.Names, name)
		if i == len(body) {
			return p, nil
		}
		switch body[i] {
		case '.':
			i++
			if i == len(body) {
				return fail(start+i, "empty name (two dots, or a dot at an end)")
			}
			if body[i] == '[' {
				return fail(start+i, `no '.' before a name in brackets: write a["b"]`)
			}
		case '[':
		default:
			return fail(start+i, "want '.' or '[' after a name in brackets")
		}
	}
}

// invalidUTF8At returns the offset of s's first invalid UTF-8 sequence.
func invalidUTF8At(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return i
			}
		}
	}
	return len(s)
}
