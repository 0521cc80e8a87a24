package token

import (
	"bytes"
	"errors"
	"testing"
)

// decodeSegmentRef is decodeSegment as it was: every byte checked against
// the base64url alphabet before the strict decoder runs.
func decodeSegmentRef(src []byte) ([]byte, bool) {
	if len(src) == 0 {
		return nil, false
	}
	for _, c := range src {
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
		if !ok {
			return nil, false
		}
	}
	dst := make([]byte, b64.DecodedLen(len(src)))
	n, err := b64.Decode(dst, src)
	if err != nil {
		return nil, false
	}
	return dst[:n], true
}

// FuzzDecodeSegment: decodeSegment accepts exactly what the alphabet check
// and the strict decoder accept, and decodes it the same.
func FuzzDecodeSegment(f *testing.F) {
	for _, s := range []string{"", "eyJhbGciOiJSUzI1NiJ9", "YQ", "YR", "YQ==", "YQ\n", "Y\rQ", "a+b/", "ab~c", "a.b", "-_-_", "\x00\xff", "YWJj\nZGVm"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		got, ok := decodeSegment(make([]byte, b64.DecodedLen(len(src))), src)
		want, wantOK := decodeSegmentRef(src)
		if ok != wantOK || !bytes.Equal(got, want) {
			t.Fatalf("decodeSegment(%q) = %q, %v; want %q, %v", src, got, ok, want, wantOK)
		}
	})
}

// FuzzEachMemberOnePass: the one-pass walk returns what EachMember
// returns, validation errors first, and calls fn with the same members
// up to fn's first error (stop: the index of the member whose fn fails,
// none when past the end).
func FuzzEachMemberOnePass(f *testing.F) {
	for _, s := range []string{`{}`, ` { } `, `{"a":1}`, `{"a":1,"a":2}`, `{"a":{"b":1,"b":2}}`, `{"a":[{"x":1,"x":1}]}`,
		`{"a":1,}`, `{"a":1} x`, `{"a\u0062":"c","ab":1}`, `{"iss":"x","aud":["a","b"],"realm_access":{"roles":["r"]}}`,
		`{"a":"\ud800"}`, `{"a":1,"b":tru}`, `[1]`, `{"a" 1}`} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(1))
		f.Add([]byte(s), uint8(255))
	}
	f.Fuzz(func(t *testing.T, b []byte, stop uint8) {
		type call struct{ name, value string }
		walk := func(each func(*Interner, []byte, func(string, []byte) error) error) ([]call, error) {
			var calls []call
			err := each(nil, b, func(name string, v []byte) error {
				calls = append(calls, call{name, string(v)})
				if len(calls)-1 == int(stop) {
					return errStop
				}
				return nil
			})
			return calls, err
		}
		wantCalls, wantErr := walk(EachMember)
		gotCalls, gotErr := walk(func(in *Interner, b []byte, fn func(string, []byte) error) error {
			return eachMemberOnePass(in, b, func(name string, bit int, v []byte) error {
				if bit != claimBits[name] {
					t.Fatalf("%q: bit %d for %q, want %d", b, bit, name, claimBits[name])
				}
				return fn(name, v)
			})
		})
		var wd, gd *DuplicateError
		switch {
		case errors.As(wantErr, &wd):
			if !errors.As(gotErr, &gd) || *gd != *wd {
				t.Fatalf("%q: one pass: %v, EachMember: %+v", b, gotErr, wd)
			}
		case gotErr != wantErr:
			t.Fatalf("%q: one pass: %v, EachMember: %v", b, gotErr, wantErr)
		case wantErr == nil || wantErr == errStop:
			if len(gotCalls) != len(wantCalls) {
				t.Fatalf("%q: one pass called fn %d times, EachMember %d", b, len(gotCalls), len(wantCalls))
			}
			for i := range gotCalls {
				if gotCalls[i] != wantCalls[i] {
					t.Fatalf("%q: call %d: %v, want %v", b, i, gotCalls[i], wantCalls[i])
				}
			}
		}
	})
}

var errStop = errors.New("stop")
