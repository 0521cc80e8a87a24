package token

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// A name twice in any object of the payload is refused, whatever the
// object's size (past the names kept as offsets, in the map), whatever
// the spelling (escapes), at any depth; names that differ only in case,
// or live in different objects, are not duplicates.
func TestDuplicateNamesAnywhere(t *testing.T) {
	many := func(n int, extra string) string {
		var b strings.Builder
		b.WriteString(`{"sub":"s"`)
		for i := range n {
			fmt.Fprintf(&b, `,"c%d":%d`, i, i)
		}
		return b.String() + extra + "}"
	}
	for payload, reason := range map[string]string{
		`{"tid":"A","tid":"B"}`:              "duplicate claim tid",
		`{"tid":"A","t\u0069d":"B"}`:         "duplicate claim tid",
		`{"t\u0069d":"A","tid":"B"}`:         "duplicate claim tid",
		`{"org":{"id":1,"id":2}}`:            "duplicate name id inside claim org",
		`{"a":[1,{"b":{"c":0,"c":1}}]}`:      "duplicate name c inside claim a",
		`{"a\"b":1,"a\"b":2}`:                "duplicate claim",
		`{"x":{"a\\b":1,"a\\b":2}}`:          "duplicate name inside claim x",
		`{"":1,"":2}`:                        "duplicate claim",
		many(40, `,"c7":7`):                  "duplicate claim c7",
		many(40, `,"c39":1`):                 "duplicate claim c39",
		many(20, `,"c\u0031":1`):             "duplicate claim c1",
		`{"x":` + many(50, `,"c49":0`) + `}`: "duplicate name c49 inside claim x",
		`{"` + strings.Repeat("n", 65) + `":1,"` + strings.Repeat("n", 65) + `":2}`: "duplicate claim",
	} {
		_, err := DecodeClaims(nil, []byte(payload))
		var e *Error
		if !errors.As(err, &e) || e.Reason != reason || !errors.Is(err, ErrInvalid) {
			t.Errorf("%.60s: %v, want %q", payload, err, reason)
		}
	}
	for _, payload := range []string{
		`{"tid":"A","TID":"B","Tid":"C"}`,
		`{"a":{"id":1},"b":{"id":1},"c":[{"id":1},{"id":2}]}`,
		many(40, ""),
		many(20, `,"\u0078":1,"y\n":2`),
		`{"a":{"a":{"a":1}}}`,
	} {
		if _, err := DecodeClaims(nil, []byte(payload)); err != nil {
			t.Errorf("%.60s: %v", payload, err)
		}
	}
}

// A header parameter twice is refused, known or not.
func TestDuplicateHeaderParameter(t *testing.T) {
	for header, reason := range map[string]string{
		`{"alg":"RS256","kid":"a","kid":"b"}`:      "duplicate header parameter kid",
		`{"alg":"RS256","x":1,"x":1}`:              "duplicate header parameter x",
		`{"alg":"RS256","jwk":{"n":1,"n":2}}`:      "duplicate name n inside header parameter jwk",
		`{"alg":"RS256","\u006bid":"a","kid":"b"}`: "duplicate header parameter kid",
	} {
		raw := b64.EncodeToString([]byte(header)) + "." + b64.EncodeToString([]byte(`{}`)) + ".c2ln"
		_, err := ParseJWS(raw)
		var e *Error
		if !errors.As(err, &e) || e.Reason != reason {
			t.Errorf("%s: %v, want %q", header, err, reason)
		}
	}
}

// hasDuplicateName reports whether some object of the JSON text data
// names a member twice, as encoding/json's tokenizer reads it.
func hasDuplicateName(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // 1e700 is a number, not an error
	type frame struct {
		object bool
		names  map[string]bool
		key    bool // the next token of an object is a name
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			if name, ok := tok.(string); ok {
				if top.names[name] {
					return true
				}
				top.names[name] = true
				top.key = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, names: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true // a value ended: a name comes next
		}
	}
}
