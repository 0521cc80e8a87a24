package dpop

import "testing"

// TestDecodeIntoRefusesNonAlphabet: a part with any byte outside the
// base64url alphabet (CR and LF included, which the decoder would skip)
// is not canonical base64url (RFC 7515 §2, §7.1).
func TestDecodeIntoRefusesNonAlphabet(t *testing.T) {
	for c := 0; c < 256; c++ {
		in := []byte("AAAA" + string(rune(0)) + "AAA")
		in[4] = byte(c)
		buf := make([]byte, 8)
		_, ok := decodeInto(buf, in)
		if ok != b64url[c] {
			t.Errorf("byte %#x: decoded %v, in the alphabet %v", c, ok, b64url[c])
		}
	}
}
