package token

import (
	"bytes"
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
